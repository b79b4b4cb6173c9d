"""Unit tests of passes/legality.py: a conversion fails while ops of its source dialect remain."""

from __future__ import annotations

import pytest
from xdsl.utils.exceptions import PassFailedException

from aitc.ir import parse_mlir
from aitc.passes.legality import check_no_ops_left, ops_of_dialect

MIXED = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = graph.relu %x : tensor<4xf32>
  %b = graph.relu %a : tensor<4xf32>
  %c = graph.exp %b : tensor<4xf32>
  func.return %c : tensor<4xf32>
}
"""

CLEAN = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
"""


def test_no_ops_left_passes_silently():
    check_no_ops_left(parse_mlir(CLEAN), "graph", "convert-graph-to-tile")


def test_leftover_ops_fail_with_counts_and_annotated_ir():
    module = parse_mlir(MIXED)
    with pytest.raises(PassFailedException) as info:
        check_no_ops_left(module, "graph", "convert-graph-to-tile")
    message = str(info.value)
    assert message.startswith("convert-graph-to-tile: 3 'graph' op(s) left unconverted")
    assert "graph.exp x1, graph.relu x2" in message
    notes = "".join(getattr(info.value, "__notes__", []))
    assert notes.count("illegal after convert-graph-to-tile") == 3


def test_prefix_matches_whole_dialect_names_only():
    module = parse_mlir(MIXED)
    assert len(ops_of_dialect(module, "graph.")) == 3
    assert ops_of_dialect(module, "grap") == []
    assert [op.name for op in ops_of_dialect(module, "func")] == ["func.func", "func.return"]
    check_no_ops_left(module, "tile", "convert-graph-to-tile")
