"""The textual IR is lossless: print -> parse -> print gives the same text, every stored bit
(NaN payloads, -0.0, denormals, integer extremes) survives, and a re-parsed module computes
bit-identical outputs. Covers hand-made constants of every element type, exhaustive f16/bf16
bit patterns, every model the zoo builds, every ONNX node test aitc claims, the tile, sync and
hw levels, and the `.aitb` binary (asm -> disasm)."""

from __future__ import annotations

import functools
import re
import struct
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from xdsl.dialects.builtin import (
    AnyDenseElement,
    AnyFloat,
    BFloat16Type,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    FloatAttr,
    IndexType,
    IntegerType,
    ModuleOp,
    Signedness,
    TensorType,
    f16,
    f32,
    f64,
)

from aitc import binary
from aitc.compiler import CompileOptions, compile_module
from aitc.dialects import graph
from aitc.frontend.onnx_import import import_onnx
from aitc.frontend.onnx_ops import ONNX_OPS
from aitc.interp.run import entry_function, random_inputs, run_module
from aitc.ir import parse_mlir, print_mlir
from aitc.target import load_target
from aitc.testing import conformance, model_zoo
from aitc.tools.aitc_main import main
from aitc.weights import RESOURCES, array_to_attr, attr_to_array

F32_SPECIAL = [0xFF800000, 0x7F800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FBFFFFF, 0xFFC12345]
F32_SPECIAL += [0x80000000, 0x00000000, 0x00000001, 0x807FFFFF, 0x7F7FFFFF, 0x00800000, 0x4CEB79A3]
F64_SPECIAL = [0xFFF0000000000000, 0x7FF0000000000000, 0x7FF8000000000000, 0x7FF0000000000001]
F64_SPECIAL += [0xFFF8DEADBEEF0001, 0x8000000000000000, 0x0000000000000001, 0x7FEFFFFFFFFFFFFF]
F64_SPECIAL += [0x0010000000000000, 0x4345EE2A2EB5A5C4, 0x3FB999999999999A]
F16_SPECIAL = [0xFC00, 0x7C00, 0x7E00, 0x7C01, 0xFE01, 0x8000, 0x0000, 0x0001, 0x7BFF, 0x83FF]
"""Bit patterns: infinities, quiet and signalling NaNs with payloads, -0.0, denormals, the
largest finite values, and values whose short decimal form does not round-trip."""

INT_EXTREMES: dict[str, list[int]] = {
    "int8": [-128, 127, 0, -1],
    "uint8": [0, 255, 128, 1],
    "int16": [-32768, 32767, 0, -1],
    "int32": [-(2**31), 2**31 - 1, 0, -1],
    "uint32": [0, 2**32 - 1, 2**31, 1],
    "int64": [-(2**63), 2**63 - 1, 0, -1],
    "uint64": [0, 2**64 - 1, 2**63, 1],
    "bool": [True, False, True, True],
}


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal dtype, shape and bytes: NaN payloads and -0.0 compare bitwise."""
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a.view(np.uint8), b.view(np.uint8))


def assert_same_outputs(left: Mapping[str, np.ndarray], right: Mapping[str, np.ndarray]) -> None:
    assert left.keys() == right.keys()
    different = [name for name in left if not same_bits(left[name], right[name])]
    assert not different, f"outputs differ bitwise after the text round trip: {different}"


ELIDED_YIELD_LOC = re.compile(r'("scf\.yield"\(\) : \(\) -> \(\)) loc\((?:[^()"]|"[^"]*")*\)')
"""The custom form of `scf.for` omits an operand-less `scf.yield`, and with it the yield's
location (as upstream MLIR does): the one piece of the generic form the text does not keep."""


def round_trip(module: ModuleOp) -> ModuleOp:
    """The re-parsed module, after checking that printing it gives the same text (and the
    same generic form, up to the locations of elided terminators)."""
    text = print_mlir(module)
    again = parse_mlir(text, "round-trip.mlir")
    assert print_mlir(again) == text
    generic = ELIDED_YIELD_LOC.sub(r"\1", print_mlir(module, generic=True))
    assert print_mlir(again, generic=True) == generic
    return again


def constants_module(attrs: Mapping[str, DenseIntOrFPElementsAttr | DenseResourceAttr]) -> ModuleOp:
    """`func.func @main()` returning one `graph.constant` per entry, named after its key
    (built through the parser, so the constants' text is read once already)."""
    types = {k: str(a.get_type()) for k, a in attrs.items()}
    results = ", ".join(f'{t} {{graph.name = "{k}"}}' for k, t in types.items())
    body = [f"  %{k} = graph.constant {a}" for k, a in attrs.items()]
    values, result_types = ", ".join("%" + k for k in attrs), ", ".join(types.values())
    lines = [f"func.func @main() -> ({results}) {{", *body, f"  func.return {values} : {result_types}", "}"]
    return parse_mlir("\n".join(lines))


def raw_attr(element: AnyDenseElement, shape: list[int], data: bytes) -> DenseIntOrFPElementsAttr:
    return DenseIntOrFPElementsAttr(TensorType(element, shape), BytesAttr(data))


# --------------------------------------------------------------------------- hand-made constants


def special_constants() -> dict[str, DenseIntOrFPElementsAttr]:
    """Inline `dense<...>` constants holding every special value, as lists and as splats."""
    attrs = {
        "f32": raw_attr(f32, [len(F32_SPECIAL)], struct.pack(f"<{len(F32_SPECIAL)}I", *F32_SPECIAL)),
        "f64": raw_attr(f64, [len(F64_SPECIAL)], struct.pack(f"<{len(F64_SPECIAL)}Q", *F64_SPECIAL)),
        "f16": raw_attr(f16, [len(F16_SPECIAL)], struct.pack(f"<{len(F16_SPECIAL)}H", *F16_SPECIAL)),
        "zeros": raw_attr(f32, [2, 2], struct.pack("<4f", 0.0, -0.0, -0.0, 0.0)),
        "neg_zero_splat": raw_attr(f32, [3], struct.pack("<3f", -0.0, -0.0, -0.0)),
        "snan_splat": raw_attr(f32, [2], struct.pack("<2I", 0x7F800001, 0x7F800001)),
        "rank0_ninf": raw_attr(f32, [], struct.pack("<I", 0xFF800000)),
        "empty": raw_attr(f32, [0], b""),
        "empty_2d": raw_attr(IntegerType(64), [2, 0], b""),
        "long_hex": raw_attr(f32, [101], struct.pack("<101I", *(F32_SPECIAL * 8)[:101])),
    }
    for name, values in INT_EXTREMES.items():
        attrs[name] = array_attr_inline(np.array(values, dtype=name))
    return attrs


def array_attr_inline(array: np.ndarray) -> DenseIntOrFPElementsAttr:
    attr = array_to_attr(array)
    assert isinstance(attr, DenseIntOrFPElementsAttr)
    return attr


def test_special_constants_keep_every_bit_and_run_identically():
    attrs = special_constants()
    module = constants_module(attrs)
    again = round_trip(module)
    for op, op_again in zip(module.walk(), again.walk(), strict=True):
        if isinstance(op, graph.ConstantOp):
            assert op.attributes["value"] == op_again.attributes["value"]
    outputs = run_module(again, {})
    for name, attr in attrs.items():
        assert same_bits(outputs[name], attr_to_array(attr)), name
    assert_same_outputs(run_module(module, {}), outputs)


def test_printed_forms_of_special_values():
    text = print_mlir(constants_module(special_constants()))
    assert "dense<[0xff800000, 0x7f800000, 0x7fc00000, 0xffc00000, 0x7f800001," in text
    assert "dense<[0.000000e+00, -0.000000e+00], [-0.000000e+00, 0.000000e+00]]>" not in text
    assert "dense<[[0.000000e+00, -0.000000e+00], [-0.000000e+00, 0.000000e+00]]>" in text
    assert "dense<-0.000000e+00> : tensor<3xf32>" in text
    assert "dense<0x7f800001> : tensor<2xf32>" in text
    assert "0x7c01, 0xfe01" in text, "f16 NaN payloads"
    assert "dense<[-9223372036854775808, 9223372036854775807, 0, -1]> : tensor<4xi64>" in text
    assert "dense<[0, 18446744073709551615, 9223372036854775808, 1]> : tensor<4xui64>" in text
    assert "dense<[true, false, true, true]> : tensor<4xi1>" in text


def test_resource_constants_keep_every_bit():
    f32_bits = np.array(F32_SPECIAL * 4, dtype=np.uint32).view(np.float32)
    arrays = {
        "f32": f32_bits,
        "f64": np.array(F64_SPECIAL * 2, dtype=np.uint64).view(np.float64),
        "f16": np.array(F16_SPECIAL * 4, dtype=np.uint16).view(np.float16),
        "bools": np.array([True, False] * 40),
        **{k: np.array(v * 20, dtype=k) for k, v in INT_EXTREMES.items() if k != "bool"},
    }
    module = constants_module({k: array_to_attr(v, k) for k, v in arrays.items()})
    text = print_mlir(module)
    assert text.count("dense_resource<") == len(arrays)
    for key in [k for k in RESOURCES.arrays if any(k.startswith(n + "_") for n in arrays)]:
        del RESOURCES.arrays[key]  # make the re-parsed module decode its blobs
    outputs = run_module(round_trip(module), {})
    for name, array in arrays.items():
        assert same_bits(outputs[name], array), name


def test_hex_string_literal_is_read_as_bytes():
    data = struct.pack("<3I", 0xFF800000, 0x7F800001, 0x80000000)
    text = f'%0 = graph.constant dense<"0x{data.hex().upper()}"> : tensor<3xf32>'
    (op,) = [op for op in parse_mlir(text).walk() if isinstance(op, graph.ConstantOp)]
    assert op.attributes["value"] == raw_attr(f32, [3], data)


# --------------------------------------------------------------------------- every bit pattern


def patterns_round_trip(element: AnyFloat, bits: list[int], width: int) -> None:
    """`bits` as constants of 100 elements (a non-splat list each) survive print -> parse."""
    code = {16: "H", 32: "I", 64: "Q"}[width]
    chunks = [bits[i : i + 100] for i in range(0, len(bits), 100)]
    ops = [graph.ConstantOp(raw_attr(element, [len(c)], struct.pack(f"<{len(c)}{code}", *c))) for c in chunks]
    module = ModuleOp(ops)
    again = round_trip(module)
    parsed = [op.attributes["value"] for op in again.walk() if isinstance(op, graph.ConstantOp)]
    assert parsed == [op.attributes["value"] for op in ops]


@pytest.mark.parametrize("element", [f16, BFloat16Type()], ids=["f16", "bf16"])
def test_every_16_bit_pattern(element: AnyFloat):
    bits = list(range(1 << 16))
    bits[1], bits[2] = bits[2], bits[1]  # no chunk is a splat
    patterns_round_trip(element, bits, 16)


def sampled_bits(width: int, mantissa_bits: int, seed: int) -> list[int]:
    """Every sign and exponent, each with the extreme and some random mantissas."""
    rng = np.random.default_rng(seed)
    top = 1 << (width - mantissa_bits)
    mantissas = [0, 1, 2, 1 << (mantissa_bits - 1), (1 << mantissa_bits) - 1]
    bits = []
    for high in range(top):
        extra = rng.integers(0, 1 << mantissa_bits, size=3, dtype=np.uint64).tolist()
        bits += [(high << mantissa_bits) | m for m in (*mantissas, *extra)]
    return bits


def test_f32_bit_patterns():
    patterns_round_trip(f32, sampled_bits(32, 23, seed=1), 32)


def test_f64_bit_patterns():
    patterns_round_trip(f64, sampled_bits(64, 52, seed=2)[::2], 64)


def test_scalar_and_array_float_attributes():
    f64_values = [struct.unpack("<d", struct.pack("<Q", b))[0] for b in F64_SPECIAL]
    module = ModuleOp([])
    for i, value in enumerate(f64_values):
        module.attributes[f"s{i}"] = FloatAttr(value, f64)
    module.attributes["neg_zero_f32"] = FloatAttr(-0.0, f32)
    module.attributes["ninf_f16"] = FloatAttr(float("-inf"), f16)
    for name, (element, code, bits) in {
        "a32": (f32, "I", F32_SPECIAL),
        "a64": (f64, "Q", F64_SPECIAL),
        "a16": (f16, "H", F16_SPECIAL),
    }.items():
        module.attributes[name] = DenseArrayBase(
            element, BytesAttr(struct.pack(f"<{len(bits)}{code}", *bits))
        )
    again = round_trip(module)
    for key, attr in module.attributes.items():
        if isinstance(attr, FloatAttr):  # a scalar holds a Python float: compare its bits
            parsed = again.attributes[key]
            assert isinstance(parsed, FloatAttr)
            assert struct.pack("<d", parsed.value.data) == struct.pack("<d", attr.value.data)
        else:
            assert again.attributes[key] == attr, key


def test_integer_attribute_extremes():
    module = ModuleOp([])
    cases: dict[str, tuple[IntegerType | IndexType, list[int]]] = {
        "i64": (IntegerType(64), [-(2**63), 2**63 - 1]),
        "ui64": (IntegerType(64, Signedness.UNSIGNED), [2**64 - 1]),
    }
    cases["si8"] = (IntegerType(8, Signedness.SIGNED), [-128, 127])
    cases["index"] = (IndexType(), [-(2**63), 2**63 - 1])
    for name, (element, values) in cases.items():
        module.attributes[name] = raw_attr(element, [len(values)], element.pack(values))
    again = round_trip(module)
    assert again.attributes == module.attributes


# --------------------------------------------------------------------------- models


ZOO_CASES: dict[str, tuple[Callable, dict]] = {
    "mlp": (model_zoo.mlp, {}),
    "cnn_bn_pool": (model_zoo.cnn_bn_pool, {}),
    "residual_block": (model_zoo.residual_block, {}),
    "depthwise_separable": (model_zoo.depthwise_separable, {}),
    "transformer": (model_zoo.transformer_encoder_layer, {"hidden": 16, "heads": 2, "seq": 4, "ffn": 32}),
    "encoder": (
        model_zoo.encoder,
        {"layers": 1, "hidden": 16, "heads": 2, "ffn": 32, "seq": 4, "vocab": 10, "batch": 2},
    ),
    "bert_torch_export": (
        model_zoo.bert_torch_export,
        {"layers": 1, "hidden": 16, "heads": 2, "ffn": 32, "seq": 4, "vocab": 20, "max_positions": 8},
    ),
    "mlp_with_host_ops": (model_zoo.mlp_with_host_ops, {}),
}
"""Every builder of the zoo, at small sizes."""


@functools.cache
def zoo_case(name: str):
    builder, kwargs = ZOO_CASES[name]
    model, inputs = builder(**kwargs)
    return model, inputs, {k: list(v.shape) for k, v in inputs.items()}


def test_zoo_covers_every_builder():
    assert {builder for builder, _ in ZOO_CASES.values()} == set(model_zoo.ZOO.values())


@pytest.mark.parametrize("name", list(ZOO_CASES))
def test_zoo_model_at_graph_level(name: str):
    model, inputs, shapes = zoo_case(name)
    module = import_onnx(model, shapes)
    assert_same_outputs(run_module(module, inputs), run_module(round_trip(module), inputs))


EXAMPLE_MODELS = sorted((Path(__file__).parents[3] / "examples" / "models").glob("*.onnx"))


@pytest.mark.parametrize("path", EXAMPLE_MODELS, ids=lambda p: p.stem)
def test_bundled_example_model_at_graph_level(path: Path):
    """The exported models users start from (a torch-export BERT among them)."""
    module = import_onnx(path)
    given = path.with_suffix(".inputs.npz")  # token ids must index the embedding table
    inputs = dict(np.load(given)) if given.exists() else random_inputs(entry_function(module), seed=3)
    assert_same_outputs(run_module(module, inputs), run_module(round_trip(module), inputs))


def test_minus_inf_padding_survives_import_to_text_through_the_cli(tmp_path: Path, capsys):
    """The reported data loss, as a user met it: a ReduceMax over -inf padding was right with
    `aitc run model.onnx` and NaN after `aitc import -o m.mlir` + `aitc run m.mlir`."""
    pad = numpy_helper.from_array(np.full((2, 2), -np.inf, np.float32), "pad")
    nodes = [
        helper.make_node("Concat", ["x", "pad"], ["padded"], axis=1, name="concat"),
        helper.make_node("ReduceMax", ["padded"], ["y"], keepdims=0, axes=[1], name="max"),
    ]
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 6])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])
    graph_ = helper.make_graph(nodes, "byte_classifier", [x], [y], [pad])
    onnx.save(helper.make_model(graph_, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", x=np.array([[-np.inf] * 6, [-3, -2, -1, -4, -5, -6]], np.float32))
    run = ["run", "--inputs", str(tmp_path / "in.npz"), "--outputs"]
    assert main(["import", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.mlir")]) == 0
    assert "0xff800000" in (tmp_path / "m.mlir").read_text()
    assert main([run[0], str(tmp_path / "m.onnx"), *run[1:], str(tmp_path / "a.npz")]) == 0
    assert main([run[0], str(tmp_path / "m.mlir"), *run[1:], str(tmp_path / "b.npz")]) == 0
    direct, through_text = np.load(tmp_path / "a.npz")["y"], np.load(tmp_path / "b.npz")["y"]
    assert same_bits(direct, through_text)
    np.testing.assert_array_equal(through_text, [-np.inf, -1.0])


LOWERED = ["mlp", "cnn_bn_pool", "transformer", "mlp_with_host_ops"]
"""Small models compiled for `tiny` and checked at every level below graph."""


@functools.cache
def lowered(name: str, level: str) -> ModuleOp:
    model, _, shapes = zoo_case(name)
    return compile_module(model, CompileOptions(target="tiny", emit=level, input_shapes=shapes)).module


@pytest.mark.parametrize("level", ["graph", "tile", "sync", "hw"])
@pytest.mark.parametrize("name", LOWERED)
def test_compiled_levels(name: str, level: str):
    module = lowered(name, level)
    again = round_trip(module)
    if level in ("tile", "sync"):
        _, inputs, _ = zoo_case(name)
        assert_same_outputs(run_module(module, inputs), run_module(again, inputs))


@pytest.mark.parametrize("name", LOWERED)
def test_hw_binary_round_trip(name: str, tmp_path: Path):
    module = lowered(name, "hw")
    target = load_target("tiny")
    path = tmp_path / f"{name}.aitb"
    binary.save_program(path, module, target)
    decoded = binary.load_program(path, target)
    assert print_mlir(decoded) == print_mlir(module)
    assert print_mlir(round_trip(decoded)) == print_mlir(module)


def test_hw_constants_with_special_values_survive_the_binary():
    values = np.array(F32_SPECIAL * 2, dtype=np.uint32).view(np.float32)
    text = f"""
hw.program @specials target "tiny" {{
  hw.tensor "y" output dram[0x0] : tensor<{values.size}xf32>
  hw.const dram[0x100] = {array_to_attr(values, "specials")}
  hw.const dram[0x400] = {array_to_attr(values[:4])}
  hw.core 0 {{
    hw.end
  }}
}}
"""
    module = parse_mlir(text)
    decoded = binary.disassemble(binary.assemble(round_trip(module), load_target("tiny")))
    assert print_mlir(decoded) == print_mlir(module)


# --------------------------------------------------------------------------- ONNX node tests


@functools.cache
def node_tests() -> dict[str, list[conformance.NodeTest]]:
    by_op: dict[str, list[conformance.NodeTest]] = {}
    for test in conformance.select(conformance.load_tests(), ONNX_OPS):
        by_op.setdefault(test.op_type, []).append(test)
    return by_op


def node_test_round_trip(test: conformance.NodeTest) -> str | None:
    """None if the imported node test survives the text round trip, bit for bit."""
    inputs, _ = conformance._load_data_set(test.data_sets()[0], test.model)
    module = conformance._import(conformance.bind_static_inputs(test.model, inputs), inputs)
    if isinstance(module, conformance.Result):
        return None if module.status == "unsupported" else f"{test.name}: {module.detail}"
    text = print_mlir(module)
    again = parse_mlir(text, f"{test.name}.mlir")
    if print_mlir(again) != text:
        return f"{test.name}: print -> parse -> print changed the text"
    expected, actual = run_module(module, inputs), run_module(again, inputs)
    different = [k for k in expected if not same_bits(expected[k], actual[k])]
    return f"{test.name}: outputs {different} differ" if different else None


def test_every_claimed_onnx_node_test():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tests = [t for group in node_tests().values() for t in group]
        problems = [p for t in tests if (p := node_test_round_trip(t))]
    assert len(tests) >= 500
    assert not problems, "\n".join(problems)
