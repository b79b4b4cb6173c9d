// RUN: aitc asm %s -o %t.aitb && aitc disasm %t.aitb | filecheck %s
// The disassembly is the aitc-opt printout, byte for byte (locations and weights included):
// RUN: aitc-opt %s --print-debuginfo | sed -e 's/ loc(unknown)//g' -e '${/^$/d}' > %t.expected.mlir
// RUN: aitc disasm %t.aitb -o %t.disasm.mlir
// RUN: diff %t.expected.mlir %t.disasm.mlir
// ... and so is the generic form:
// RUN: aitc-opt %s --print-op-generic --print-debuginfo | sed -e 's/ loc(unknown)//g' -e '${/^$/d}' > %t.generic.mlir
// RUN: aitc disasm %t.aitb --generic | diff %t.generic.mlir -
// Assembling the generic disassembly gives the same bytes (the custom form drops fields written
// at their default value, e.g. rows=1, so only the generic form keeps the encoding's presence bits).
// RUN: aitc disasm %t.aitb --generic -o %t.generic-disasm.mlir
// RUN: aitc asm %t.generic-disasm.mlir -o %t.again.aitb && diff %t.aitb %t.again.aitb

// Every instruction, loops with negative steps, fields at and away from their defaults,
// source locations of several kinds, inline and out-of-line weights, two cores, the compiler's
// kernel estimates.
builtin.module attributes {aitc.model = "roundtrip"} {
  hw.program @roundtrip target "tiny" attributes {aitc.kernels = [{kernel = "fc1", op = "graph.matmul", est_cycles = 120 : i64, dma_bytes = 96 : i64, nodes = ["fc1"], core = 0 : i64, overlap = 20 : i64, delay = 3 : i64}]} {
    hw.tensor "x" input dram[0x0] : tensor<4x4xf32> loc("x")
    hw.tensor "ids" input dram[0x40] : tensor<4xi32>
    hw.tensor "y" output dram[0x100] : tensor<4x4xf32>
    hw.const dram[0x200] = dense<[1.0, 2.0]> : tensor<2xf32>
    hw.const dram[0x300] = dense_resource<w_fc1> : tensor<2xf32> loc("fc1.weight")
    hw.core 0 {
      hw.dma_in sram[0x0] <- dram[0x0], rows=4, row_bytes=16, src_stride=16, queue=0 loc("fc1")
      hw.dma_out dram[0x100] <- sram[0x0], rows=4, row_bytes=16, queue=1
      hw.dma_local acc[0x0] <- sram[0x0], rows=2, row_bytes=16
      hw.dma_peer sram[0x1000] <- sram[0x0], peer=1, rows=4, row_bytes=16
      hw.dma_gather sram[0x400] <- dram[0x200], sram[0x800], rows=4, row_bytes=8, src_stride=8, table_rows=2
      hw.loop 4 {
        hw.loop 2 {
          hw.dma_in sram[0x100 + 0x10*i0 - 0x4*i1] <- dram[0x0 + 0x10*i1], rows=1, row_bytes=16 loc("model.onnx":3:7)
        }
      }
      hw.matmul acc[0x0] <- sram[0x0], sram[0x40], m=4, k=4, n=4, dtype=i8, lhs_stride=4, accumulate, transpose_rhs loc(fused["fc1", "relu1"])
      hw.vbinary sram[0x200] <- sram[0x0], sram[0x40], op=cmp_ge, rows=4, cols=4, dtype=i32, broadcast=row, b_stride=4
      hw.vimm sram[0x200] <- acc[0x0], op=mul, imm=-1.5e-07, rows=4, cols=4
      hw.vunary sram[0x200] <- sram[0x0], op=gelu, rows=2, cols=4
      hw.vselect sram[0x300] <- sram[0x0], sram[0x40], sram[0x80], rows=4, cols=4
      hw.vreduce sram[0x200] <- sram[0x0], op=max, rows=4, cols=4
      hw.vcast sram[0x200] <- acc[0x0], rows=4, cols=4, from=i32, to=i8, scale=0.0125
      hw.vcast sram[0x200] <- sram[0x0], rows=4, cols=4, from=f32, to=i8, zero=-128
      hw.acc_read sram[0x200] <- acc[0x0], rows=4, cols=4, activation=gelu_tanh
      hw.sem_signal 3, engine=matrix
      hw.sem_wait 3, engine=vector, count=2
      hw.sem_signal 5, engine=dma1, count=3, peer=1
      hw.barrier engine=dma1
      hw.end
    } loc("core0")
    hw.core 1 {
      hw.barrier engine=dma1
      hw.end
    }
  }
}
{-#
  dialect_resources: {
    builtin: {
      w_fc1: "0x040000000000803F00000040"
    }
  }
#-}

// CHECK:       builtin.module attributes {aitc.model = "roundtrip"} {
// CHECK-NEXT:    hw.program @roundtrip target "tiny" attributes {aitc.kernels = [{kernel = "fc1", op = "graph.matmul", est_cycles = 120 : i64, dma_bytes = 96 : i64, nodes = ["fc1"], core = 0 : i64, overlap = 20 : i64, delay = 3 : i64}]} {
// CHECK-NEXT:      hw.tensor "x" input dram[0x0] : tensor<4x4xf32> loc("x")
// CHECK-NEXT:      hw.tensor "ids" input dram[0x40] : tensor<4xi32>
// CHECK-NEXT:      hw.tensor "y" output dram[0x100] : tensor<4x4xf32>
// CHECK-NEXT:      hw.const dram[0x200] = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:      hw.const dram[0x300] = dense_resource<w_fc1> : tensor<2xf32> loc("fc1.weight")
// CHECK-NEXT:      hw.core 0 {
// CHECK-NEXT:        hw.dma_in sram[0x0] <- dram[0x0], rows=4, row_bytes=16, src_stride=16, queue=0 loc("fc1")
// CHECK-NEXT:        hw.dma_out dram[0x100] <- sram[0x0], rows=4, row_bytes=16, queue=1
// CHECK-NEXT:        hw.dma_local acc[0x0] <- sram[0x0], rows=2, row_bytes=16
// CHECK-NEXT:        hw.dma_peer sram[0x1000] <- sram[0x0], peer=1, rows=4, row_bytes=16
// CHECK-NEXT:        hw.dma_gather sram[0x400] <- dram[0x200], sram[0x800], rows=4, row_bytes=8, src_stride=8, table_rows=2
// CHECK-NEXT:        hw.loop 4 {
// CHECK-NEXT:          hw.loop 2 {
// CHECK-NEXT:            hw.dma_in sram[0x100 + 0x10*i0 - 0x4*i1] <- dram[0x0 + 0x10*i1], row_bytes=16 loc("model.onnx":3:7)
// CHECK-NEXT:          }
// CHECK-NEXT:        }
// CHECK-NEXT:        hw.matmul acc[0x0] <- sram[0x0], sram[0x40], m=4, k=4, n=4, dtype=i8, lhs_stride=4, accumulate, transpose_rhs loc(fused["fc1", "relu1"])
// CHECK-NEXT:        hw.vbinary sram[0x200] <- sram[0x0], sram[0x40], op=cmp_ge, rows=4, cols=4, dtype=i32, broadcast=row, b_stride=4
// CHECK-NEXT:        hw.vimm sram[0x200] <- acc[0x0], op=mul, imm=-1.5e-07, rows=4, cols=4
// CHECK-NEXT:        hw.vunary sram[0x200] <- sram[0x0], op=gelu, rows=2, cols=4
// CHECK-NEXT:        hw.vselect sram[0x300] <- sram[0x0], sram[0x40], sram[0x80], rows=4, cols=4
// CHECK-NEXT:        hw.vreduce sram[0x200] <- sram[0x0], op=max, rows=4, cols=4
// CHECK-NEXT:        hw.vcast sram[0x200] <- acc[0x0], rows=4, cols=4, from=i32, to=i8, scale=0.0125
// CHECK-NEXT:        hw.vcast sram[0x200] <- sram[0x0], rows=4, cols=4, from=f32, to=i8, zero=-128
// CHECK-NEXT:        hw.acc_read sram[0x200] <- acc[0x0], rows=4, cols=4, activation=gelu_tanh
// CHECK-NEXT:        hw.sem_signal 3, engine=matrix
// CHECK-NEXT:        hw.sem_wait 3, engine=vector, count=2
// CHECK-NEXT:        hw.sem_signal 5, engine=dma1, count=3, peer=1
// CHECK-NEXT:        hw.barrier engine=dma1
// CHECK-NEXT:        hw.end
// CHECK-NEXT:      } loc("core0")
// CHECK-NEXT:      hw.core 1 {
// CHECK-NEXT:        hw.barrier engine=dma1
// CHECK-NEXT:        hw.end
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK:       dialect_resources: {
// CHECK-NEXT:    builtin: {
// CHECK-NEXT:      w_fc1: "0x040000000000803f00000040"
