# SPDX-License-Identifier: GPL-2.0-or-later
"""The bench's imports stand at the top of its modules, where a reader
and import-linter (bench/.importlinter, tests/unit/test_layers.py) see
them: an import inside a function is how a circle hides (saved -> cli ->
docs -> saved, issue 50).  Two kinds are left, on purpose: an optional
heavy dependency imported when it is used (matplotlib, for the plots
only), and the command line's dispatch importing the orchestrator's and
the saved runs' commands for the command that runs them, so that the
commands the bench runs on its hosts - between a run's two read-backs
of the server, inside its CPU figures - load only the host side."""

import ast
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench" / "irqtune_bench"
# (module, imported): imported lazily on purpose
LAZY = {("report", "matplotlib"), ("report", "matplotlib.pyplot"),
        ("cli", ".orchestrator"), ("cli", ".saved"), ("cli", ".netns")}


def imports_inside_functions(path):
    """[(line, imported module)] of the imports in path's functions."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import):
                    found += [(inner.lineno, alias.name) for alias in inner.names]
                elif isinstance(inner, ast.ImportFrom) and inner.module:
                    found.append((inner.lineno, "." * inner.level + inner.module))
                elif isinstance(inner, ast.ImportFrom):         # from . import a, b
                    found += [(inner.lineno, "." * inner.level + alias.name) for alias in inner.names]
    return found


def test_no_import_inside_a_function_but_the_lazy_optional_ones():
    found = ["%s.py:%d imports %s" % (path.stem, line, name)
             for path in sorted(BENCH.glob("*.py"))
             for line, name in sorted(set(imports_inside_functions(path)))
             if (path.stem, name) not in LAZY]
    assert not found, "\n".join(found)


def test_the_lazy_imports_are_still_there():
    # a LAZY entry whose import went away would let another hide behind it
    lazy = {(path.stem, name) for path in BENCH.glob("*.py") for _, name in imports_inside_functions(path)}
    assert LAZY <= lazy
