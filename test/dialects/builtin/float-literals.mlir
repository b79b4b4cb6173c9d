// RUN: aitc-opt %s | aitc-opt | filecheck %s
// RUN: aitc-opt %s --print-op-generic | aitc-opt | filecheck %s

// Float literals keep every bit through print -> parse (aitc/xdsl_fixes.py): a hex literal of a
// float element type is its bit pattern, as in upstream MLIR, for every float width.

// inf, NaN (quiet, signalling, with payloads) and -0.0 in f32, and values whose short decimal
// form does not round-trip (printed as hex by xDSL, read back as bits).
func.func @f32_specials() -> (tensor<8xf32>, tensor<2xf32>) {
  %a = graph.constant dense<[0xff800000, 0x7f800000, 0x7fc00000, 0xffc12345, 0x7f800001, -0.0, 1.0e-45, 0x4CEB79A3]> : tensor<8xf32>
  %b = graph.constant dense<[0.0, -0.0]> : tensor<2xf32>
  func.return %a, %b : tensor<8xf32>, tensor<2xf32>
}
// CHECK-LABEL: func.func @f32_specials(
// CHECK-NEXT:    %a = graph.constant dense<[0xff800000, 0x7f800000, 0x7fc00000, 0xffc12345, 0x7f800001, -0.000000e+00, 1.401300e-45, 0x4CEB79A3]> : tensor<8xf32>
// CHECK-NEXT:    %b = graph.constant dense<[0.000000e+00, -0.000000e+00]> : tensor<2xf32>

// Splats: -inf and a NaN payload, and a splat of -0.0 that is not a splat of 0.0.
func.func @splats() -> (tensor<2x2xf32>, tensor<3xf32>, tensor<f32>) {
  %a = graph.constant dense<0xff800000> : tensor<2x2xf32>
  %b = graph.constant dense<0x7fc00001> : tensor<3xf32>
  %c = graph.constant dense<-0.0> : tensor<f32>
  func.return %a, %b, %c : tensor<2x2xf32>, tensor<3xf32>, tensor<f32>
}
// CHECK-LABEL: func.func @splats(
// CHECK-NEXT:    %a = graph.constant dense<0xff800000> : tensor<2x2xf32>
// CHECK-NEXT:    %b = graph.constant dense<0x7fc00001> : tensor<3xf32>
// CHECK-NEXT:    %c = graph.constant dense<-0.000000e+00> : tensor<f32>

// f16, bf16 and f64: infinities, NaN payloads, denormals, the largest finite values.
func.func @other_widths() -> (tensor<5xf16>, tensor<4xbf16>, tensor<5xf64>) {
  %h = graph.constant dense<[0xfc00, 0x7c01, 0xfe01, 0x0001, 0x7bff]> : tensor<5xf16>
  %b = graph.constant dense<[0xff80, 0x7f81, 0x8000, 0x7f7f]> : tensor<4xbf16>
  %d = graph.constant dense<[0xfff0000000000000, 0x7ff0000000000001, 0x0000000000000001, 0x7fefffffffffffff, 0x4345EE2A2EB5A5C4]> : tensor<5xf64>
  func.return %h, %b, %d : tensor<5xf16>, tensor<4xbf16>, tensor<5xf64>
}
// CHECK-LABEL: func.func @other_widths(
// CHECK-NEXT:    %h = graph.constant dense<[0xfc00, 0x7c01, 0xfe01, 5.960460e-08, 6.550400e+04]> : tensor<5xf16>
// CHECK-NEXT:    %b = graph.constant dense<[0xff80, 0x7f81, -0.000000e+00, 3.389530e+38]> : tensor<4xbf16>
// CHECK-NEXT:    %d = graph.constant dense<[0xfff0000000000000, 0x7ff0000000000001, 4.940660e-324, 1.7976931348623157e+308, 0x4345EE2A2EB5A5C4]> : tensor<5xf64>

// Scalar float attributes and float arrays take hex bit patterns too.
func.func @scalars() -> () attributes {inf = 0xfff0000000000000 : f64, nan = 0x7ff8000000000002 : f64, arr = array<f32: 0xff800000, -0.0, 0x7fc00001>} {
  func.return
}
// CHECK-LABEL: func.func @scalars(
// CHECK-SAME:    inf = 0xfff0000000000000 : f64
// CHECK-SAME:    nan = 0x7ff8000000000002 : f64
// CHECK-SAME:    arr = array<f32: 0xff800000, -0.000000e+00, 0x7fc00001>
