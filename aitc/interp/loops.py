"""scf semantics for aitc's interpreters, with a budget on loop iterations.

xDSL's `ScfFunctions` iterates `scf.for` and `scf.while` as long as the IR says. The trip counts
of a `.mlir` file are input, so a damaged or hostile file (`scf.for %i = %c0 to %huge`) would
run for hours; here every iteration is counted against one budget per run, and exceeding it is
an AitcError naming the loop, not a hang. Real tile-level programs stay far below the budget:
their loops iterate over tiles, not elements.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import UnknownLoc
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    TerminatorValue,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.ir import Operation

from aitc.diagnostics import AitcError

MAX_LOOP_ITERATIONS = 5_000_000
"""Loop iterations one interpreter run may execute, summed over all loops."""


class LoopBudget:
    """Counts loop iterations; `spend` raises an AitcError once the budget is exhausted."""

    def __init__(self, limit: int = MAX_LOOP_ITERATIONS):
        self.limit = limit
        self.spent = 0

    def iterations(self, op: Operation, lb: int, ub: int, step: int) -> range:
        """The induction values of `scf.for` op (step checked), booked before they run."""
        if step <= 0:
            raise AitcError(f"{_describe(op)}: scf.for step must be positive, got {step}")
        values = range(lb, ub, step)
        self.spend(op, len(values))
        return values

    def spend(self, op: Operation, iterations: int) -> None:
        """Books `iterations` more iterations of loop `op` (before running them)."""
        self.spent += max(iterations, 0)
        if self.spent > self.limit:
            raise AitcError(
                f"{_describe(op)}: the loops run more than {self.limit:,} iterations in all; "
                "the interpreter stops here",
                hint="a loop bound is wrong (or the program is far larger than a tile-level program)",
            )


def _describe(op: Operation) -> str:
    if isinstance(op.location, UnknownLoc):
        return op.name
    return f"{op.name} at {op.location}"


@register_impls
class BoundedScfFunctions(InterpreterFunctions):
    """`scf.for`, `scf.while`, `scf.if` and their terminators, iterations counted against a
    `LoopBudget` (a fresh one per instance, so per interpreter run)."""

    def __init__(self, budget: LoopBudget | None = None):
        self.budget = budget or LoopBudget()

    @impl(scf.IfOp)
    def run_if(self, interpreter: Interpreter, op: scf.IfOp, args: PythonValues) -> PythonValues:
        region = op.true_region if args[0] else op.false_region
        return interpreter.run_ssacfg_region(region, ())

    @impl(scf.ForOp)
    def run_for(self, interpreter: Interpreter, op: scf.ForOp, args: PythonValues) -> PythonValues:
        lb, ub, step, *loop_args = args
        values = tuple(loop_args)
        for i in self.budget.iterations(op, lb, ub, step):
            values = interpreter.run_ssacfg_region(op.body, (i, *values), "for_loop")
        return values

    @impl(scf.WhileOp)
    def run_while(self, interpreter: Interpreter, op: scf.WhileOp, args: PythonValues) -> PythonValues:
        values = args
        while True:
            self.budget.spend(op, 1)
            condition, *forwarded = interpreter.run_ssacfg_region(op.before_region, values, "while.before")
            if not condition:
                return tuple(forwarded)
            values = interpreter.run_ssacfg_region(op.after_region, tuple(forwarded), "while.after")

    @impl_terminator(scf.YieldOp)
    def run_yield(
        self, interpreter: Interpreter, op: scf.YieldOp, args: PythonValues
    ) -> tuple[TerminatorValue, PythonValues]:
        return ReturnedValues(args), ()

    @impl_terminator(scf.ConditionOp)
    def run_condition(
        self, interpreter: Interpreter, op: scf.ConditionOp, args: PythonValues
    ) -> tuple[TerminatorValue, PythonValues]:
        return ReturnedValues(args), ()
