// A double-buffered tiled matmul on one core of the `tiny` target: c = a @ b, all 16x16 f32.
//
// The 4x4 matrix engine takes k <= 4 and n <= 4, so the product runs as 4 k-steps; k-step t
// loads the panels a[:, 4t:4t+4] (16x4) and b[4t:4t+4, :] (4x16) into one of two SRAM buffers
// (t % 2) and issues 4 matmuls (one per 4-column block of c), accumulating in ACC. The DMA of
// panel t+1 overlaps the matmuls on panel t.
//
//   dram: a 0x000, b 0x400, c 0x800      sram: a panels 0x000/0x100, b panels 0x200/0x300,
//   acc:  c 0x000 (16x16 f32)                  c staging 0x400
//
// Semaphores: 0 = "panel loaded" (dma0 -> matrix), 1 = "panel buffer free" (matrix -> dma0;
// both buffers start free), 2 = "c complete in ACC" (matrix -> vector), 3 = "c staged in SRAM"
// (vector -> dma1). Engines run their own instructions in order, so the loads can be written as
// one loop ahead of the matmuls: the semaphores, not program order, pace them.
builtin.module {
  hw.program @tiled_matmul target "tiny" {
    hw.tensor "a" input dram[0x0] : tensor<16x16xf32>
    hw.tensor "b" input dram[0x400] : tensor<16x16xf32>
    hw.tensor "c" output dram[0x800] : tensor<16x16xf32>
    hw.core 0 {
      hw.sem_signal 1, engine=matrix, count=2
      // loads: k-step t = 2*i0 + i1 into buffer i1
      hw.loop 2 {
        hw.loop 2 {
          hw.sem_wait 1, engine=dma0
          hw.dma_in sram[0x0 + 0x100*i1] <- dram[0x0 + 0x20*i0 + 0x10*i1], rows=16, row_bytes=16, src_stride=64 loc("load_a")
          hw.dma_in sram[0x200 + 0x100*i1] <- dram[0x400 + 0x200*i0 + 0x100*i1], rows=4, row_bytes=64 loc("load_b")
          hw.sem_signal 0, engine=dma0
        }
      }
      // k-step 0 (buffer 0) overwrites the accumulator
      hw.sem_wait 0, engine=matrix
      hw.loop 4 {
        hw.matmul acc[0x0 + 0x10*i0] <- sram[0x0], sram[0x200 + 0x10*i0], m=16, k=4, n=4, lhs_stride=4, rhs_stride=16, acc_stride=16 loc("matmul")
      }
      hw.sem_signal 1, engine=matrix
      // k-step 1 (buffer 1)
      hw.sem_wait 0, engine=matrix
      hw.loop 4 {
        hw.matmul acc[0x0 + 0x10*i0] <- sram[0x100], sram[0x300 + 0x10*i0], m=16, k=4, n=4, lhs_stride=4, rhs_stride=16, acc_stride=16, accumulate loc("matmul")
      }
      hw.sem_signal 1, engine=matrix
      // k-step 2 (buffer 0); no load follows, so no "free" signal
      hw.sem_wait 0, engine=matrix
      hw.loop 4 {
        hw.matmul acc[0x0 + 0x10*i0] <- sram[0x0], sram[0x200 + 0x10*i0], m=16, k=4, n=4, lhs_stride=4, rhs_stride=16, acc_stride=16, accumulate loc("matmul")
      }
      // k-step 3 (buffer 1)
      hw.sem_wait 0, engine=matrix
      hw.loop 4 {
        hw.matmul acc[0x0 + 0x10*i0] <- sram[0x100], sram[0x300 + 0x10*i0], m=16, k=4, n=4, lhs_stride=4, rhs_stride=16, acc_stride=16, accumulate loc("matmul")
      }
      hw.sem_signal 2, engine=matrix
      // drain: ACC -> SRAM -> DRAM
      hw.sem_wait 2, engine=vector
      hw.acc_read sram[0x400] <- acc[0x0], rows=16, cols=16 loc("store_c")
      hw.sem_signal 3, engine=vector
      hw.sem_wait 3, engine=dma1
      hw.dma_out dram[0x800] <- sram[0x400], rows=16, row_bytes=64 loc("store_c")
      hw.end
    }
  }
}
