"""`check_collectives`: a collective that cannot be exchanged fails before any phase is lowered,
with the error `link` gives, and only where `link` would fail."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import TensorType, f32

from aitc.diagnostics import AitcError
from aitc.spmd.link import check_collectives
from aitc.spmd.phases import Collective, Steps
from aitc.target import load_target


def gather(shape: list[int], axis: int, cores: int) -> Collective:
    part = list(shape)
    part[axis] //= cores
    return Collective(
        "all_gather", "part", "whole", TensorType(f32, part), TensorType(f32, shape), axis=axis, node="g"
    )


def test_rows_larger_than_sram_fail_before_lowering():
    edge = load_target("edge")  # 512 KiB of SRAM per core
    steps = Steps([gather([2, 1, 1024, 1024], 2, 4)])  # 2 rows of 4 MiB
    with pytest.raises(
        AitcError, match=r"shard.all_gather \(node g\) .*: not even one row of 4194304 bytes fits"
    ):
        check_collectives(edge, steps, 4)


def test_what_fits_or_goes_through_dram_passes():
    edge = load_target("edge")
    check_collectives(edge, Steps([gather([8, 64], 1, 4)]), 4)  # small: pieces fit
    # one row, a function output: each core writes its part in place (link's alias_final_parts)
    check_collectives(edge, Steps([gather([1, 1024, 1024], 1, 4)], outputs=[("y", "whole")]), 4)
    # one row, read by a later phase: gathered through shared DRAM (link's gather_in_dram)
    check_collectives(edge, Steps([gather([1, 1024, 1024], 1, 4)]), 4)
