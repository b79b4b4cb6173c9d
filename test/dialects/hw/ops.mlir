// RUN: aitc-opt %s --split-input-file | aitc-opt --split-input-file | filecheck %s
// RUN: aitc-opt %s --split-input-file --print-op-generic | aitc-opt --split-input-file | filecheck %s
// RUN: aitc-opt %s --split-input-file --print-op-generic | filecheck %s --check-prefix=GENERIC

// Data layout: input/output descriptors and inline weights, each at a DRAM address.
hw.program @layout target "tiny" {
  hw.tensor "x" input dram[0x0] : tensor<4x4xf32>
  hw.tensor "ids" input dram[0x40] : tensor<4xi32>
  hw.const dram[0x100] = dense<[1.0, 2.0]> : tensor<2xf32>
  hw.const dram[0x200] = dense<3> : tensor<4xi8>
  hw.tensor "y" output dram[0x300] : tensor<4x4xf32>
  hw.core 0 {
    hw.end
  }
}
// CHECK-LABEL: hw.program @layout target "tiny" {
// CHECK-NEXT:    hw.tensor "x" input dram[0x0] : tensor<4x4xf32>
// CHECK-NEXT:    hw.tensor "ids" input dram[0x40] : tensor<4xi32>
// CHECK-NEXT:    hw.const dram[0x100] = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    hw.const dram[0x200] = dense<3> : tensor<4xi8>
// CHECK-NEXT:    hw.tensor "y" output dram[0x300] : tensor<4x4xf32>
// CHECK-NEXT:    hw.core 0 {
// CHECK-NEXT:      hw.end
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// GENERIC:       "hw.program"() ({
// GENERIC:         "hw.tensor"() {sym = "x", kind = "input", addr = #hw.addr<dram[0x0]>, type = tensor<4x4xf32>} : () -> ()
// GENERIC:         "hw.const"() {addr = #hw.addr<dram[0x100]>, value = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>} : () -> ()
// GENERIC:         "hw.core"() ({
// GENERIC-NEXT:      "hw.end"() : () -> ()
// GENERIC-NEXT:    }) {id = 0 : i64} : () -> ()
// GENERIC:       }) {sym_name = "layout", target = "tiny"} : () -> ()

// -----

// DMA engine: every instruction with every field set away from its default.
hw.program @dma target "tiny" {
  hw.core 0 {
    hw.dma_in sram[0x0] <- dram[0x0], rows=4, row_bytes=16, src_stride=32, dst_stride=64, queue=0
    hw.dma_out dram[0x100] <- acc[0x0], rows=2, row_bytes=8, src_stride=16, dst_stride=32, queue=1
    hw.dma_local acc[0x40] <- sram[0x80], rows=2, row_bytes=16
    hw.dma_peer sram[0x1000] <- sram[0x0], peer=1, rows=4, row_bytes=16
    hw.dma_gather sram[0x400] <- dram[0x200], sram[0x800], rows=4, row_bytes=8, src_stride=8, table_rows=2
    hw.end
  }
  hw.core 1 {
    hw.end
  }
}
// CHECK-LABEL: hw.program @dma target "tiny" {
// CHECK:       hw.dma_in sram[0x0] <- dram[0x0], rows=4, row_bytes=16, src_stride=32, dst_stride=64, queue=0
// CHECK-NEXT:  hw.dma_out dram[0x100] <- acc[0x0], rows=2, row_bytes=8, src_stride=16, dst_stride=32, queue=1
// CHECK-NEXT:  hw.dma_local acc[0x40] <- sram[0x80], rows=2, row_bytes=16
// CHECK-NEXT:  hw.dma_peer sram[0x1000] <- sram[0x0], peer=1, rows=4, row_bytes=16
// CHECK-NEXT:  hw.dma_gather sram[0x400] <- dram[0x200], sram[0x800], rows=4, row_bytes=8, src_stride=8, table_rows=2
// CHECK-NEXT:  hw.end
// GENERIC:       "hw.program"() ({
// GENERIC:         "hw.dma_in"() {dst = #hw.addr<sram[0x0]>, src = #hw.addr<dram[0x0]>, rows = 4 : i64, row_bytes = 16 : i64, src_stride = 32 : i64, dst_stride = 64 : i64, queue = 0 : i64} : () -> ()
// GENERIC:         "hw.dma_peer"() {dst = #hw.addr<sram[0x1000]>, src = #hw.addr<sram[0x0]>, peer = 1 : i64, rows = 4 : i64, row_bytes = 16 : i64} : () -> ()

// -----

// Matrix and vector engines: enums, floats (incl. exponent form) and flags.
hw.program @compute target "tiny" {
  hw.core 0 {
    hw.matmul acc[0x0] <- sram[0x0], sram[0x40], m=4, k=4, n=4, dtype=i8, lhs_stride=8, rhs_stride=8, acc_stride=8, accumulate, transpose_rhs
    hw.matmul acc[0x100] <- sram[0x0], sram[0x40], m=8, k=4, n=2
    hw.vbinary sram[0x200] <- sram[0x0], sram[0x40], op=cmp_ge, rows=4, cols=4, dtype=i32, broadcast=row, dst_stride=8, src_stride=8, b_stride=8
    hw.vimm sram[0x200] <- acc[0x0], op=mul, imm=-1.5e-07, rows=4, cols=4
    hw.vunary sram[0x200] <- sram[0x0], op=gelu, rows=2, cols=4
    hw.vselect sram[0x300] <- sram[0x0], sram[0x40], sram[0x80], rows=4, cols=4
    hw.vreduce sram[0x200] <- sram[0x0], op=max, rows=4, cols=4
    hw.vcast sram[0x200] <- acc[0x0], rows=4, cols=4, from=i32, to=i8, scale=0.0125
    hw.vcast sram[0x200] <- sram[0x0], rows=4, cols=4, from=i8, to=f32, scale=0.5, zero=3
    hw.acc_read sram[0x200] <- acc[0x0], rows=4, cols=4, activation=gelu_tanh
    hw.end
  }
}
// CHECK-LABEL: hw.program @compute target "tiny" {
// CHECK:       hw.matmul acc[0x0] <- sram[0x0], sram[0x40], m=4, k=4, n=4, dtype=i8, lhs_stride=8, rhs_stride=8, acc_stride=8, accumulate, transpose_rhs
// CHECK-NEXT:  hw.matmul acc[0x100] <- sram[0x0], sram[0x40], m=8, k=4, n=2
// CHECK-NEXT:  hw.vbinary sram[0x200] <- sram[0x0], sram[0x40], op=cmp_ge, rows=4, cols=4, dtype=i32, broadcast=row, dst_stride=8, src_stride=8, b_stride=8
// CHECK-NEXT:  hw.vimm sram[0x200] <- acc[0x0], op=mul, imm=-1.5e-07, rows=4, cols=4
// CHECK-NEXT:  hw.vunary sram[0x200] <- sram[0x0], op=gelu, rows=2, cols=4
// CHECK-NEXT:  hw.vselect sram[0x300] <- sram[0x0], sram[0x40], sram[0x80], rows=4, cols=4
// CHECK-NEXT:  hw.vreduce sram[0x200] <- sram[0x0], op=max, rows=4, cols=4
// CHECK-NEXT:  hw.vcast sram[0x200] <- acc[0x0], rows=4, cols=4, from=i32, to=i8, scale=0.0125
// CHECK-NEXT:  hw.vcast sram[0x200] <- sram[0x0], rows=4, cols=4, from=i8, to=f32, scale=0.5, zero=3
// CHECK-NEXT:  hw.acc_read sram[0x200] <- acc[0x0], rows=4, cols=4, activation=gelu_tanh
// GENERIC:       "hw.program"() ({
// GENERIC:         "hw.matmul"() {acc = #hw.addr<acc[0x0]>, lhs = #hw.addr<sram[0x0]>, rhs = #hw.addr<sram[0x40]>, m = 4 : i64, k = 4 : i64, n = 4 : i64, dtype = "i8", lhs_stride = 8 : i64, rhs_stride = 8 : i64, acc_stride = 8 : i64, accumulate, transpose_rhs} : () -> ()
// GENERIC:         "hw.vimm"() {dst = #hw.addr<sram[0x200]>, a = #hw.addr<acc[0x0]>, op = "mul", imm = -1.500000e-07 : f64, rows = 4 : i64, cols = 4 : i64} : () -> ()

// -----

// Float fields that Python's repr cannot spell as an MLIR literal (1e+20, inf, nan) print in
// MLIR's exponent form or as the f64 bit pattern, and parse back to the same bits.
hw.program @special_floats target "tiny" {
  hw.core 0 {
    hw.vimm sram[0x200] <- acc[0x0], op=mul, imm=1.000000e+20, rows=4, cols=4
    hw.vimm sram[0x200] <- acc[0x0], op=max, imm=0xfff0000000000000, rows=4, cols=4
    hw.vimm sram[0x200] <- acc[0x0], op=add, imm=0x7ff8000000000001, rows=4, cols=4
    hw.end
  }
}
// CHECK-LABEL: hw.program @special_floats
// CHECK:       imm=1.000000e+20,
// CHECK-NEXT:  imm=0xfff0000000000000,
// CHECK-NEXT:  imm=0x7ff8000000000001,
// GENERIC:       imm = 1.000000e+20 : f64
// GENERIC:       imm = 0xfff0000000000000 : f64
// GENERIC:       imm = 0x7ff8000000000001 : f64

// -----

// Fields equal to their default are omitted from the custom form (flags: absent = false).
hw.program @defaults target "tiny" {
  hw.core 0 {
    hw.dma_in sram[0x0] <- dram[0x0], rows=1, row_bytes=16, src_stride=0, queue=-1
    hw.vbinary sram[0x200] <- sram[0x0], sram[0x40], op=add, cols=4, dtype=f32, broadcast=none
    hw.sem_wait 0, engine=dma_in, count=1
    hw.end
  }
}
// CHECK-LABEL: hw.program @defaults
// CHECK:       hw.dma_in sram[0x0] <- dram[0x0], row_bytes=16{{$}}
// CHECK-NEXT:  hw.vbinary sram[0x200] <- sram[0x0], sram[0x40], op=add, cols=4{{$}}
// CHECK-NEXT:  hw.sem_wait 0, engine=dma_in{{$}}
// Fields at their default are dropped when the instruction is built, so the generic form (and
// the binary) of a parsed program equals that of the same program built by the compiler.
// GENERIC:       "hw.dma_in"() {dst = #hw.addr<sram[0x0]>, src = #hw.addr<dram[0x0]>, row_bytes = 16 : i64} : () -> ()

// -----

// Control: semaphores (positional id), barriers, and engine aliases.
hw.program @control target "tiny" {
  hw.core 0 {
    hw.sem_signal 3, engine=matrix
    hw.sem_signal 15, engine=dma_out, count=4
    hw.sem_wait 3, engine=vector, count=2
    hw.barrier engine=dma1
    hw.end
  }
}
// CHECK-LABEL: hw.program @control
// CHECK:       hw.sem_signal 3, engine=matrix
// CHECK-NEXT:  hw.sem_signal 15, engine=dma_out, count=4
// CHECK-NEXT:  hw.sem_wait 3, engine=vector, count=2
// CHECK-NEXT:  hw.barrier engine=dma1
// GENERIC:       "hw.program"() ({
// GENERIC:         "hw.sem_signal"() {sem = 3 : i64, engine = "matrix"} : () -> ()

// -----

// A signal to another core's semaphore (peer=), after a peer copy into that core; peer=-1 is
// this core, the default, so it is not printed (nor stored).
hw.program @peer_signal target "tiny" {
  hw.core 0 {
    hw.dma_peer sram[0x100] <- sram[0x0], peer=1, row_bytes=64
    hw.sem_signal 2, engine=dma1, count=2, peer=1
    hw.sem_signal 4, engine=dma1, peer=-1
    hw.sem_wait 4, engine=vector
    hw.end
  }
  hw.core 1 {
    hw.sem_wait 2, engine=vector, count=2
    hw.end
  }
}
// CHECK-LABEL: hw.program @peer_signal
// CHECK:       hw.sem_signal 2, engine=dma1, count=2, peer=1{{$}}
// CHECK-NEXT:  hw.sem_signal 4, engine=dma1{{$}}
// GENERIC:       "hw.program"() ({
// GENERIC:         "hw.sem_signal"() {sem = 2 : i64, engine = "dma1", count = 2 : i64, peer = 1 : i64} : () -> ()
// GENERIC-NEXT:    "hw.sem_signal"() {sem = 4 : i64, engine = "dma1"} : () -> ()

// -----

// Hardware loops: nested, steps on several depths, negative steps, a depth with no step.
hw.program @loops target "tiny" {
  hw.core 0 {
    hw.loop 4 {
      hw.dma_in sram[0x0 + 0x100*i0] <- dram[0x1000 + 0x400*i0], rows=4, row_bytes=64
      hw.loop 2 {
        hw.dma_in sram[0x800 + 0x10*i0 - 0x4*i1] <- dram[0x0 + 0x10*i1], row_bytes=16
        hw.vimm sram[0x2000 + 0x40*i1] <- sram[0x1000 - 0x10*i0 + 0x0*i1], op=max, imm=0.0, cols=4
        hw.loop 3 {
          hw.dma_out dram[0x8000 + 0x8*i2] <- sram[0x0 + 0x8*i2], row_bytes=8
        }
      }
    }
    hw.end
  }
}
// CHECK-LABEL: hw.program @loops
// CHECK:         hw.loop 4 {
// CHECK-NEXT:      hw.dma_in sram[0x0 + 0x100*i0] <- dram[0x1000 + 0x400*i0], rows=4, row_bytes=64
// CHECK-NEXT:      hw.loop 2 {
// CHECK-NEXT:        hw.dma_in sram[0x800 + 0x10*i0 - 0x4*i1] <- dram[0x0 + 0x10*i1], row_bytes=16
// CHECK-NEXT:        hw.vimm sram[0x2000 + 0x40*i1] <- sram[0x1000 - 0x10*i0], op=max, imm=0.0, cols=4
// CHECK-NEXT:        hw.loop 3 {
// CHECK-NEXT:          hw.dma_out dram[0x8000 + 0x8*i2] <- sram[0x0 + 0x8*i2], row_bytes=8
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    hw.end
// GENERIC:       "hw.program"() ({
// GENERIC:         "hw.loop"() ({
// GENERIC:           "hw.dma_in"() {dst = #hw.addr<sram[0x800 + 0x10*i0 - 0x4*i1]>, src = #hw.addr<dram[0x0 + 0x10*i1]>, row_bytes = 16 : i64} : () -> ()
// GENERIC:         }) {count = 4 : i64} : () -> ()

// -----

// Multi-core programs, and a program for a target that is not a preset (no limit checks).
hw.program @two_cores target "my_npu.toml" {
  hw.core 1 {
    hw.dma_peer sram[0x0] <- sram[0x0], peer=0, row_bytes=4
    hw.end
  }
  hw.core 0 {
    hw.barrier engine=vector
    hw.end
  }
}
// CHECK-LABEL: hw.program @two_cores target "my_npu.toml" {
// CHECK-NEXT:    hw.core 1 {
// CHECK-NEXT:      hw.dma_peer sram[0x0] <- sram[0x0], peer=0, row_bytes=4
// CHECK:         hw.core 0 {
// CHECK-NEXT:      hw.barrier engine=vector

// -----

// Weights out of line: dense_resource blobs travel in the file's dialect_resources section.
hw.program @resources target "tiny" {
  hw.const dram[0x0] = dense_resource<w_fc1> : tensor<2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      w_fc1: "0x040000000000803F00000040"
    }
  }
#-}
// CHECK-LABEL: hw.program @resources
// CHECK-NEXT:    hw.const dram[0x0] = dense_resource<w_fc1> : tensor<2xf32>
// CHECK:         w_fc1: "0x040000000000803f00000040"
