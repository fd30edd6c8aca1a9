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


LIBRARY = os.path.join(REPO, "irqtune")
LAYERS = ("kernel", "shared", "features", "frontends")   # lowest first


def modules_in(folder):
    """A folder's modules as docs/architecture.md spells them: "x.py" for a
    module, "x/" for a package; __init__ and __pycache__ left out."""
    found = set()
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if name.endswith(".py") and name != "__init__.py":
            found.add(name)
        elif os.path.isfile(os.path.join(path, "__init__.py")):
            found.add(name + "/")
    return found


def documented_tree():
    """{folder: set of modules} from the tree in docs/architecture.md's
    "Layers": a line "      name/   a.py, b/, c.py (what it is)," and its
    continuation lines; "" for the lines of irqtune/ itself."""
    import re
    text = open(os.path.join(REPO, "docs", "architecture.md")).read()
    block = text.split("\n    irqtune/\n", 1)[1].split("\n\n", 1)[0]
    tree, folder = {}, None
    for line in block.splitlines():
        head = re.match(r"      (\S+/)\s", line)
        if head:
            folder = head.group(1)[:-1]
        elif not line.startswith(" " * 28):
            folder = ""
        listing = re.sub(r"\([^)]*\)", "", line if folder == "" else line[28:])
        tree.setdefault(folder, set()).update(
            re.findall(r"(?<![\w/.])(\w+\.py|\w+/)(?=[\s,]|$)", listing))
    return tree


def test_architecture_md_lists_the_modules_of_each_layer():
    """issue 50 item 4: the docs' tree is the tree; a module added, moved or
    renamed fails here until docs/architecture.md says so."""
    tree = documented_tree()
    on_disk = {layer: modules_in(os.path.join(LIBRARY, layer)) for layer in LAYERS}
    on_disk[""] = {m for m in modules_in(LIBRARY) if not m.endswith("/")}
    assert set(tree) == set(on_disk), sorted(tree)
    assert {k: sorted(v) for k, v in tree.items()} == \
        {k: sorted(v) for k, v in on_disk.items()}
    assert {m[:-1] for m in modules_in(LIBRARY) if m.endswith("/")} == set(LAYERS)


def test_importlinter_lists_every_layer_in_order():
    """The layers contract names every folder of the library, highest
    first, so a new layer cannot sit outside the contract."""
    import configparser
    config = configparser.ConfigParser()
    config.read(os.path.join(REPO, ".importlinter"))
    layers = config["importlinter:contract:layers"]["layers"].split()
    assert layers == ["irqtune." + layer for layer in reversed(LAYERS)]


def test_every_module_logs_under_its_own_name():
    """issue 50 item 4: a record's logger is the module that logged it
    (logging.getLogger(__name__)), so a line in the daemon's debug log
    points at its file; TuneD's log shows the plugin's name either way."""
    import ast
    wrong = []
    for root, _, files in os.walk(LIBRARY):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(root, name)
            for node in ast.walk(ast.parse(open(path).read())):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr == "getLogger" and node.args
                        and not (isinstance(node.args[0], ast.Name)
                                 and node.args[0].id == "__name__")
                        and not (isinstance(node.args[0], ast.Constant)
                                 and node.args[0].value == "tuned")):
                    wrong.append("%s:%d" % (os.path.relpath(path, REPO), node.lineno))
    assert wrong == []
