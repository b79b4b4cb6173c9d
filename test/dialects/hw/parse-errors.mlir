// RUN: aitc-opt %s --split-input-file --parsing-diagnostics | filecheck %s
// The assembly syntax refuses bad field values while parsing, with the position of the problem.

// An enum value outside the field's choices.
hw.program @p target "tiny" {
  hw.core 0 {
    hw.vunary sram[0x0] <- sram[0x40], op=cube, cols=4
    hw.end
  }
}
// CHECK: 'op' must be one of copy, neg, abs, exp, log, tanh, erf, sqrt, rsqrt, recip, relu, sigmoid, gelu, got 'cube'

// -----

// A memory space that does not exist.
hw.program @p target "tiny" {
  hw.core 0 {
    hw.dma_in vram[0x0] <- dram[0x0], row_bytes=4
    hw.end
  }
}
// CHECK: parse-errors.mlir:[[# @LINE - 4]]:19
// CHECK: unknown memory space 'vram' (expected dram, sram, acc)

// -----

// A keyword the instruction does not have.
hw.program @p target "tiny" {
  hw.core 0 {
    hw.dma_in sram[0x0] <- dram[0x0], row_bytes=4, color=3
    hw.end
  }
}
// CHECK: hw.dma_in has no field 'color' (fields: rows, row_bytes, src_stride, dst_stride, queue)

// -----

// Address steps multiply loop indices i0, i1, ...
hw.program @p target "tiny" {
  hw.core 0 {
    hw.dma_in sram[0x0 + 0x4*j] <- dram[0x0], row_bytes=4
    hw.end
  }
}
// CHECK: expected a loop index like i0, got 'j'
