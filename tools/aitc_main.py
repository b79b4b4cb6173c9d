"""aitc: the model deployer's command line.

    aitc import MODEL.onnx -o OUT.mlir [--input-shape NAME=1x3x224x224] [--target NAME|FILE.toml]
    aitc check MODEL.onnx [--input-shape NAME=1x3x224x224] | aitc check --ops
    aitc compile MODEL.onnx|FILE.mlir -o OUT.aitb [--target NAME|FILE.toml] [--emit LEVEL]
    aitc compile MODEL.onnx|FILE.mlir --print-pipeline [--target ...] [--emit LEVEL]
    aitc run FILE.mlir|MODEL.onnx|PROG.aitb [--inputs IN.npz] [--outputs OUT.npz] [--trace T.json]
                                             [--stats] [--stats-json S.json]
    aitc perf MODEL.onnx|PROG.aitb [-o DIR] [--target NAME|FILE.toml] [--cores N] [--inputs IN.npz]
    aitc verify MODEL.onnx [-o DIR] [--level graph|tile|sync|hw] [--mode entire|single|both] [--bisect]
    aitc quantize MODEL.onnx --calibration DATA.npz [--method minmax|entropy|percentile] -o OUT.onnx
    aitc asm PROG.mlir -o PROG.aitb [--target NAME|FILE.toml]
    aitc disasm PROG.aitb [-o OUT.mlir] [--target NAME|FILE.toml]
    aitc target list | aitc target show NAME|FILE.toml

Every user error prints `FILE: error: ...` lines and exits with status 1, never a traceback
(set AITC_DEBUG=1 to see one for internal errors). Output paths are checked before any work
and written all or none at the end (`aitc.files`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from aitc.diagnostics import AitcError, run_command

if TYPE_CHECKING:
    from aitc.tune import TuneOptions


def _parse_shape(text: str) -> tuple[str, list[int]]:
    name, sep, dims = text.rpartition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=D0xD1x..., got '{text}'")
    try:
        shape = [int(d) for d in dims.lower().split("x")] if dims else []
    except ValueError:
        raise argparse.ArgumentTypeError(f"dims must be integers separated by 'x', got '{dims}'") from None
    if any(d <= 0 for d in shape):
        raise argparse.ArgumentTypeError(f"dims must be positive, got '{dims}'")
    return name, shape


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds >= 0, got '{text}'")
    return value


def _seed(text: str) -> int:
    try:
        seed = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got '{text}'") from None
    if not 0 <= seed < 2**63:
        raise argparse.ArgumentTypeError(f"a seed is in 0..2**63-1, got {seed}")
    return seed


def cmd_import(args: argparse.Namespace) -> int:
    from aitc.files import check_outputs
    from aitc.frontend.onnx_import import import_onnx
    from aitc.ir import print_mlir
    from aitc.module_target import record_target

    check_outputs([args.output], [args.model, args.target])
    module = import_onnx(args.model, dict(args.input_shape or []))
    if args.target is not None:
        record_target(module, args.target, given_by="--target")
    _emit_text(print_mlir(module, generic=args.generic), args.output)
    return 0


def _emit_text(text: str, output: str | None) -> None:
    """Writes `text` to `output` atomically, or to stdout when no -o was given."""
    from aitc.files import write_atomic

    if output is not None:
        write_atomic(output, text)
    else:
        sys.stdout.write(text)


def cmd_compile(args: argparse.Namespace) -> int:
    """ONNX or .mlir -> a binary (default) or, with --emit LEVEL, .mlir at that level; with
    --print-pipeline, the `aitc-opt -p` string of the passes it would run."""
    from aitc.binary import declared_target, save_program
    from aitc.compiler import CompileOptions, compile_module, compile_pipeline_spec, format_report
    from aitc.files import check_outputs
    from aitc.ir import print_mlir
    from aitc.target import load_target

    emit = args.emit or "hw"
    options = CompileOptions(
        target=args.target, depth=args.depth, emit=emit, optimize=not args.no_optimize,
        host_fallback=not args.no_host_fallback, input_shapes=dict(args.input_shape or []),
        cores=args.cores, shard=args.shard, verify_each=args.verify_each, conv_layout=args.conv_layout,
    )  # fmt: skip
    if args.print_pipeline:
        print(compile_pipeline_spec(args.model, options))
        return 0
    if args.emit is None and args.output is None:
        raise AitcError("aitc compile needs -o OUT.aitb (or --emit LEVEL to print .mlir)")
    tune = _tune_options(args)
    check_outputs([args.output, tune.cache if tune else None], [args.model, args.target])
    if args.target is not None:
        load_target(args.target)  # a bad --target fails before the compile
    if tune is not None:
        from aitc.tune import compile_tuned

        result = compile_tuned(args.model, options, tune)
    else:
        result = compile_module(args.model, options)
    if args.emit is None:
        target = load_target(result.target) if result.target else declared_target(result.module)
        size = save_program(args.output, result.module, target)
        print(format_report(result))
        print(f"wrote {args.output}: {size} bytes for target '{target.name}'")
    else:
        _emit_text(print_mlir(result.module), args.output)
        if args.output is not None:
            print(format_report(result))
    return 0


def _tune_options(args: argparse.Namespace) -> TuneOptions | None:
    """`aitc.tune.TuneOptions` of --tune and its flags (the cache path resolved), None without
    --tune; an AitcError for --tune-* flags without --tune."""
    given = (
        ("--tune-cache", args.tune_cache),
        ("--tune-seconds", args.tune_seconds),
        ("--tune-candidates", args.tune_candidates),
    )
    flags = [flag for flag, value in given if value is not None]
    if not args.tune:
        if flags:
            raise AitcError(f"{', '.join(flags)} without --tune does nothing: add --tune, or drop them")
        return None
    from aitc.tune import DEFAULT_SECONDS, SHORT_LIST, TuneOptions, default_cache_path

    cache = Path(args.tune_cache) if args.tune_cache else default_cache_path()
    seconds = DEFAULT_SECONDS if args.tune_seconds is None else args.tune_seconds
    return TuneOptions(cache, seconds, args.tune_candidates or SHORT_LIST)


def cmd_check(args: argparse.Namespace) -> int:
    """The per-node table, then exactly the errors `aitc import` would stop with (it runs the
    whole import in memory and writes nothing), so both accept and reject the same models."""
    from aitc.frontend.onnx_import import check_model
    from aitc.frontend.onnx_ops import ONNX_OPS
    from aitc.report import format_table

    if args.ops:
        rows = [(name, entry.status, entry.note) for name, entry in sorted(ONNX_OPS.items())]
        print(format_table(["op type", "status", "how"], rows))
        print(f"{len(ONNX_OPS)} ONNX op types claimed")
        return 0
    if not args.model:
        raise AitcError("aitc check needs MODEL.onnx (or --ops)")
    report = check_model(args.model, dict(args.input_shape or []))
    rows = [(r.name, r.op_type, r.status, r.reason) for r in report.nodes]
    print(format_table(["node", "op type", "status", "reason"], rows))
    counts = {s: sum(r.status == s for r in report.nodes) for s in ("supported", "decomposed", "unsupported")}
    invalid = sum(r.status == "invalid" for r in report.nodes)
    print(", ".join(f"{n} {s}" for s, n in counts.items()) + (f", {invalid} invalid" if invalid else ""))
    if report.error is not None:
        raise report.error  # printed by main() as `aitc import` prints it
    return 0


def _input_shapes(args: argparse.Namespace, model: str, inputs) -> dict[str, list[int]]:
    """--input-shape, plus the shape of each --inputs array whose ONNX input has a dynamic dim
    that --input-shape leaves unpinned: the arrays decide, as they do for onnxruntime."""
    shapes = {name: list(dims) for name, dims in (args.input_shape or [])}
    if not inputs or not str(model).endswith(".onnx"):
        return shapes
    for name in _dynamic_inputs(model):
        if name not in shapes and name in inputs:
            shapes[name] = [int(d) for d in np.shape(inputs[name])]
    return shapes


def _dynamic_inputs(model: str) -> list[str]:
    """The graph inputs of ONNX file `model` with a symbolic or unknown dim (none when the file
    does not load: the command's own load then reports why)."""
    import onnx

    try:
        graph = onnx.load(model, load_external_data=False).graph
    except Exception:  # any damage: the import that follows names it
        return []
    initializers = {t.name for t in graph.initializer}
    return [
        value.name
        for value in graph.input
        if value.name not in initializers
        and any(not d.HasField("dim_value") for d in value.type.tensor_type.shape.dim)
    ]


def _load_module(path: str, input_shapes):
    from aitc.files import read_text
    from aitc.frontend.onnx_import import import_onnx
    from aitc.ir import parse_mlir, require_weights

    if path.endswith(".onnx"):
        return import_onnx(path, dict(input_shapes or []))
    module = parse_mlir(read_text(path), path)
    require_weights(module)
    return module


def cmd_run(args: argparse.Namespace) -> int:
    """Runs graph-level IR on the reference interpreter, or a hw program (.mlir or .aitb) on the
    simulator; writes or summarises the outputs."""
    from aitc.files import PathLike, arrays_to_npz, check_outputs, load_arrays, write_outputs
    from aitc.interp.run import holds_hw_program
    from aitc.report import summarize_outputs

    check_outputs([args.outputs, args.trace, args.stats_json], [args.file, args.inputs, args.target])
    inputs = load_arrays(args.inputs) if args.inputs else None
    shapes = _input_shapes(args, args.file, inputs)
    module = None if args.file.endswith(".aitb") else _load_module(args.file, list(shapes.items()))
    files: dict[PathLike, str | bytes] = {}
    if module is None or holds_hw_program(module):
        outputs, reports = _simulate(args, module, inputs)
        files.update(reports)
    else:
        outputs = _interpret(args, module, inputs)
    if args.outputs is not None:
        files[args.outputs] = arrays_to_npz(outputs)
    write_outputs(files, [args.file, args.inputs, args.target])
    if args.trace is not None:
        print(f"trace written to {args.trace} (open in https://ui.perfetto.dev or chrome://tracing)")
    if args.stats_json is not None:
        print(f"statistics written to {args.stats_json}")
    if args.outputs is not None:
        print(f"wrote {len(outputs)} output(s) to {args.outputs}")
    else:
        print(summarize_outputs(outputs))
    return 0


def cmd_perf(args: argparse.Namespace) -> int:
    """Compiles and simulates once with a trace; prints per node the estimate next to the
    simulated cycles, what bounds each node and the critical path; with -o DIR also writes
    `aitc.perf.FILES` there (the folder is made if missing, never half-filled)."""
    from aitc.compiler import CompileOptions
    from aitc.files import check_outputs, load_arrays
    from aitc.perf import FILES, format_perf, profile_model, report_files

    folder = _report_folder(args.output) if args.output is not None else None
    sources = [args.model, args.inputs, args.target]
    if folder is not None and folder.is_dir():
        check_outputs([folder / name for name in FILES], sources)
    inputs = load_arrays(args.inputs) if args.inputs else None
    options = CompileOptions(
        target=args.target, input_shapes=_input_shapes(args, args.model, inputs), cores=args.cores,
        conv_layout=args.conv_layout,
    )  # fmt: skip
    report = profile_model(args.model, options, inputs, args.seed)
    print(format_perf(report, args.top))
    if folder is None:
        return 0
    _write_folder(folder, args.output, report_files(report), sources)
    print(f"wrote {', '.join(FILES)} to {folder}/ (open perf.html; trace.json in https://ui.perfetto.dev)")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    """Every node's outputs compiled to --level against onnxruntime (entire and/or single
    mode); prints the table, writes the snapshot with -o DIR, and exits 1 when a tensor is
    outside its dtype's tolerance."""
    from aitc.compiler import CompileOptions
    from aitc.files import load_arrays
    from aitc.verify import format_verify, snapshot_files, verify_model

    folder = _report_folder(args.output) if args.output is not None else None
    sources = [args.model, args.inputs, args.target]
    inputs = load_arrays(args.inputs) if args.inputs else None
    shapes = _input_shapes(args, args.model, inputs)
    options = CompileOptions(target=args.target, input_shapes=shapes, cores=args.cores)
    modes = ("entire", "single") if args.mode == "both" else (args.mode,)
    if args.float is not None:
        from aitc.verify.quantized import format_exclusions, verify_against_float

        sources.append(args.float)
        report, gains = verify_against_float(args.model, args.float, options, args.level, inputs, args.seed)
        print(format_verify(report, args.all))
        print("(against the float model, float tensors are judged by the int8 profile)")
        print(format_exclusions(gains))
    else:
        report = verify_model(args.model, options, args.level, modes, inputs, args.seed, args.bisect)
        print(format_verify(report, args.all))
    if folder is not None:
        _write_folder(folder, args.output, snapshot_files(report), sources)
        print(f"wrote the snapshot to {folder}/ (names.json maps tensor names to .npy files)")
    if report.failures:
        first = report.failures[0]
        raise AitcError(
            f"{len(report.failures)} tensor(s) outside tolerance, the first '{first.tensor}' of node "
            f"'{first.node}' ({first.mode} mode): {first.comparison.problem if first.comparison else ''}"
        )
    return 0


def cmd_quantize(args: argparse.Namespace) -> int:
    """Calibrates on --calibration, writes the QDQ model to -o, prints per quantized node its
    input's scale and zero point (and the nodes left float)."""
    from aitc.files import check_outputs, load_arrays, write_outputs
    from aitc.frontend.onnx_import import check_onnx, load_model, validate
    from aitc.quantize import cache_dir, quantize_model
    from aitc.report import format_table

    sources = [args.model, args.calibration]
    check_outputs([args.output], sources)
    model = load_model(args.model)
    validate(model)  # the import's checks (dynamic dims are fine: the samples set them)
    check_onnx(model)
    samples = load_arrays(args.calibration)
    cache = None if args.no_cache else cache_dir()
    quantized, report = quantize_model(
        model, samples, args.method, args.per_channel, args.exclude or [], args.percentile, cache
    )
    rows = [
        [
            q["node"],
            q["op_type"],
            f"{q['input_scale']:.6g}",
            q["input_zero_point"],
            _scales(q["weight_scale"]),
        ]
        for q in report.quantized
    ]
    print(
        format_table(["node", "op", "input scale", "zero point", "weight scale"], rows)
        if rows
        else "(no node quantized)"
    )
    for node, reason in report.left_float:
        print(f"left float: {node}: {reason}")
    cached = " (ranges from the calibration cache)" if report.cached else ""
    print(f"{len(report.quantized)} node(s) quantized to int8 with {report.method} ranges{cached}")
    write_outputs({args.output: quantized.SerializeToString()}, sources)
    print(f"wrote {args.output} (QDQ format: onnxruntime runs it)")
    return 0


def _scales(values) -> str:
    values = values if isinstance(values, list) else [values]
    return (
        f"{values[0]:.6g}"
        if len(values) == 1
        else f"{len(values)} channels, {min(values):.3g}..{max(values):.3g}"
    )


def _write_folder(folder: Path, given: str | None, files: dict[str, bytes | str], sources: list) -> None:
    """Writes `files` (relative paths) under `folder`, made if missing (with the subfolders the
    paths name), all or none: a failure removes what this call made."""
    from aitc.files import check_outputs, write_outputs

    made = [] if folder.exists() else [folder]
    try:
        for sub in sorted({folder / Path(name).parent for name in files} | {folder}):
            if not sub.exists():
                sub.mkdir(parents=True)
                made.append(sub)
        check_outputs([folder / name for name in files], sources)
        write_outputs({folder / name: data for name, data in files.items()}, sources)
    except OSError as error:
        _remove(made)
        raise AitcError(f"-o {given}: cannot write there: {error.strerror or error}") from None
    except BaseException:
        _remove(made)
        raise


def _remove(folders: list[Path]) -> None:
    for folder in reversed(folders):
        shutil.rmtree(folder, ignore_errors=True)


def _report_folder(path: str) -> Path:
    """The folder `-o` names: an existing folder, or a new one whose parent exists."""
    folder = Path(path)
    if path in ("", "-"):
        raise AitcError(f"-o '{path}': this command writes several files: name a folder")
    try:
        if folder.is_symlink() and not folder.is_dir():
            raise AitcError(f"-o {path}: a symlink that is not a folder (name a folder)")
        if folder.exists() and not folder.is_dir():
            raise AitcError(f"-o {path}: not a folder (this command writes several files: name a folder)")
        if not folder.exists() and not folder.absolute().parent.is_dir():
            raise AitcError(f"-o {path}: its parent folder does not exist")
    except OSError as error:
        raise AitcError(f"-o {path[:60]}: {error.strerror or error}") from None
    return folder


def _interpret(args: argparse.Namespace, module, inputs) -> dict[str, np.ndarray]:
    from aitc.interp.run import entry_function, input_names, random_inputs, run_module

    if args.trace is not None or args.stats or args.stats_json is not None or args.target:
        raise AitcError(
            "--trace, --stats, --stats-json and --target apply to hw programs; this file is graph-level IR"
        )
    if inputs is None:
        function = entry_function(module, args.entry)
        inputs = random_inputs(function, args.seed)
        print(f"no --inputs: using random inputs (seed {args.seed}) for {', '.join(input_names(function))}")
    return run_module(module, inputs, args.entry)


def _simulate(args: argparse.Namespace, module, inputs) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """The outputs of the program on the simulator, and the report files asked for (the trace
    for --trace, the statistics for --stats-json) as {path: JSON text}."""
    import time

    from aitc.interp.run import random_program_inputs
    from aitc.report import peak_rss_mib
    from aitc.sim import Session, format_stats, stats_json, trace_json

    session = Session(module if module is not None else args.file, target=args.target)
    if inputs is None:
        inputs = random_program_inputs(session.get_inputs(), args.seed)
        print(f"no --inputs: using random inputs (seed {args.seed}) for {', '.join(inputs)}")
    names = [spec.name for spec in session.get_outputs()]
    started = time.perf_counter()
    values = session.run(None, inputs, trace=args.trace is not None)
    seconds = time.perf_counter() - started
    result = session.last_result
    assert result is not None
    if args.stats:
        print(format_stats(result.stats))
        print(f"host: simulated in {seconds:.2f} s, peak RSS {peak_rss_mib():.0f} MiB")
    reports = {}
    if args.trace is not None and result.trace is not None:
        reports[args.trace] = trace_json(result.trace)
    if args.stats_json is not None:
        reports[args.stats_json] = stats_json(result.stats)
    return dict(zip(names, values, strict=True)), reports


def cmd_asm(args: argparse.Namespace) -> int:
    from pathlib import Path

    from aitc.binary import declared_target, save_program
    from aitc.files import check_outputs, read_text
    from aitc.ir import parse_mlir, require_weights
    from aitc.target import load_target

    output = args.output if args.output is not None else str(Path(args.file).with_suffix(".aitb"))
    check_outputs([output], [args.file, args.target])
    module = parse_mlir(read_text(args.file), args.file)
    require_weights(module)
    target = load_target(args.target) if args.target else declared_target(module)
    size = save_program(output, module, target)
    print(f"wrote {output}: {size} bytes for target '{target.name}'")
    return 0


def cmd_disasm(args: argparse.Namespace) -> int:
    from aitc.binary import load_program
    from aitc.files import check_outputs
    from aitc.ir import print_mlir
    from aitc.target import load_target

    check_outputs([args.output], [args.file, args.target])
    module = load_program(args.file, load_target(args.target) if args.target else None)
    _emit_text(print_mlir(module, generic=args.generic), args.output)
    return 0


def cmd_target_list(args: argparse.Namespace) -> int:
    from aitc.report import format_table
    from aitc.target import load_target, preset_names

    rows = []
    for name in preset_names():
        t = load_target(name)
        matrix = f"{t.matrix.rows}x{t.matrix.cols}"
        rows.append(
            (name, t.cores, f"{t.sram_bytes // 1024} KiB", matrix, f"{t.clock_mhz} MHz", t.description)
        )
    print(format_table(["target", "cores", "SRAM/core", "matrix", "clock", "summary"], rows))
    return 0


def cmd_target_show(args: argparse.Namespace) -> int:
    from aitc.target import describe, load_target

    print(describe(load_target(args.target)))
    return 0


def _add_binary_commands(sub) -> None:
    """`asm`, `disasm` and `target list|show`."""
    target_help = "a preset name (see `aitc target list`) or a target FILE.toml"
    p = sub.add_parser("asm", help="assemble a hw-dialect .mlir program into a .aitb binary")
    p.add_argument("file", metavar="PROG.mlir")
    p.add_argument("-o", "--output", metavar="PROG.aitb", help="output binary (default: PROG.aitb)")
    p.add_argument("--target", help=f"{target_help} (default: the program's target attribute)")
    p.set_defaults(handler=cmd_asm)

    p = sub.add_parser("disasm", help="print a .aitb binary as hw-dialect .mlir")
    p.add_argument("file", metavar="PROG.aitb")
    p.add_argument("-o", "--output", metavar="OUT.mlir", help="output .mlir (default: stdout)")
    p.add_argument("--target", help=f"{target_help}; refuse a binary assembled for another target")
    p.add_argument("--generic", action="store_true", help="print ops in MLIR generic form")
    p.set_defaults(handler=cmd_disasm)

    p = sub.add_parser("target", help="list the preset targets or describe one")
    target_sub = p.add_subparsers(dest="target_command", required=True)
    q = target_sub.add_parser("list", help="the preset targets, one line each")
    q.set_defaults(handler=cmd_target_list)
    q = target_sub.add_parser("show", help="describe a preset or a target FILE.toml")
    q.add_argument("target", metavar="NAME|FILE.toml", help=target_help)
    q.set_defaults(handler=cmd_target_show)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aitc", description="aitc: ONNX -> virtual NPU toolchain")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("import", help="convert an ONNX model to graph-dialect .mlir")
    p.add_argument("model")
    p.add_argument("-o", "--output", help="output .mlir (default: stdout)")
    p.add_argument(
        "--input-shape",
        action="append",
        type=_parse_shape,
        metavar="NAME=1x3x224x224",
        help="pin the shape of a dynamic input (repeatable)",
    )
    p.add_argument("--generic", action="store_true", help="print ops in MLIR generic form")
    p.add_argument(
        "--target", help="record the target on the module (aitc.target): a preset NAME or FILE.toml"
    )
    p.set_defaults(handler=cmd_import)

    p = sub.add_parser(
        "compile", help="compile ONNX or .mlir for a target: a .aitb binary, or .mlir with --emit"
    )
    p.add_argument("model", help="MODEL.onnx or FILE.mlir (graph, tile or sync level)")
    p.add_argument("-o", "--output", help="OUT.aitb (or OUT.mlir with --emit)")
    _add_quiet(p)
    p.add_argument("--target", help="preset NAME or FILE.toml (default: the input's aitc.target, else edge)")
    p.add_argument(
        "--print-pipeline",
        action="store_true",
        help="print the passes as an `aitc-opt -p` string (target included) instead of compiling",
    )
    p.add_argument(
        "--emit", choices=("graph", "tile", "sync", "hw"), help="stop at this level and print .mlir"
    )
    p.add_argument("--depth", type=int, default=2, choices=(1, 2, 3), help="pipelining buffer depth")
    p.add_argument("--no-optimize", action="store_true", help="skip the graph-optimize pipeline")
    p.add_argument(
        "--verify-each",
        action="store_true",
        help="verify the IR after every pass, naming the pass that broke it (default: after each "
        "lowering stage)",
    )
    p.add_argument(
        "--no-host-fallback",
        action="store_true",
        help="fail (listing the nodes) instead of running ops the NPU cannot execute on the host",
    )
    p.add_argument("--input-shape", action="append", type=_parse_shape, metavar="NAME=1x3x224x224")
    p.add_argument(
        "--cores",
        type=_positive_int,
        default=None,
        help="cores to shard the model over (default: every core of the target when the cost model "
        "expects them to beat one core, else 1; the report says which and why; 1: the single-core "
        "program; only a compile to hw shards by default)",
    )
    p.add_argument(
        "--shard",
        choices=("auto", "tp", "sp", "dp", "tp-sp", "layerwise", "measure", "none"),
        default="auto",
        help="sharding strategy with --cores > 1: tensor, sequence (spatial rows for a CNN), data or "
        "Megatron tensor+sequence parallel, a choice per layer (layerwise), the cheapest estimate "
        "(auto), or the fastest on the simulator (measure: every strategy compiled and simulated)",
    )
    p.add_argument(
        "--conv-layout",
        choices=("auto", "nchw", "nhwc"),
        default="auto",
        help="activation layout of the convs: channels last (nhwc) where the cost model expects a "
        "region of connected convs to run faster that way (auto), everywhere it can, or nowhere",
    )
    p.add_argument(
        "--tune",
        action="store_true",
        help="measure the cost model's best tilings of every distinct matmul, conv and pooling kernel on the "
        "simulator and keep the fastest; results are cached (--tune-cache), so the next compile of "
        "the same kernels measures nothing",
    )
    p.add_argument(
        "--tune-cache",
        metavar="FILE.json",
        help="the tuning cache (default: $AITC_TUNE_CACHE, else ~/.cache/aitc/tuning.json)",
    )
    p.add_argument(
        "--tune-seconds",
        type=_seconds,
        metavar="S",
        help="time bound of the measurements (default 300); kernels left unmeasured keep the model's "
        "tiling and are measured by the next --tune",
    )
    p.add_argument(
        "--tune-candidates",
        type=_positive_int,
        metavar="N",
        help="tilings measured per kernel, the cost model's best first (default 6)",
    )
    p.set_defaults(handler=cmd_compile)

    p = sub.add_parser("check", help="per-node support table of an ONNX model; fails where import fails")
    p.add_argument("model", nargs="?")
    p.add_argument("--ops", action="store_true", help="list the ONNX op types aitc claims")
    p.add_argument(
        "--input-shape",
        action="append",
        type=_parse_shape,
        metavar="NAME=1x3x224x224",
        help="pin the shape of a dynamic input, as for import (repeatable)",
    )
    p.set_defaults(handler=cmd_check)

    p = sub.add_parser(
        "run",
        help="run graph-level .mlir/.onnx (reference interpreter) or a hw program .mlir/.aitb (simulator)",
    )
    p.add_argument("file")
    _add_quiet(p)
    p.add_argument("--inputs", help=".npz whose keys are the model input names")
    p.add_argument("--outputs", help="write outputs to this .npz (keys = output names)")
    p.add_argument("--input-shape", action="append", type=_parse_shape, metavar="NAME=1x3x224x224")
    p.add_argument("--entry", help="function to run (default @main)")
    p.add_argument(
        "--seed", type=_seed, default=0, help="seed (0..2**63-1) for random inputs when --inputs is absent"
    )
    p.add_argument("--target", help="hw programs: target preset NAME or FILE.toml (default: the program's)")
    p.add_argument("--trace", metavar="TRACE.json", help="hw programs: write a Chrome/Perfetto trace")
    p.add_argument("--stats", action="store_true", help="hw programs: print cycle and engine statistics")
    p.add_argument(
        "--stats-json",
        metavar="STATS.json",
        help="hw programs: write the statistics as JSON (cycles, per core/engine)",
    )
    p.set_defaults(handler=cmd_run)
    p = sub.add_parser(
        "perf",
        help="per ONNX node: the cost model's estimate next to the simulated cycles, what bounds it, "
        "the critical path; -o DIR writes JSON, CSV, charts, an HTML page and the trace",
    )
    p.add_argument("model", help="MODEL.onnx or FILE.mlir (compiled first), or X.aitb (run as it is)")
    p.add_argument(
        "-o", "--output", metavar="DIR", help="write perf.json, perf.csv, trace.json, charts, perf.html"
    )
    _add_quiet(p)
    p.add_argument("--target", help="preset NAME or FILE.toml (default: the input's, else edge)")
    p.add_argument("--cores", type=_positive_int, default=None, help="as for aitc compile")
    p.add_argument(
        "--conv-layout", choices=("auto", "nchw", "nhwc"), default="auto", help="as for aitc compile"
    )
    _add_model_inputs(p)
    p.add_argument("--top", type=_positive_int, default=25, help="rows printed, longest first (default 25)")
    p.set_defaults(handler=cmd_perf)

    p = sub.add_parser(
        "verify",
        help="every node's outputs compiled to a level against onnxruntime: cosine, SQNR, max abs/rel "
        "error per tensor; exit 1 outside the tolerance; -o DIR writes the tensors and the report",
    )
    p.add_argument("model", help="MODEL.onnx")
    p.add_argument(
        "-o", "--output", metavar="DIR", help="snapshot folder: .npy tensors, names.json, report.json"
    )
    _add_quiet(p)
    p.add_argument("--target", help="preset NAME or FILE.toml (default: the input's, else edge)")
    p.add_argument(
        "--level", choices=("graph", "tile", "sync", "hw"), default="hw", help="where aitc runs it"
    )
    p.add_argument(
        "--mode",
        choices=("entire", "single", "both"),
        default="entire",
        help="entire: one run, errors accumulate; single: each node alone on the reference's inputs",
    )
    p.add_argument("--cores", type=_positive_int, default=1, help="cores to compile for (default 1)")
    _add_model_inputs(p)
    p.add_argument("--all", action="store_true", help="print every tensor's row (default: the worst)")
    p.add_argument(
        "--bisect",
        action="store_true",
        help="when entire mode disagrees, find the first pass of the compile whose output does "
        "(BISECT: lines as LLVM's -opt-bisect-limit prints them) and the first diverging node",
    )
    p.add_argument(
        "--float",
        metavar="FLOAT.onnx",
        help="MODEL is quantized (QDQ): compare it with this float model tensor by tensor (int8 profile) "
        "and rank the nodes whose exclusion from quantization helps most",
    )
    p.set_defaults(handler=cmd_verify)

    p = sub.add_parser(
        "quantize", help="post-training int8 quantization: calibrate on samples, write a QDQ ONNX model"
    )
    p.add_argument("model", help="MODEL.onnx (float)")
    p.add_argument("-o", "--output", required=True, help="the QDQ model, e.g. MODEL.int8.onnx")
    p.add_argument(
        "--calibration",
        required=True,
        metavar="DATA.npz",
        help="one array per model input (keys = input names), the samples stacked along the first axis",
    )
    p.add_argument("--method", choices=("minmax", "entropy", "percentile"), default="minmax")
    p.add_argument(
        "--percentile", type=float, default=99.999, help="for --method percentile (default 99.999)"
    )
    p.add_argument("--per-channel", action="store_true", help="one weight scale per output channel")
    p.add_argument("--exclude", nargs="+", metavar="NODE", help="nodes to leave float")
    p.add_argument("--no-cache", action="store_true", help="calibrate again, ignoring cached ranges")
    _add_quiet(p)
    p.set_defaults(handler=cmd_quantize)
    _add_binary_commands(sub)
    return parser


def _add_model_inputs(p: argparse.ArgumentParser) -> None:
    """--input-shape, --inputs and --seed of the commands that run a model on inputs of its own."""
    p.add_argument("--input-shape", action="append", type=_parse_shape, metavar="NAME=1x3x224x224")
    p.add_argument("--inputs", help=".npz whose keys are the model input names (default: random)")
    p.add_argument("--seed", type=_seed, default=0, help="seed for random inputs when --inputs is absent")


def _add_quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-q", "--quiet", action="store_true", help="no progress bars (they only show on a terminal anyway)"
    )


def _where(args: argparse.Namespace) -> str | None:
    return getattr(args, "model", None) or getattr(args, "file", None)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from aitc import progress

    progress.set_quiet(bool(getattr(args, "quiet", False)))
    return run_command(_where(args), lambda: args.handler(args), debug=bool(os.environ.get("AITC_DEBUG")))


if __name__ == "__main__":
    sys.exit(main())
