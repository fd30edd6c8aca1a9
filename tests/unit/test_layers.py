# SPDX-License-Identifier: GPL-2.0-or-later
"""The library's layers (.importlinter, docs/architecture.md): kernel
access -> shared services -> features -> front ends, no feature importing
another; and the bench's (bench/.importlinter): its floors, the
orchestrator apart from what runs on the server and the client, nothing
of the library.  import-linter is installed in `make check`'s virtualenv
(the Makefile); under a Python without it the tests are skipped."""

import os
import subprocess
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def lint_imports(directory):
    """import-linter's exit code and output for directory's .importlinter,
    run from there (which puts its packages on the path)."""
    pytest.importorskip("importlinter.cli")
    # In a process of its own: import-linter configures logging with
    # disable_existing_loggers, which would silence the library's loggers
    # for the tests that follow.
    out = subprocess.run([sys.executable, "-c", "import sys, importlinter.cli as c; "
                          "sys.exit(c.lint_imports(config_filename='.importlinter', "
                          "no_cache=True, no_logo=True))"],
                         cwd=directory, capture_output=True, text=True)
    return out.returncode, out.stdout + out.stderr


def test_the_import_contracts_hold():
    rc, out = lint_imports(REPO)
    assert rc == 0, out


def test_the_bench_import_contracts_hold():
    rc, out = lint_imports(os.path.join(REPO, "bench"))
    assert rc == 0, out
