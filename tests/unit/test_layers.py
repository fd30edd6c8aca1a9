# SPDX-License-Identifier: GPL-2.0-or-later
"""The library's layers (.importlinter, docs/architecture.md): kernel
access -> shared services -> features -> front ends, no feature importing
another.  import-linter is installed in `make check`'s virtualenv (the
Makefile); under a Python without it the test is skipped."""

import os
import subprocess
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def test_the_import_contracts_hold():
    pytest.importorskip("importlinter.cli")
    # In a process of its own: import-linter configures logging with
    # disable_existing_loggers, which would silence the library's loggers
    # for the tests that follow.
    out = subprocess.run([sys.executable, "-c", "import sys, importlinter.cli as c; "
                          "sys.exit(c.lint_imports(config_filename='.importlinter', "
                          "no_cache=True, no_logo=True))"],
                         cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
