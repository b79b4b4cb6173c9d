"""aitc-opt: xdsl-opt with every aitc dialect and pass registered (and xDSL's own).

Differences from xdsl-opt, all in the user's favour: a parse or verification error is a short
diagnostic with a non-zero exit status (never a traceback); `-o FILE` follows aitc's output rules
(`aitc.files`: checked first, written only when every chunk succeeded); the only output target
(`-t`) is `mlir` — xDSL's other targets (llvm, riscv-asm, ...) do not know aitc's dialects, and
`aitc asm` assembles hw programs.
"""

from __future__ import annotations

import io
import os
import re
import sys
from collections.abc import Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.universe import Universe
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError, PassFailedException
from xdsl.xdsl_opt_main import xDSLOptMain

from aitc.diagnostics import AitcError, run_command
from aitc.files import check_outputs, read_text, write_atomic
from aitc.ir import parse_unverified, register_aitc_dialects


class AitcOptMain(xDSLOptMain):
    """The `aitc-opt` driver."""

    version_format = "aitc-opt (xdsl {xdsl_version})"

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        register_aitc_dialects(self.ctx)
        # A pass may create a file's first dense_resource (e.g. constant folding); the printer
        # finds resource bytes only through *loaded* dialects, so load builtin up front.
        self.ctx.get_optional_dialect("builtin")

    def register_all_passes(self) -> None:
        super().register_all_passes()
        from aitc.passes import get_all_passes

        for name, factory in get_all_passes().items():
            self.register_pass(name, factory)

    def register_all_frontends(self) -> None:
        super().register_all_frontends()
        self.available_frontends["mlir"] = self._parse_mlir

    def _parse_mlir(self, stream: IO[bytes]) -> ModuleOp:
        """aitc's parser: a located error for any bad text, and use-before-def checked (the
        driver runs the verifier)."""
        implicit_module = not self.args.no_implicit_module
        return parse_unverified(stream.read(), self.get_input_name(), self.ctx, implicit_module)

    def register_all_targets(self) -> None:
        self.available_targets["mlir"] = Universe.get_multiverse().all_targets["mlir"]

    def apply_passes(self, prog: ModuleOp) -> None:
        """The pipeline; an exception out of one of xDSL's own passes (which do not know aitc's
        dialects) is a diagnostic naming them, while one out of aitc's passes stays a bug."""
        from aitc.passes import get_all_passes

        try:
            super().apply_passes(prog)
        except (DiagnosticException, PassFailedException, AitcError):
            raise
        except Exception as error:
            foreign = [p.name for p in self.pipeline.passes if p.name not in get_all_passes()]
            if not foreign:
                raise
            message = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
            raise AitcError(
                f"the pipeline failed ({type(error).__name__}: {message})",
                hint=f"xDSL's own passes ({', '.join(foreign)}) may not handle aitc's dialects",
            ) from None

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        """The input file (or stdin) read whole, through aitc's checks: a folder, a device, a
        symlink loop or a file that is not UTF-8 text is an AitcError, not a traceback."""
        path = self.args.input_file
        if path is None:
            return sys.stdin.buffer, "mlir"
        data = read_text(path).encode()
        return io.BytesIO(data), os.path.splitext(path)[1].removeprefix(".")

    def prepare_output(self):
        if self.args.output_file is None:
            return sys.stdout
        self.buffer = _Buffer()
        return self.buffer

    def commit_output(self) -> None:
        """Writes -o by aitc's output rules (`aitc.files`), after every chunk passed."""
        buffer = getattr(self, "buffer", None)
        if buffer is not None:
            write_atomic(self.args.output_file, buffer.getvalue())


class _Buffer(io.StringIO):
    """Output kept in memory; xDSL's driver closes its stream, which must not drop the text."""

    def close(self) -> None:
        pass


_UNDERLINE = re.compile(r"\s*\^+-*")
"""The line under the failing op in xDSL's annotated module (`^^^^----`)."""


def excerpt(annotated: str, context: int = 3) -> str:
    """The failing op of xDSL's annotated module, its message box and `context` lines around it.

    The whole module can be thousands of lines; the diagnostic must fit on one screen.
    """
    lines = annotated.rstrip("\n").splitlines()
    marks = [i for i, line in enumerate(lines) if _UNDERLINE.fullmatch(line)]
    if not marks:
        return annotated.rstrip("\n")
    end = marks[-1] + 1
    while end < len(lines) and lines[end].lstrip().startswith(("|", "-")):
        end += 1
    first, last = max(marks[0] - 1 - context, 0), min(end + context, len(lines))
    head = ["  ..."] if first > 0 else []
    tail = ["  ..."] if last < len(lines) else []
    return "\n".join([*head, *lines[first:last], *tail])


def main(args: Sequence[str] | None = None) -> int:
    try:
        driver = AitcOptMain(args=args)
    except (Exception, ArgSpecParseError) as error:  # bad -p pipeline or options
        print(f"aitc-opt: error: {error}", file=sys.stderr)
        return 1
    where = driver.args.input_file or "<stdin>"
    return run_command(where, lambda: _run(driver, where), debug=bool(os.environ.get("AITC_DEBUG")))


def _run(driver: AitcOptMain, where: str) -> int:
    """Checks -o, runs the driver, writes -o; xDSL's own exceptions become diagnostics."""
    if driver.args.output_file == "-":
        driver.args.output_file = None  # `-o -` is stdout, as in mlir-opt
    check_outputs([driver.args.output_file], [driver.args.input_file])
    try:
        driver.run()
    except ParseError as error:
        raise AitcError(str(error)) from None
    except (DiagnosticException, PassFailedException) as error:
        notes = "\n".join(excerpt(note) for note in getattr(error, "__notes__", []))
        raise AitcError(str(error), context=notes) from None
    except (ValueError, FileNotFoundError) as error:
        raise AitcError(str(error)) from None
    driver.commit_output()
    return 0


if __name__ == "__main__":
    sys.exit(main())
