"""lit configuration: every .mlir under test/ runs through aitc-opt / aitc and filecheck."""

import os
import sys

import lit.formats

config.name = "aitc"  # noqa: F821
config.test_format = lit.formats.ShTest()  # noqa: F821
config.suffixes = [".mlir"]  # noqa: F821
config.test_source_root = os.path.dirname(__file__)  # noqa: F821
config.excludes = ["lit.cfg.py", "Output", "python", "conformance"]  # noqa: F821

bin_dir = os.path.dirname(sys.executable)
config.environment["PATH"] = os.pathsep.join(  # noqa: F821
    [bin_dir, config.environment.get("PATH", os.environ.get("PATH", ""))]  # noqa: F821
)
config.environment["AITC_VERIFY_EACH"] = "1"  # noqa: F821  -- compiles verify after every pass
config.substitutions.append(("%python", sys.executable))  # noqa: F821
config.substitutions.append(  # noqa: F821
    ("AITC_ROUNDTRIP", "aitc-opt %s | aitc-opt | filecheck %s")
)
config.substitutions.append(  # noqa: F821
    ("AITC_GENERIC_ROUNDTRIP", "aitc-opt %s --print-op-generic | aitc-opt | filecheck %s")
)
# File names at and just past the usual file-system limit of 255 bytes (output-path tests).
config.substitutions.append(("%{long255}", "n" * 250 + ".mlir"))  # noqa: F821
config.substitutions.append(("%{long256}", "n" * 251 + ".mlir"))  # noqa: F821
