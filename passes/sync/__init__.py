"""Sync-level passes: rewrites within the `sync` dialect (engines, semaphores, barriers), one pass
per module or package, named after its CLI name (`insert-semaphores` -> `insert_semaphores/`)."""
