// A 2-core all-reduce of relu'd rows on the `tiny` target, with a peer DMA and a barrier:
//
//   y[0] = y[1] = relu(x[0]) + relu(x[1])          x, y: 2x16 f32
//
// Core c loads row c, applies relu, and sends the result to the other core's SRAM over the
// core-to-core link (hw.dma_peer). The barrier on dma1 (after the peer DMA, on the same engine)
// guarantees both sends have completed; only then may each core add the received row.
//
//   dram: x 0x000, y 0x100     sram (each core): x row 0x000, relu 0x100, received 0x200, sum 0x300
//
// Semaphores (per core): 0 = x loaded (dma0 -> vector), 1 = relu done (vector -> dma1),
// 2 = both exchanges done (dma1 after the barrier -> vector), 3 = sum done (vector -> dma1).
builtin.module {
  hw.program @two_core_allreduce target "tiny" {
    hw.tensor "x" input dram[0x0] : tensor<2x16xf32>
    hw.tensor "y" output dram[0x100] : tensor<2x16xf32>
    hw.core 0 {
      hw.dma_in sram[0x0] <- dram[0x0], rows=1, row_bytes=64 loc("load_x")
      hw.sem_signal 0, engine=dma0
      hw.sem_wait 0, engine=vector
      hw.vunary sram[0x100] <- sram[0x0], op=relu, rows=1, cols=16 loc("relu")
      hw.sem_signal 1, engine=vector
      hw.sem_wait 1, engine=dma1
      hw.dma_peer sram[0x200] <- sram[0x100], peer=1, rows=1, row_bytes=64 loc("allreduce")
      hw.barrier engine=dma1
      hw.sem_signal 2, engine=dma1
      hw.sem_wait 2, engine=vector
      hw.vbinary sram[0x300] <- sram[0x100], sram[0x200], op=add, rows=1, cols=16 loc("allreduce")
      hw.sem_signal 3, engine=vector
      hw.sem_wait 3, engine=dma1
      hw.dma_out dram[0x100] <- sram[0x300], rows=1, row_bytes=64 loc("store_y")
      hw.end
    }
    hw.core 1 {
      hw.dma_in sram[0x0] <- dram[0x40], rows=1, row_bytes=64 loc("load_x")
      hw.sem_signal 0, engine=dma0
      hw.sem_wait 0, engine=vector
      hw.vunary sram[0x100] <- sram[0x0], op=relu, rows=1, cols=16 loc("relu")
      hw.sem_signal 1, engine=vector
      hw.sem_wait 1, engine=dma1
      hw.dma_peer sram[0x200] <- sram[0x100], peer=0, rows=1, row_bytes=64 loc("allreduce")
      hw.barrier engine=dma1
      hw.sem_signal 2, engine=dma1
      hw.sem_wait 2, engine=vector
      hw.vbinary sram[0x300] <- sram[0x100], sram[0x200], op=add, rows=1, cols=16 loc("allreduce")
      hw.sem_signal 3, engine=vector
      hw.sem_wait 3, engine=dma1
      hw.dma_out dram[0x140] <- sram[0x300], rows=1, row_bytes=64 loc("store_y")
      hw.end
    }
  }
}
