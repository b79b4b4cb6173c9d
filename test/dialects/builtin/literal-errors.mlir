// RUN: aitc-opt %s --split-input-file --parsing-diagnostics | filecheck %s
// Literals a type cannot hold are parse errors at the literal (xDSL 0.74 raised exceptions or,
// for a negative hex float, silently read a huge negative number).

// A hex float literal is a bit pattern: it has no sign.
%0 = graph.constant dense<[-0x7fc00000]> : tensor<1xf32>
// CHECK: hexadecimal float literal should not have a leading minus

// -----

// A bit pattern wider than the type.
%0 = graph.constant dense<0x1ffff> : tensor<2xf16>
// CHECK: hexadecimal float constant out of range for type f16

// -----

// The same rules for scalars.
%0 = arith.constant -0x7fc00000 : f32
// CHECK: hexadecimal float literal should not have a leading minus

// -----

// An integer outside its type's range, in an attribute and in a dense literal.
%0 = arith.constant 1248 : si8
// CHECK: integer value 1248 is out of range for type si8

// -----

%0 = graph.constant dense<[1, 300]> : tensor<2xi8>
// CHECK: integer value 300 is out of range for type i8

// -----

// A float too large for f16.
%0 = graph.constant dense<7.0e4> : tensor<1xf16>
// CHECK: float value 70000.0 is out of range for type f16
