"""pytest setup shared by every test: compiles verify the IR after every pass.

`aitc compile` verifies only its result by default (verifying a large module after each of its
17 passes costs a quarter of the compile); the tests set `AITC_VERIFY_EACH=1` so that a pass
leaving invalid IR fails the test that ran it, naming the pass.
"""

from __future__ import annotations

import os

os.environ.setdefault("AITC_VERIFY_EACH", "1")
