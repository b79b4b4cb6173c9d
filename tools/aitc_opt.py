"""aitc-opt: xdsl-opt with every aitc dialect and pass registered (and xDSL's own).

Differences from xdsl-opt, all in the user's favour: a parse or verification error is a short
diagnostic with a non-zero exit status (never a traceback), and `-o FILE` is written only when
every chunk succeeded.
"""

from __future__ import annotations

import io
import os
import re
import sys
import tempfile
from collections.abc import Sequence

from xdsl.utils.exceptions import DiagnosticException, ParseError, PassFailedException
from xdsl.xdsl_opt_main import xDSLOptMain

from aitc.diagnostics import AitcError
from aitc.ir import register_aitc_dialects


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

    def prepare_output(self):
        if self.args.output_file is None:
            return sys.stdout
        self.buffer = _Buffer()
        return self.buffer

    def commit_output(self) -> None:
        """Writes -o atomically (a temporary file renamed into place), after every chunk passed."""
        buffer = getattr(self, "buffer", None)
        if buffer is None:
            return
        target = self.args.output_file
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(target)), prefix=".aitc-opt-")
        with os.fdopen(fd, "w") as handle:
            handle.write(buffer.getvalue())
        os.replace(tmp, target)


class _Buffer(io.StringIO):
    """Output kept in memory; xDSL's driver closes its stream, which must not drop the text."""

    def close(self) -> None:
        pass


def _input_name(args: Sequence[str] | None) -> str:
    argv = list(sys.argv[1:] if args is None else args)
    files = [a for a in argv if not a.startswith("-") and os.path.exists(a)]
    return files[0] if files else "<stdin>"


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
    except Exception as error:  # bad -p pipeline or options: xDSL raises plain exceptions
        print(f"aitc-opt: error: {error}", file=sys.stderr)
        return 1
    try:
        driver.run()
    except ParseError as error:
        print(AitcError(str(error)).render(), file=sys.stderr)
        return 1
    except (DiagnosticException, PassFailedException) as error:
        print(f"{_input_name(args)}: error: {error}", file=sys.stderr)
        for note in getattr(error, "__notes__", []):
            print(excerpt(note), file=sys.stderr)
        return 1
    except (ValueError, FileNotFoundError) as error:
        print(f"aitc-opt: error: {error}", file=sys.stderr)
        return 1
    driver.commit_output()
    return 0


if __name__ == "__main__":
    sys.exit(main())
