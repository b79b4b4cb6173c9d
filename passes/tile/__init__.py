"""Tile-level passes: rewrites within the `tile` dialect (buffers, DMA, tiled compute), one pass
per module, each module named after its CLI name (`plan-memory` -> `plan_memory.py`; `multi-buffer` spans files: the package `multi_buffer/`)."""
