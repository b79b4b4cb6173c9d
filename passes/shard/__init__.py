"""Shard-level passes: rewrites of sharded graph modules (`shard` dialect annotations and
collectives), one pass per module named after its CLI name (`shard-simplify` ->
`shard_simplify.py`)."""
