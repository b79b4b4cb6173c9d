"""Model conversion: ONNX -> graph dialect."""
