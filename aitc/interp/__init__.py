"""Executable semantics of every aitc dialect (one module per dialect)."""
