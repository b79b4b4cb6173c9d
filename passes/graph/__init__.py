"""Graph-level passes: rewrites within the `graph` dialect (tensor ops), one pass per module,
each module named after its CLI name (`graph-canonicalize` -> `graph_canonicalize.py`; a pass
that spans files is a package: `place-on-host` -> `place_on_host/`)."""
