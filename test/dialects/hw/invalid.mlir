// RUN: aitc-opt %s --split-input-file --verify-diagnostics | filecheck %s
// One failure per case. Cases on target "tiny" (2 cores, 16 KiB SRAM = 0x4000, 2 KiB ACC = 0x800,
// 4 MiB DRAM, 16 semaphores, 2 DMA queues, 4x4 matrix engine) also exercise the target checks.

// The matrix engine accumulates into ACC only.
hw.program @wrong_space target "tiny" {
  hw.core 0 {
    hw.matmul sram[0x0] <- sram[0x0], sram[0x40], m=4, k=4, n=4
    hw.end
  }
}
// CHECK: hw.matmul: 'acc' must be in acc, got sram

// -----

// hw.vcast's zero point belongs to an integer side.
hw.program @float_zero_point target "tiny" {
  hw.core 0 {
    hw.vcast sram[0x200] <- sram[0x0], rows=4, cols=4, from=f32, to=f32, scale=0.5, zero=3
    hw.end
  }
}
// CHECK: hw.vcast: a zero point needs an integer side (from or to i8/i32)

// -----

// ... and is a 32-bit integer.
hw.program @wide_zero_point target "tiny" {
  hw.core 0 {
    hw.vcast sram[0x200] <- sram[0x0], rows=4, cols=4, from=f32, to=i32, zero=4294967296
    hw.end
  }
}
// CHECK: hw.vcast: zero point 4294967296 does not fit in i32

// -----

// An enum field holds one of its choices (the custom parser refuses earlier; generic form here).
hw.program @unknown_enum target "tiny" {
  hw.core 0 {
    "hw.vunary"() {dst = #hw.addr<sram[0x0]>, a = #hw.addr<sram[0x40]>, op = "cube", cols = 4 : i64} : () -> ()
    hw.end
  }
}
// CHECK: hw.vunary: 'op' must be one of copy, neg, abs, exp, log, tanh, erf, sqrt, rsqrt, recip, relu, sigmoid, gelu, got 'cube'

// -----

// Instructions have no fields beyond their FIELDS.
hw.program @unknown_field target "tiny" {
  hw.core 0 {
    "hw.barrier"() {engine = "vector", color = 3 : i64} : () -> ()
    hw.end
  }
}
// CHECK: hw.barrier: unknown field(s) ['color']

// -----

// A field holds the attribute kind its Field declares.
hw.program @field_kind target "tiny" {
  hw.core 0 {
    "hw.dma_in"() {dst = #hw.addr<sram[0x0]>, src = #hw.addr<dram[0x0]>, row_bytes = "sixteen"} : () -> ()
    hw.end
  }
}
// CHECK: hw.dma_in: field 'row_bytes' must be int

// -----

// An address may only step with indices of the loops around it.
hw.program @index_outside target "tiny" {
  hw.core 0 {
    hw.dma_in sram[0x0 + 0x10*i0] <- dram[0x0], row_bytes=16
    hw.end
  }
}
// CHECK: hw.dma_in: 'dst' uses loop index i0 outside its loops

// -----

// i1 inside a single loop is one level too deep.
hw.program @index_too_deep target "tiny" {
  hw.core 0 {
    hw.loop 2 {
      hw.dma_in sram[0x0] <- dram[0x0 + 0x10*i1], row_bytes=16
    }
    hw.end
  }
}
// CHECK: hw.dma_in: 'src' uses loop index i1 outside its loops

// -----

// Fields without a default are required.
hw.program @missing_field target "tiny" {
  hw.core 0 {
    hw.dma_in sram[0x0] <- dram[0x0]
    hw.end
  }
}
// CHECK: hw.dma_in needs 'row_bytes'

// -----

// Sizes are positive.
hw.program @rows_zero target "tiny" {
  hw.core 0 {
    hw.dma_in sram[0x0] <- dram[0x0], rows=0, row_bytes=16
    hw.end
  }
}
// CHECK: hw.dma_in: rows and row_bytes must be >= 1

// -----

// A hardware loop runs at least once.
hw.program @loop_zero target "tiny" {
  hw.core 0 {
    hw.loop 0 {
    }
    hw.end
  }
}
// CHECK: hw.loop: count must be >= 1

// -----

// Core ids are unique.
hw.program @duplicate_core target "tiny" {
  hw.core 0 {
    hw.end
  }
  hw.core 0 {
    hw.end
  }
}
// CHECK: hw.program: duplicate core ids [0, 0]

// -----

// The recorded kernel estimates (aitc perf reads them) must be well formed.
hw.program @negative_estimate target "tiny" attributes {aitc.kernels = [{kernel = "k", op = "graph.add", est_cycles = -5 : i64}]} {
  hw.core 0 {
    hw.end
  }
}
// CHECK: hw.program: aitc.kernels entry's 'est_cycles' must be an integer >= 0

// -----

hw.program @unnamed_estimate target "tiny" attributes {aitc.kernels = [{op = "graph.add", est_cycles = 5 : i64}]} {
  hw.core 0 {
    hw.end
  }
}
// CHECK: hw.program: aitc.kernels entry needs a string 'kernel'

// -----

// A kernel's overlap with the kernel before it is part of its estimate.
hw.program @overlap_beyond_estimate target "tiny" attributes {aitc.kernels = [{kernel = "k", op = "graph.add", est_cycles = 5 : i64, overlap = 6 : i64}]} {
  hw.core 0 {
    hw.end
  }
}
// CHECK: hw.program: aitc.kernels entry's 'overlap' exceeds its 'est_cycles'

// -----

hw.program @estimates_not_an_array target "tiny" attributes {aitc.kernels = 3 : i64} {
  hw.core 0 {
    hw.end
  }
}
// CHECK: hw.program: aitc.kernels must be an array of dictionaries

// -----

// Target: tiny has cores 0 and 1.
hw.program @core_beyond_target target "tiny" {
  hw.core 2 {
    hw.end
  }
}
// CHECK: hw.program @core_beyond_target does not fit target 'tiny' (1 problem(s)):
// CHECK: hw.core 2 does not exist (the target has 2 cores)

// -----

// Target: k is bounded by the matrix engine's rows; the message names the instruction and node.
hw.program @matmul_k target "tiny" {
  hw.core 0 {
    hw.matmul acc[0x0] <- sram[0x0], sram[0x100], m=4, k=8, n=4 loc("fc1")
    hw.end
  }
}
// CHECK: core 0, instruction 0 (hw.matmul, node "fc1"): k=8 exceeds the matrix engine's 4 rows (matrix.rows)

// -----

// Target: n is bounded by the matrix engine's cols.
hw.program @matmul_n target "tiny" {
  hw.core 0 {
    hw.matmul acc[0x0] <- sram[0x0], sram[0x100], m=4, k=4, n=5
    hw.end
  }
}
// CHECK: core 0, instruction 0 (hw.matmul): n=5 exceeds the matrix engine's 4 cols (matrix.cols)

// -----

// Target: f32 operands of the vector engine are 4-byte aligned.
hw.program @misaligned target "tiny" {
  hw.core 0 {
    hw.vunary sram[0x102] <- sram[0x0], op=relu, cols=4
    hw.end
  }
}
// CHECK: core 0, instruction 0 (hw.vunary): 'dst' address 0x102 is not 4-byte aligned

// -----

// Target: a loop step that breaks alignment breaks it from the second iteration on.
hw.program @misaligned_step target "tiny" {
  hw.core 0 {
    hw.loop 2 {
      hw.matmul acc[0x0] <- sram[0x0 + 0x6*i0], sram[0x100], m=4, k=4, n=4
    }
    hw.end
  }
}
// CHECK: core 0, instruction 0 (hw.matmul): 'lhs' step 6 of loop i0 is not a multiple of 4 bytes

// -----

// Target: i32 gather indices are 4-byte aligned.
hw.program @misaligned_indices target "tiny" {
  hw.core 0 {
    hw.dma_gather sram[0x0] <- dram[0x0], sram[0x801], rows=4, row_bytes=8, table_rows=2
    hw.end
  }
}
// CHECK: core 0, instruction 0 (hw.dma_gather): 'indices' address 0x801 is not 4-byte aligned

// -----

// Target: 32 bytes from 0x3ff0 end at 0x4010, past tiny's 16 KiB of SRAM.
hw.program @beyond_sram target "tiny" {
  hw.core 0 {
    hw.dma_in sram[0x3ff0] <- dram[0x0], row_bytes=32
    hw.end
  }
}
// CHECK: core 0, instruction 0 (hw.dma_in): 'dst' sram[0x3ff0] reaches byte 0x4010 (32 bytes per access), beyond the 16384 bytes of SRAM

// -----

// Target: ranges cover the whole loop box: the last of 8 iterations writes 0x3e00 + 0x40*7 .. +0x200.
hw.program @beyond_sram_in_loop target "tiny" {
  hw.core 0 {
    hw.loop 8 {
      hw.dma_in sram[0x3e00 + 0x40*i0] <- dram[0x0], row_bytes=512
    }
    hw.end
  }
}
// CHECK: 'dst' sram[0x3e00 + 0x40*i0] reaches byte 0x41c0 over its loop iterations (512 bytes per access), beyond the 16384 bytes of SRAM

// -----

// Target: a negative step walks below address 0.
hw.program @below_zero target "tiny" {
  hw.core 0 {
    hw.loop 4 {
      hw.dma_out dram[0x0] <- sram[0x20 - 0x10*i0], row_bytes=16
    }
    hw.end
  }
}
// CHECK: core 0, instruction 0 (hw.dma_out): 'src' sram[0x20 - 0x10*i0] goes below address 0 over its loop iterations (down to -16)

// -----

// Target: a 4x4 f32 accumulator tile at 0x7f0 overruns tiny's 2 KiB ACC.
hw.program @beyond_acc target "tiny" {
  hw.core 0 {
    hw.acc_read sram[0x0] <- acc[0x7f0], rows=4, cols=4
    hw.end
  }
}
// CHECK: core 0, instruction 0 (hw.acc_read): 'a' acc[0x7f0] reaches byte 0x830 (64 bytes per access), beyond the 2048 bytes of ACC

// -----

// Target: tiny has semaphores 0..15.
hw.program @bad_semaphore target "tiny" {
  hw.core 0 {
    hw.sem_signal 16, engine=matrix
    hw.end
  }
}
// CHECK: core 0, instruction 0 (hw.sem_signal): semaphore 16 does not exist (the target has 16 per core, 0..15)

// -----

// Target: tiny has DMA queues 0 and 1.
hw.program @bad_queue target "tiny" {
  hw.core 0 {
    hw.dma_in sram[0x0] <- dram[0x0], row_bytes=16, queue=2
    hw.end
  }
}
// CHECK: core 0, instruction 0 (hw.dma_in): queue=2 does not exist (the target has 2 DMA queues, 0..1; -1 = auto)

// -----

// Target: an engine name must name an engine of the target.
hw.program @bad_engine target "tiny" {
  hw.core 0 {
    hw.sem_wait 0, engine=dma3
    hw.end
  }
}
// CHECK: core 0, instruction 0 (hw.sem_wait): engine=dma3 does not exist (the target has 2 DMA queues)

// -----

// Target: a peer copy goes to another core.
hw.program @peer_self target "tiny" {
  hw.core 1 {
    hw.dma_peer sram[0x0] <- sram[0x100], peer=1, row_bytes=16
    hw.end
  }
}
// CHECK: core 1, instruction 0 (hw.dma_peer): peer=1 is this core itself (use hw.dma_local)

// -----

// Target: ... that exists.
hw.program @peer_missing target "tiny" {
  hw.core 0 {
    hw.dma_peer sram[0x0] <- sram[0x100], peer=7, row_bytes=16
    hw.end
  }
}
// CHECK: core 0, instruction 0 (hw.dma_peer): peer=7 is not a core (the target has 2 cores)

// -----

// Target: a signal's peer is another core ...
hw.program @signal_peer_self target "tiny" {
  hw.core 1 {
    hw.sem_signal 0, engine=dma1, peer=1
    hw.end
  }
}
// CHECK: core 1, instruction 0 (hw.sem_signal): peer=1 is this core itself (leave peer out to signal this core)

// -----

// Target: ... that exists.
hw.program @signal_peer_missing target "tiny" {
  hw.core 0 {
    hw.sem_signal 0, engine=dma1, peer=2
    hw.end
  }
}
// CHECK: core 0, instruction 0 (hw.sem_signal): peer=2 is not a core (the target has 2 cores)

// -----

// A signal's peer is a core id, or -1 (this core).
hw.program @signal_peer_negative target "tiny" {
  hw.core 0 {
    hw.sem_signal 0, engine=dma1, peer=-2
    hw.end
  }
}
// CHECK: hw.sem_signal: peer must be a core id (or -1: this core)

// -----

// Target: data layout regions are disjoint.
hw.program @overlap target "tiny" {
  hw.tensor "x" input dram[0x0] : tensor<4x4xf32>
  hw.const dram[0x20] = dense<1.0> : tensor<4xf32>
}
// CHECK: hw.const at dram[0x20] (from 0x20) overlaps hw.tensor "x" (up to 0x40)

// -----

// Target: ... and inside DRAM (tiny has 4 MiB = 0x400000).
hw.program @beyond_dram target "tiny" {
  hw.tensor "y" output dram[0x3ffff0] : tensor<8xf32>
}
// CHECK: hw.tensor "y" ends at 0x400010, beyond the 4194304 bytes of DRAM

// -----

// Target: every problem is reported at once.
hw.program @many target "tiny" {
  hw.core 0 {
    hw.sem_signal 99, engine=matrix
    hw.matmul acc[0x0] <- sram[0x0], sram[0x100], m=64, k=16, n=16 loc("gemm")
    hw.end
  }
}
// CHECK: hw.program @many does not fit target 'tiny' (4 problem(s)):
// CHECK-NEXT: core 0, instruction 0 (hw.sem_signal): semaphore 99 does not exist
// CHECK-NEXT: core 0, instruction 1 (hw.matmul, node "gemm"): k=16 exceeds
// CHECK-NEXT: core 0, instruction 1 (hw.matmul, node "gemm"): n=16 exceeds
// CHECK-NEXT: core 0, instruction 1 (hw.matmul, node "gemm"): 'acc' acc[0x0] reaches byte 0x1000 (4096 bytes per access), beyond the 2048 bytes of ACC

// -----

// ACC holds 32-bit values: a vector op cannot view it as i8.
hw.program @acc_as_i8 target "tiny" {
  hw.core 0 {
    hw.vunary sram[0x0] <- acc[0x0], op=copy, rows=4, cols=4, dtype=i8
    hw.end
  }
}
// CHECK: hw.vunary: ACC holds 32-bit values, not i8

// -----

// An immediate for an integer tile must be a whole number that fits the type.
hw.program @fractional_imm target "tiny" {
  hw.core 0 {
    hw.vimm sram[0x0] <- sram[0x40], op=add, imm=0.5, rows=4, cols=4, dtype=i32
    hw.end
  }
}
// CHECK: hw.vimm: imm 0.5 must be a whole number in [-2147483648, 2147483647] for i32

// -----

// A row reduction writes a dense column: no destination stride.
hw.program @reduce_stride target "tiny" {
  hw.core 0 {
    hw.vreduce sram[0x0] <- sram[0x40], op=sum, rows=4, cols=4, dst_stride=2
    hw.end
  }
}
// CHECK: hw.vreduce writes a dense rows x 1 column: dst_stride must be 0

// -----

// Float activations need f32 accumulators.
hw.program @int_gelu target "tiny" {
  hw.core 0 {
    hw.acc_read sram[0x0] <- acc[0x0], rows=4, cols=4, dtype=i32, activation=gelu
    hw.end
  }
}
// CHECK: hw.acc_read: activation gelu needs f32 (i32 allows none/relu/relu6)
