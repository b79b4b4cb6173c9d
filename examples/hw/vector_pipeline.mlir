// An elementwise vector pipeline on one core of the `tiny` target: y = gelu(x * w + b), with
// x, y: 32x16 f32 and the row vectors w, b (16 f32 each) as weights (hw.const).
//
// x streams through in 4 tiles of 8 rows, double-buffered at both ends: dma0 loads tile t+1
// while the vector engine computes tile t and dma1 stores tile t-1. Tile t = 2*i0 + i1 uses
// input buffer i1 and output buffer i1.
//
//   dram: x 0x000, y 0x800, w|b 0x1000     sram: w 0x000, b 0x040, in 0x100/0x300, out 0x500/0x700
//
// Semaphores: 0 = input buffer free (vector -> dma0; both start free), 1 = input tile loaded
// (dma0 -> vector), 2 = output buffer free (dma1 -> vector; both start free), 3 = output tile
// ready (vector -> dma1). The weights need no semaphore of their own: dma0 loads them before the
// first tile, so "tile 0 loaded" also means "weights loaded".
builtin.module {
  hw.program @vector_pipeline target "tiny" {
    hw.tensor "x" input dram[0x0] : tensor<32x16xf32>
    hw.tensor "y" output dram[0x800] : tensor<32x16xf32>
    hw.const dram[0x1000] = dense<[[0.5, -1.0, 1.5, 2.0, 0.25, -0.5, 1.0, 3.0, -2.0, 0.75, 1.25, -1.5, 0.1, 2.5, -0.25, 1.0], [0.1, 0.2, -0.3, 0.0, 1.0, -1.0, 0.5, 0.25, -0.125, 2.0, -2.0, 0.3, 0.6, -0.6, 0.9, -0.9]]> : tensor<2x16xf32>
    hw.core 0 {
      hw.sem_signal 0, engine=dma0, count=2
      hw.sem_signal 2, engine=dma1, count=2
      hw.dma_in sram[0x0] <- dram[0x1000], rows=1, row_bytes=128 loc("load_weights")
      hw.loop 2 {
        hw.loop 2 {
          hw.sem_wait 0, engine=dma0
          hw.dma_in sram[0x100 + 0x200*i1] <- dram[0x0 + 0x400*i0 + 0x200*i1], rows=1, row_bytes=512 loc("load_x")
          hw.sem_signal 1, engine=dma0
          hw.sem_wait 1, engine=vector
          hw.sem_wait 2, engine=vector
          hw.vbinary sram[0x500 + 0x200*i1] <- sram[0x100 + 0x200*i1], sram[0x0], op=mul, rows=8, cols=16, broadcast=row loc("scale")
          hw.sem_signal 0, engine=vector
          hw.vbinary sram[0x500 + 0x200*i1] <- sram[0x500 + 0x200*i1], sram[0x40], op=add, rows=8, cols=16, broadcast=row loc("bias")
          hw.vunary sram[0x500 + 0x200*i1] <- sram[0x500 + 0x200*i1], op=gelu, rows=8, cols=16 loc("gelu")
          hw.sem_signal 3, engine=vector
          hw.sem_wait 3, engine=dma1
          hw.dma_out dram[0x800 + 0x400*i0 + 0x200*i1] <- sram[0x500 + 0x200*i1], rows=1, row_bytes=512 loc("store_y")
          hw.sem_signal 2, engine=dma1
        }
      }
      hw.sem_wait 0, engine=dma0, count=2
      hw.sem_wait 2, engine=vector, count=2
      hw.end
    }
  }
}
