"""Test support, kept apart from the toolchain (as numpy.testing is): `model_zoo` builds ONNX
models with onnx.helper for tests, benchmarks and examples; `conformance` runs the ONNX backend
node tests (`make conformance`). No module outside tests, benchmarks, examples and the fuzzer
imports this package (test/python/test_layering.py keeps it so)."""
