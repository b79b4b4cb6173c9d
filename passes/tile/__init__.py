"""Tile-level passes: rewrites within the `tile` dialect (buffers, DMA, tiled compute), one pass
per module named after its CLI name (`plan-memory` -> `plan_memory.py`), or per package when it
spans files (`multi-buffer` -> `multi_buffer/`)."""
