"""`aitc quantize`: a classifier trained on scikit-learn's digits keeps its answers in int8
(onnxruntime runs the QDQ model), every calibration method, onnxruntime's own quantize_static as
a cross-check, the calibration cache, and the command's error paths."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import aitc
from aitc.quantize import cache_dir, quantize_model
from aitc.quantize.calibrate import Range, _entropy, _percentile, calibrate
from aitc.reference import onnxruntime_session
from aitc.testing import model_zoo
from aitc.tools.aitc_main import main

TRAIN = model_zoo.DIGITS_TRAIN


@pytest.fixture(scope="module")
def digits() -> tuple[onnx.ModelProto, np.ndarray, np.ndarray]:
    return model_zoo.digits_mlp()


def _predict(model: onnx.ModelProto, images: np.ndarray) -> np.ndarray:
    logits = np.asarray(onnxruntime_session(model).run(None, {"x": images})[0])
    return np.argmax(logits, axis=1)


METHODS = [("minmax", False), ("minmax", True), ("percentile", False), ("entropy", True)]


@pytest.mark.parametrize(("method", "per_channel"), METHODS)
def test_int8_keeps_the_float_models_answers_on_held_out_digits(digits, method, per_channel):
    model, images, labels = digits
    quantized, report = quantize_model(model, {"x": images[:200]}, method, per_channel)
    onnx.checker.check_model(quantized)
    held_out = images[TRAIN:]
    float_top1, int8_top1 = _predict(model, held_out), _predict(quantized, held_out)
    agreement = float(np.mean(float_top1 == int8_top1))
    float_accuracy = float(np.mean(float_top1 == labels[TRAIN:]))
    int8_accuracy = float(np.mean(int8_top1 == labels[TRAIN:]))
    assert agreement >= 0.99, (agreement, float_accuracy, int8_accuracy)
    assert float_accuracy > 0.9
    assert int8_accuracy >= float_accuracy - 0.01
    assert [q["node"] for q in report.quantized] == ["fc1", "fc2"]
    ops = [n.op_type for n in quantized.graph.node]
    assert ops.count("QuantizeLinear") == 2  # x and h
    assert ops.count("DequantizeLinear") == 4  # x, h, w1, w2
    weights = {t.name: t for t in quantized.graph.initializer}
    assert "w1" not in weights  # replaced by its int8 form
    assert weights["w1_fc1_quantized"].data_type == TensorProto.INT8
    scale = numpy_helper.to_array(weights["w1_fc1_scale"])
    assert scale.shape == ((32,) if per_channel else ())


def test_activation_parameters_match_onnxruntimes_quantize_static(digits, tmp_path):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    model, images, _ = digits
    calibration = images[:200]

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.batches = iter([{"x": calibration[i : i + 1]} for i in range(len(calibration))])

        def get_next(self):
            return next(self.batches, None)

    source, theirs = tmp_path / "digits.onnx", tmp_path / "ort.int8.onnx"
    onnx.save(model, source)
    quantize_static(str(source), str(theirs), Reader(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)  # fmt: skip
    ort_model = onnx.load(str(theirs))
    ort_values = {t.name: numpy_helper.to_array(t) for t in ort_model.graph.initializer}
    ours, report = quantize_model(model, {"x": calibration}, "minmax")
    for entry, tensor in zip(report.quantized, ("x", "h"), strict=True):
        ort_scale, ort_zero = ort_values[f"{tensor}_scale"], ort_values[f"{tensor}_zero_point"]
        assert entry["input_scale"] == pytest.approx(float(ort_scale), rel=1e-6)
        assert entry["input_zero_point"] == int(ort_zero)
    agreement = np.mean(_predict(ours, images[TRAIN:]) == _predict(ort_model, images[TRAIN:]))
    assert agreement >= 0.99


def test_calibration_methods_on_a_known_distribution():
    histogram = np.zeros(2048, np.int64)
    histogram[:1024] = 100  # |x| uniform on [0, 5): half the bins of [0, 10]
    histogram[2047] = 1  # one outlier at 10
    assert _percentile(histogram, 10.0, 99.0) == pytest.approx(0.99 * 5.0, abs=0.01)
    assert _percentile(histogram, 10.0, 99.999) == pytest.approx(5.0)  # the outlier is the last 0.001%
    rng = np.random.default_rng(0)
    magnitudes = np.concatenate([np.abs(rng.standard_normal(200_000)), [9.0, 10.0]])  # a normal, two outliers
    threshold = _entropy(np.histogram(magnitudes, bins=2048, range=(0.0, 10.0))[0], 10.0)
    assert 3.5 < threshold < 5.0  # clips the outliers, keeps the normal's tail (4.41 here)
    values = np.linspace(-2.0, 3.0, 101, dtype=np.float32).reshape(101, 1)
    model = helper.make_model(
        helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "id",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1])]),
        opset_imports=[helper.make_opsetid("", 17)],
    )  # fmt: skip
    assert calibrate(model, {"x": values}, ["x"], "minmax") == {"x": Range(-2.0, 3.0)}
    symmetric = calibrate(model, {"x": values}, ["x"], "percentile", 100.0)["x"]
    assert symmetric.low == -symmetric.high
    assert symmetric.high == pytest.approx(3.0)


def test_calibration_is_cached(digits, tmp_path):
    model, images, _ = digits
    _, first = quantize_model(model, {"x": images[:64]}, "entropy", cache=tmp_path)
    again, second = quantize_model(model, {"x": images[:64]}, "entropy", per_channel=True, cache=tmp_path)
    assert (first.cached, second.cached) == (False, True)
    _, third = quantize_model(model, {"x": images[:65]}, "entropy", cache=tmp_path)
    assert third.cached is False  # other data, other entry
    assert len(list(tmp_path.iterdir())) == 2
    assert onnx.checker.check_model(again) is None


def test_excluded_nodes_stay_float(digits):
    model, images, _ = digits
    quantized, report = quantize_model(model, {"x": images[:64]}, exclude=["fc2"])
    assert [q["node"] for q in report.quantized] == ["fc1"]
    assert report.left_float == [("fc2", "excluded (--exclude)")]
    assert "w2" in {t.name for t in quantized.graph.initializer}


# --------------------------------------------------------------------------- the command


def run_cli(capsys, argv: Sequence[str | os.PathLike]) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_quantize_command_writes_a_model_onnxruntime_runs(capsys, monkeypatch, tmp_path, digits):
    model, images, _ = digits
    monkeypatch.setenv("AITC_CACHE_DIR", str(tmp_path / "cache"))
    source, data, out = tmp_path / "digits.onnx", tmp_path / "calibration.npz", tmp_path / "digits.int8.onnx"
    onnx.save(model, source)
    np.savez(data, x=images[:100])
    code, stdout, err = run_cli(
        capsys, ["quantize", source, "--calibration", data, "-o", out, "--per-channel"]
    )
    assert code == 0, err
    assert "2 node(s) quantized to int8 with minmax ranges" in stdout
    assert cache_dir() == tmp_path / "cache" / "calibration"
    assert len(list(cache_dir().iterdir())) == 1
    quantized = onnx.load(str(out))
    assert np.mean(_predict(quantized, images[TRAIN:]) == _predict(model, images[TRAIN:])) >= 0.99
    code, stdout, _ = run_cli(
        capsys, ["quantize", source, "--calibration", data, "-o", tmp_path / "b.onnx", "--per-channel"]
    )
    assert "(ranges from the calibration cache)" in stdout
    assert (tmp_path / "b.onnx").read_bytes() == out.read_bytes()  # deterministic


@pytest.mark.parametrize(
    "case", ["missing input", "extra input", "unknown exclude", "bad model", "output is input"]
)
def test_quantize_errors_write_nothing(capsys, monkeypatch, tmp_path, digits, case):
    model, images, _ = digits
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AITC_CACHE_DIR", str(tmp_path / "cache"))
    onnx.save(model, "m.onnx")
    np.savez("c.npz", **({"other": images[:4]} if case == "missing input" else {"x": images[:4]}))
    if case == "extra input":
        np.savez("c.npz", x=images[:4], y=images[:4])
    argv = ["quantize", "m.onnx", "--calibration", "c.npz", "-o", "out.onnx"]
    if case == "unknown exclude":
        argv += ["--exclude", "nosuch"]
    elif case == "bad model":
        Path("m.onnx").write_bytes(b"garbage")
    elif case == "output is input":
        argv[-1] = "m.onnx"
    elif case == "bad percentile":
        argv += ["--method", "percentile", "--percentile", "nan"]
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    code, _, err = run_cli(capsys, argv)
    assert code == 1
    assert "error:" in err
    assert "Traceback" not in err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before
    assert not Path("out.onnx").exists()


# --------------------------------------------------------------------------- aitc verify --float


def test_verify_against_float_ranks_exclusions_as_quantize_exclude_makes_them(digits):
    from aitc.compiler import CompileOptions
    from aitc.reference import onnxruntime_outputs
    from aitc.verify.metrics import compare
    from aitc.verify.quantized import verify_against_float

    model, images, _ = digits
    calibration, held_out = {"x": images[:200]}, images[TRAIN : TRAIN + 64]
    quantized, _ = quantize_model(model, calibration)
    options = CompileOptions(target="edge", cores=1, input_shapes={"x": list(held_out.shape)})
    report, gains = verify_against_float(quantized, model, options, "hw", {"x": held_out})
    assert [c.tensor for c in report.checks] == ["h0", "h1", "h", "y0", "logits"]
    assert not report.failures  # the int8 profile: cosine >= 0.99, SQNR >= 20 dB
    assert {g.node for g in gains} == {"fc1", "fc2"}
    assert gains[0].gain_db >= gains[1].gain_db
    want = onnxruntime_outputs(model, {"x": held_out})["logits"]

    def cycles(m: onnx.ModelProto) -> int:
        return (
            aitc.compile(m, "edge", input_shapes={"x": list(held_out.shape)})
            .simulate({"x": held_out})
            .stats.cycles
        )

    for gain in gains:  # the what-if equals quantizing with that node excluded, in accuracy and speed
        excluded, _ = quantize_model(model, calibration, exclude=[gain.node])
        got = onnxruntime_outputs(excluded, {"x": held_out})["logits"]
        assert gain.sqnr_db == pytest.approx(compare(got, want).sqnr_db, abs=1e-9)
        assert gain.cycles == cycles(excluded) - cycles(quantized)


def test_verify_float_command(capsys, monkeypatch, tmp_path, digits):
    model, images, _ = digits
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AITC_CACHE_DIR", str(tmp_path / "cache"))
    onnx.save(model, "f.onnx")
    quantized, _ = quantize_model(model, {"x": images[:100]})
    onnx.save(quantized, "q.onnx")
    np.savez("in.npz", x=images[TRAIN : TRAIN + 16])
    argv = [
        "verify",
        "q.onnx",
        "--float",
        "f.onnx",
        "--input-shape",
        "x=16x64",
        "--inputs",
        "in.npz",
        "--level",
        "graph",
    ]
    code, stdout, err = run_cli(capsys, argv)
    assert code == 0, err
    assert "int8 vs float" in stdout
    assert "nodes whose exclusion from quantization helps most" in stdout
    other = helper.make_model(
        helper.make_graph([helper.make_node("Identity", ["z"], ["logits"])], "other",
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, [16, 10])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [16, 10])]),
        opset_imports=[helper.make_opsetid("", 17)],
    )  # fmt: skip
    onnx.save(other, "other.onnx")
    code, _, err = run_cli(capsys, [*argv[:3], "other.onnx", *argv[4:]])
    assert code == 1
    assert "--float other.onnx: --input-shape names 'x', which is not a model input" in err
