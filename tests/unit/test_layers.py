# SPDX-License-Identifier: GPL-2.0-or-later
"""The library's layers (.importlinter, docs/architecture.md): kernel
access -> shared -> features -> front ends, no feature importing
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


def test_the_front_ends_docstring_names_its_modules_and_the_layers_they_use():
    """issue 50 item 4: it said "front ends over the features" while most of
    its modules import no feature."""
    import ast
    import irqtune.frontends
    folder = os.path.join(REPO, "irqtune", "frontends")
    modules = sorted(n[:-3] if n.endswith(".py") else n for n in os.listdir(folder)
                     if not n.startswith("_") and (n.endswith(".py") or os.path.isfile(
                         os.path.join(folder, n, "__init__.py"))))
    layers = set()
    for root, _, files in os.walk(folder):
        for name in files:
            if name.endswith(".py"):
                tree = ast.parse(open(os.path.join(root, name)).read())
                layers.update(n.module.split(".")[0] for n in ast.walk(tree)
                              if isinstance(n, ast.ImportFrom) and n.level > 1 and n.module)
    doc = irqtune.frontends.__doc__
    assert modules and layers == {"kernel", "shared", "features"}, (modules, layers)
    assert [m for m in modules if m not in doc] == [], doc
    assert [layer for layer in sorted(layers) if layer not in doc] == [], doc
