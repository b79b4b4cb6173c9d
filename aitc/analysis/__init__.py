"""Shared IR analyses and helpers: facts about the IR that passes, interpreters and the simulator
all need, computed in one place (no passes here)."""
