"""`costs.tile_heights` / `fastest_height`: the tile heights a row kernel or an elementwise chain
estimates (the most rows that fit, then halved and balanced over the rows, at most
HEIGHT_CANDIDATES, none whose transfers would be shorter than the DMA latency) and the one it
takes (fewest estimated cycles, the taller of equals)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aitc.passes.graph_to_tile.costs import HEIGHT_CANDIDATES, balanced, fastest_height, tile_heights
from aitc.target import load_target

EDGE = load_target("edge")


def test_heights_halve_from_the_most_that_fit():
    tried = tile_heights(128, 64, 384 * 4, EDGE, lambda tr: 1000 + tr)
    assert list(tried) == [64, 32, 16, 8, 4, 2]
    assert fastest_height(tried) == 2


def test_heights_stop_where_a_transfer_is_shorter_than_the_latency():
    """A 16-byte row: 64 latency cycles at 32 B/cycle is 2 KiB, so 128 rows are the shortest tile."""
    tried = tile_heights(1024, 512, 16, EDGE, lambda tr: tr)
    assert list(tried) == [512, 256, 128]


def test_ties_take_the_taller_tile():
    assert fastest_height({64: 500, 32: 500, 16: 501}) == 64


@given(st.integers(1, 4096), st.integers(1, 4096), st.integers(1, 8192))
def test_heights_cover_the_rows_evenly(rows: int, most: int, row_bytes: int):
    most = min(most, rows)
    tried = tile_heights(rows, most, row_bytes, EDGE, lambda tr: -tr)
    assert 1 <= len(tried) <= HEIGHT_CANDIDATES
    assert next(iter(tried)) == most
    for height in tried:
        assert 1 <= height <= most
        assert height == most or balanced(rows, height) == height
    assert fastest_height(tried) == max(tried)
