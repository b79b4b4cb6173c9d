"""Tile-level passes: rewrites within the `tile` dialect (buffers, DMA, tiled compute), one pass
per module, each module named after its CLI name (`multi-buffer` -> `multi_buffer.py`)."""
