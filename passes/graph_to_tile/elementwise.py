"""What each elementwise graph op computes, as tile ops on SRAM windows (convert-graph-to-tile).

`EMITTERS` maps an op class to `(emit, temps)`: `emit(kb, op, operands, dst, temps, sizes)`
writes the op's result for one tile into `dst` (a full rows x cols window), reading
`operands` (`Operand`: a full tile, a row/column/scalar window that broadcasts, or an
immediate from a splat constant) and using `temps` scratch tiles. The semantics are exactly
those of `aitc/interp/graph.py` (e.g. leaky_relu selects on x >= 0, softplus is
max(x, 0) + log(1 + exp(-|x|)), gelu with approximate = "tanh" is the tanh formula).
Booleans (i1) live in SRAM as f32 masks of 0.0/1.0, as the vector engine's comparisons
write them; they never go to DRAM (see `i1_problem`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.ir import Operation

from aitc.analysis.graph_matching import splat_value
from aitc.dialects import graph
from aitc.passes.graph_to_tile.builder import KernelBuilder, Win

Sizes = list[int]


@dataclass(frozen=True)
class Operand:
    """One input of an elementwise op within a tile: `kind` is "full", "row" (1 x cols),
    "col" (rows x 1), "scalar" (1 x 1) or "imm" (`value`, no buffer)."""

    kind: str
    win: Win | None = None
    value: float = 0.0


Xs = list[Operand]
Temps = list[Win]
Emit = Callable[[KernelBuilder, Operation, Xs, Win, Temps, Sizes], None]
"""emit(kb, op, operands, dst, scratch tiles, sizes): one op's tile-op sequence for one tile."""


def fill(kb: KernelBuilder, dst: Win, value: float, sizes: Sizes, ahead: bool = False) -> None:
    """dst = value, whatever dst held before (x == 0 gives 0 or 1 even for NaN/inf garbage);
    `ahead`: dst is no tile the kernel loads into, so the fill need not wait for the loads."""
    kb.binary_imm("cmp_eq", dst, 0.0, dst, sizes, ahead)
    kb.binary_imm("mul", dst, 0.0, dst, sizes, ahead)
    if value:
        kb.binary_imm("add", dst, value, dst, sizes, ahead)


def as_full(kb: KernelBuilder, operand: Operand, scratch: Win | None, sizes: Sizes) -> Win:
    """A full window holding `operand` (broadcast into `scratch` when it is not full)."""
    if operand.kind == "full":
        assert operand.win is not None
        return operand.win
    assert scratch is not None, "a broadcast operand needs a scratch tile (see temps_needed)"
    fill(kb, scratch, operand.value if operand.kind == "imm" else 0.0, sizes, kb.fills_ahead)
    if operand.kind != "imm":
        assert operand.win is not None
        kb.binary("add", scratch, operand.win, scratch, sizes, operand.kind)
    return scratch


# --------------------------------------------------------------------------- binary

BINARY_NAMES: dict[type[Operation], str] = {
    graph.AddOp: "add", graph.SubOp: "sub", graph.MulOp: "mul", graph.DivOp: "div",
    graph.MaxOp: "max", graph.MinOp: "min", graph.EqualOp: "cmp_eq", graph.LessOp: "cmp_lt",
    graph.LessEqualOp: "cmp_le", graph.GreaterOp: "cmp_gt", graph.GreaterEqualOp: "cmp_ge",
    graph.AndOp: "mul", graph.OrOp: "max",
}  # fmt: skip
"""Graph binary ops that are one tile.binary (and/or act on 0/1 masks)."""

SWAPPED = {
    "add": "add", "mul": "mul", "max": "max", "min": "min", "cmp_eq": "cmp_eq",
    "cmp_lt": "cmp_gt", "cmp_gt": "cmp_lt", "cmp_le": "cmp_ge", "cmp_ge": "cmp_le",
}  # fmt: skip
"""a <op> b == b <SWAPPED[op]> a: lets a broadcast lhs become the broadcast operand."""


def binary(
    kb: KernelBuilder, name: str, a: Operand, b: Operand, dst: Win, scratch: Win | None, sizes: Sizes
) -> None:
    """dst = a <name> b for any operand kinds (only b of tile.binary may broadcast)."""
    if a.kind != "full" and b.kind == "full" and name in SWAPPED:
        a, b, name = b, a, SWAPPED[name]
    left = as_full(kb, a, scratch, sizes)
    if b.kind == "imm":
        kb.binary_imm(name, left, b.value, dst, sizes)
        return
    assert b.win is not None
    kb.binary(name, left, b.win, dst, sizes, "none" if b.kind == "full" else b.kind)


def _emit_binary(kb: KernelBuilder, op: Operation, xs: Xs, dst: Win, temps: Temps, sizes: Sizes):
    binary(kb, BINARY_NAMES[type(op)], xs[0], xs[1], dst, temps[0] if temps else None, sizes)


def _emit_xor(kb: KernelBuilder, op: Operation, xs: Xs, dst: Win, temps: Temps, sizes: Sizes):
    binary(kb, "cmp_eq", xs[0], xs[1], dst, temps[0] if temps else None, sizes)
    kb.binary_imm("cmp_eq", dst, 0.0, dst, sizes)


def pow_exponent(op: Operation) -> float | None:
    """The exponent of a graph.pow whose rhs is a splat constant the vector engine handles."""
    value = splat_value(op.operands[1])
    return value if value in POW_EXPONENTS else None


POW_EXPONENTS = (0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 3.0)


def _emit_pow(kb: KernelBuilder, op: Operation, xs: Xs, dst: Win, temps: Temps, sizes: Sizes):
    exponent = pow_exponent(op)
    assert exponent is not None  # the lowering claims only these pows (`vector.py`)
    x = as_full(kb, xs[0], temps[0], sizes)
    if exponent == 0.0:
        fill(kb, dst, 1.0, sizes)
    elif abs(exponent) == 0.5:
        kb.unary("sqrt" if exponent > 0 else "rsqrt", x, dst, sizes)
    elif abs(exponent) == 1.0:
        kb.unary("copy" if exponent > 0 else "recip", x, dst, sizes)
    else:
        kb.binary("mul", x, x, dst, sizes)
        if exponent == 3.0:
            kb.binary("mul", dst, x, dst, sizes)
        if exponent == -2.0:
            kb.unary("recip", dst, dst, sizes)


def _emit_prelu(kb: KernelBuilder, op: Operation, xs: Xs, dst: Win, temps: Temps, sizes: Sizes):
    x = as_full(kb, xs[0], temps[0], sizes)
    binary(kb, "mul", Operand("full", x), xs[1], temps[1], temps[2], sizes)
    kb.binary_imm("cmp_ge", x, 0.0, temps[2], sizes)
    kb.select(temps[2], x, temps[1], dst, sizes)


def _emit_where(kb: KernelBuilder, op: Operation, xs: Xs, dst: Win, temps: Temps, sizes: Sizes):
    spare = iter(temps)
    cond, a, b = (as_full(kb, x, None if x.kind == "full" else next(spare), sizes) for x in xs)
    kb.select(cond, a, b, dst, sizes)


# --------------------------------------------------------------------------- unary

UNARY_NAMES: dict[type[Operation], str] = {
    graph.NegOp: "neg", graph.AbsOp: "abs", graph.ExpOp: "exp", graph.LogOp: "log", graph.SqrtOp: "sqrt",
    graph.ReciprocalOp: "recip", graph.TanhOp: "tanh", graph.SigmoidOp: "sigmoid", graph.ReluOp: "relu",
    graph.ErfOp: "erf",
}  # fmt: skip
"""Graph unary ops that are one tile.unary."""


def _unary_input(kb: KernelBuilder, xs: list[Operand], dst: Win, sizes: Sizes) -> Win:
    return as_full(kb, xs[0], dst, sizes)


def _emit_unary(kb: KernelBuilder, op: Operation, xs: Xs, dst: Win, temps: Temps, sizes: Sizes):
    kb.unary(UNARY_NAMES[type(op)], _unary_input(kb, xs, dst, sizes), dst, sizes)


def _emit_not(kb: KernelBuilder, op: Operation, xs: Xs, dst: Win, temps: Temps, sizes: Sizes):
    kb.binary_imm("cmp_eq", _unary_input(kb, xs, dst, sizes), 0.0, dst, sizes)


def _emit_sign(kb: KernelBuilder, op: Operation, xs: Xs, dst: Win, temps: Temps, sizes: Sizes):
    x = as_full(kb, xs[0], temps[1], sizes)
    kb.binary_imm("cmp_gt", x, 0.0, dst, sizes)
    kb.binary_imm("cmp_lt", x, 0.0, temps[0], sizes)
    kb.binary("sub", dst, temps[0], dst, sizes)


def _param(op: Operation, key: str) -> float:
    assert isinstance(op, graph.ParametricUnaryOp)
    return op.param(key)


def _emit_leaky_relu(kb: KernelBuilder, op: Operation, xs: Xs, dst: Win, temps: Temps, sizes: Sizes):
    x, alpha = as_full(kb, xs[0], temps[1], sizes), _param(op, "alpha")
    if 0.0 <= alpha <= 1.0:  # x >= 0 ? x : alpha x  ==  max(x, alpha x)
        kb.binary_imm("mul", x, alpha, dst, sizes)
        kb.binary("max", x, dst, dst, sizes)
        return
    kb.binary_imm("mul", x, alpha, temps[0], sizes)
    kb.binary_imm("cmp_ge", x, 0.0, dst, sizes)
    kb.select(dst, x, temps[0], dst, sizes)


def _emit_elu(kb: KernelBuilder, op: Operation, xs: Xs, dst: Win, temps: Temps, sizes: Sizes):
    """x > 0 ? x : alpha * (exp(min(x, 0)) - 1), times gamma for selu."""
    x = as_full(kb, xs[0], temps[1], sizes)
    kb.binary_imm("min", x, 0.0, temps[0], sizes)
    kb.unary("exp", temps[0], temps[0], sizes)
    kb.binary_imm("sub", temps[0], 1.0, temps[0], sizes)
    kb.binary_imm("mul", temps[0], _param(op, "alpha"), temps[0], sizes)
    kb.binary_imm("cmp_gt", x, 0.0, dst, sizes)
    kb.select(dst, x, temps[0], dst, sizes)
    if isinstance(op, graph.SeluOp):
        kb.binary_imm("mul", dst, _param(op, "gamma"), dst, sizes)


def _emit_clamp(kb: KernelBuilder, dst: Win, low: float | None, high: float | None, sizes: Sizes) -> None:
    if low is not None:
        kb.binary_imm("max", dst, low, dst, sizes)
    if high is not None:
        kb.binary_imm("min", dst, high, dst, sizes)


def _emit_clip(kb: KernelBuilder, op: Operation, xs: Xs, dst: Win, temps: Temps, sizes: Sizes):
    kb.unary("copy", _unary_input(kb, xs, dst, sizes), dst, sizes)
    low = _param(op, "alpha") if "alpha" in op.attributes else None
    high = _param(op, "beta") if "beta" in op.attributes else None
    _emit_clamp(kb, dst, low, high, sizes)


def _emit_hard_sigmoid(kb: KernelBuilder, op: Operation, xs: Xs, dst: Win, temps: Temps, sizes: Sizes):
    kb.binary_imm("mul", _unary_input(kb, xs, dst, sizes), _param(op, "alpha"), dst, sizes)
    kb.binary_imm("add", dst, _param(op, "beta"), dst, sizes)
    _emit_clamp(kb, dst, 0.0, 1.0, sizes)


def _emit_hard_swish(kb: KernelBuilder, op: Operation, xs: Xs, dst: Win, temps: Temps, sizes: Sizes):
    x = as_full(kb, xs[0], temps[0], sizes)
    kb.binary_imm("div", x, 6.0, dst, sizes)
    kb.binary_imm("add", dst, 0.5, dst, sizes)
    _emit_clamp(kb, dst, 0.0, 1.0, sizes)
    kb.binary("mul", x, dst, dst, sizes)


def _emit_softplus(kb: KernelBuilder, op: Operation, xs: Xs, dst: Win, temps: Temps, sizes: Sizes):
    x = as_full(kb, xs[0], temps[1], sizes)
    kb.unary("abs", x, temps[0], sizes)
    kb.unary("neg", temps[0], temps[0], sizes)
    kb.unary("exp", temps[0], temps[0], sizes)
    kb.binary_imm("add", temps[0], 1.0, temps[0], sizes)
    kb.unary("log", temps[0], temps[0], sizes)
    kb.unary("relu", x, dst, sizes)
    kb.binary("add", dst, temps[0], dst, sizes)


def _emit_softsign(kb: KernelBuilder, op: Operation, xs: Xs, dst: Win, temps: Temps, sizes: Sizes):
    x = as_full(kb, xs[0], temps[0], sizes)
    kb.unary("abs", x, dst, sizes)
    kb.binary_imm("add", dst, 1.0, dst, sizes)
    kb.binary("div", x, dst, dst, sizes)


def gelu_tanh(kb: KernelBuilder, x: Win, dst: Win, temp: Win, sizes: Sizes) -> None:
    """dst = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); dst may be x, temp may not."""
    kb.binary("mul", x, x, temp, sizes)
    kb.binary("mul", temp, x, temp, sizes)
    kb.binary_imm("mul", temp, 0.044715, temp, sizes)
    kb.binary("add", temp, x, temp, sizes)
    kb.binary_imm("mul", temp, math.sqrt(2.0 / math.pi), temp, sizes)
    kb.unary("tanh", temp, temp, sizes)
    kb.binary_imm("add", temp, 1.0, temp, sizes)
    kb.binary_imm("mul", temp, 0.5, temp, sizes)
    kb.binary("mul", x, temp, dst, sizes)


def _emit_gelu(kb: KernelBuilder, op: Operation, xs: Xs, dst: Win, temps: Temps, sizes: Sizes):
    assert isinstance(op, graph.GeluOp)
    x = _unary_input(kb, xs, dst, sizes)
    if op.approximate is not None and op.approximate.data == "tanh":
        gelu_tanh(kb, x, dst, temps[0], sizes)
    else:
        kb.unary("gelu", x, dst, sizes)


def _emit_cast(kb: KernelBuilder, op: Operation, xs: Xs, dst: Win, temps: Temps, sizes: Sizes):
    assert isinstance(op, graph.CastOp)
    source, result = str(graph.tensor_of(op.input).get_element_type()), str(op.output.type.get_element_type())
    x = as_full(kb, xs[0], dst, sizes)
    if source in ("i32", "i8") and result == "f32":
        kb.cast(x, dst, sizes)
    elif result == "i1":  # x != 0 as a 0/1 mask
        kb.binary_imm("cmp_eq", x, 0.0, dst, sizes)
        kb.binary_imm("cmp_eq", dst, 0.0, dst, sizes)
    else:  # same type, or i1 -> f32 (already a 0/1 mask)
        kb.unary("copy", x, dst, sizes)


def _emit_quantize(kb: KernelBuilder, op: Operation, xs: Xs, dst: Win, temps: Temps, sizes: Sizes):
    """saturate(round_half_even(x / scale) + zero point) into the i8 dst: the division as ONNX
    writes it (not a multiply by 1/scale), then one tile.cast that rounds, adds the zero point
    and saturates (exact integer steps, as ONNX's)."""
    x, scale, zero = xs
    scaled = temps[0]  # f32
    binary(kb, "div", x, scale, scaled, None, sizes)
    kb.cast(scaled, dst, sizes, zero=int(zero.value))


def _emit_dequantize(kb: KernelBuilder, op: Operation, xs: Xs, dst: Win, temps: Temps, sizes: Sizes):
    """(x - zero point) * scale: both steps are exact for 8/16-bit x, so the result equals
    ONNX's f32(x - zero point) * scale; a lone scalar scale rides on the cast with the zero
    point (one rounding of the exact product, the same value)."""
    x, scale, zero = xs
    assert x.win is not None  # the input has the result's shape: always a full tile
    if scale.kind == "imm":
        kb.cast(x.win, dst, sizes, scale.value, int(zero.value))
        return
    kb.cast(x.win, dst, sizes, zero=int(zero.value))
    binary(kb, "mul", Operand("full", dst), scale, dst, None, sizes)


def _emit_broadcast(kb: KernelBuilder, op: Operation, xs: Xs, dst: Win, temps: Temps, sizes: Sizes):
    if xs[0].kind == "full":
        assert xs[0].win is not None
        kb.unary("copy", xs[0].win, dst, sizes)
    else:
        as_full(kb, xs[0], dst, sizes)


# --------------------------------------------------------------------------- activations of matmul


ACTIVATION_TEMPS = {"gelu_tanh": 1}
"""Scratch tiles `apply_activation` needs per activation (none for the others)."""

GELU_TANH_OPS = ("mul", "mul", "mul", "add", "mul", "tanh", "add", "mul", "mul")


def activation_ops(name: str | None) -> tuple[str, ...]:
    """The vector ops `apply_activation` emits for `name` (for the cost model)."""
    if name in (None, "none"):
        return ()
    return {"relu6": ("max", "min"), "gelu_tanh": GELU_TANH_OPS}.get(name, (name,))


def apply_activation(kb: KernelBuilder, name: str | None, y: Win, temp: Win | None, sizes: Sizes) -> None:
    """y = activation(y) in place (after a bias add, where acc_read cannot apply it)."""
    if name in (None, "none"):
        return
    if name == "relu6":
        _emit_clamp(kb, y, 0.0, 6.0, sizes)
    elif name == "gelu_tanh":
        assert temp is not None
        gelu_tanh(kb, y, y, temp, sizes)
    else:
        kb.unary(name, y, y, sizes)


# --------------------------------------------------------------------------- table

EMITTERS: dict[type[Operation], tuple[Emit, int]] = {
    **{op: (_emit_binary, 1) for op in BINARY_NAMES},
    **{op: (_emit_unary, 0) for op in UNARY_NAMES},
    graph.XorOp: (_emit_xor, 1),
    graph.PowOp: (_emit_pow, 1),
    graph.PReluOp: (_emit_prelu, 3),
    graph.WhereOp: (_emit_where, 3),
    graph.NotOp: (_emit_not, 0),
    graph.SignOp: (_emit_sign, 2),
    graph.LeakyReluOp: (_emit_leaky_relu, 2),
    graph.EluOp: (_emit_elu, 2),
    graph.SeluOp: (_emit_elu, 2),
    graph.ClipOp: (_emit_clip, 0),
    graph.HardSigmoidOp: (_emit_hard_sigmoid, 0),
    graph.HardSwishOp: (_emit_hard_swish, 1),
    graph.SoftplusOp: (_emit_softplus, 2),
    graph.SoftsignOp: (_emit_softsign, 1),
    graph.GeluOp: (_emit_gelu, 1),
    graph.CastOp: (_emit_cast, 0),
    graph.BroadcastOp: (_emit_broadcast, 0),
    graph.QuantizeOp: (_emit_quantize, 1),
    graph.DequantizeOp: (_emit_dequantize, 0),
}
"""Elementwise op class -> (emitter, scratch tiles it needs at most; see `temps_needed`)."""


def temp_types(op: Operation, kinds: list[str], result_type: str) -> list[str]:
    """The element type of each scratch tile `op` needs (`temps_needed` of them): the result's
    compute type, except graph.quantize's f32 quotient."""
    if isinstance(op, graph.QuantizeOp):
        return ["f32"]
    return [result_type] * temps_needed(op, kinds)


def temps_needed(op: Operation, kinds: list[str]) -> int:
    """Scratch tiles `op` needs when its operands have broadcast `kinds`: a binary op only
    when its lhs broadcasts and cannot trade places, a where one per broadcast operand."""
    name = "cmp_eq" if isinstance(op, graph.XorOp) else BINARY_NAMES.get(type(op))
    if name is not None:
        lhs, rhs = kinds
        return 0 if lhs == "full" or (rhs == "full" and name in SWAPPED) else 1
    if isinstance(op, graph.WhereOp):
        return sum(kind != "full" for kind in kinds)
    return EMITTERS[type(op)][1]
