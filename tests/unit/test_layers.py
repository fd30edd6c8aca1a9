# SPDX-License-Identifier: GPL-2.0-or-later
"""The library's layers (.importlinter, docs/architecture.md): kernel
access -> shared services -> features -> front ends, no feature importing
another.  import-linter is installed in `make check`'s virtualenv (the
Makefile); under a Python without it the test is skipped."""

import os

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def test_the_import_contracts_hold(monkeypatch):
    cli = pytest.importorskip("importlinter.cli")
    monkeypatch.chdir(REPO)
    assert cli.lint_imports(config_filename=os.path.join(REPO, ".importlinter"),
                            no_cache=True, no_logo=True) == 0
