# SPDX-License-Identifier: GPL-2.0-or-later
"""The suites' import rule (tests/support/__init__.py): a suite imports
what suites share from `support`, never from another suite's folder."""

import ast
import os

TESTS = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SUITES = {name for name in os.listdir(TESTS)
          if os.path.isdir(os.path.join(TESTS, name)) and name not in ("support", "__pycache__")}


def imported(path):
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0]


def test_no_suite_imports_another_suites_folder():
    crossing = []
    for root, _, names in os.walk(TESTS):
        suite = os.path.relpath(root, TESTS).split(os.sep)[0]
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(root, name)
                crossing += ["%s imports %s" % (os.path.relpath(path, TESTS), module)
                             for module in imported(path) if module in SUITES - {suite}]
    assert crossing == []
