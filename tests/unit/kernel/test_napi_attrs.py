# SPDX-License-Identifier: GPL-2.0-or-later
"""The NAPI attributes are declared once (irqtune.kernel.napi_attrs), as
the kernel declares them once in Documentation/netlink/specs/netdev.yaml:
no other library file spells one in a string (issue 50, build item 2)."""

import ast
import pathlib
import re
from dataclasses import fields

from irqtune.features.napi.config import NapiConfig
from irqtune.kernel.napi_attrs import NAPI_ATTRS
from irqtune.kernel.netlink.genl import attr_table
from irqtune.kernel.netlink.netdev import napi_msg

LIBRARY = pathlib.Path(__file__).resolve().parents[3] / "irqtune"
TABLE = "kernel/napi_attrs.py"

# The four attributes in each spelling: netlink (defer-hard-irqs), option
# (defer_hard_irqs), pyroute2's (NETDEV_A_NAPI_DEFER_HARD_IRQS), also inside
# a longer text ("defer_hard_irqs=%d", "gro_flush_timeout_ns"), but not
# "multi-threaded".
SPELLED = re.compile(r"(?<![a-z-])(defer[-_]hard[-_]irqs|gro[-_]flush[-_]timeout|"
                     r"irq[-_]suspend[-_]timeout|threaded)(?![a-z])", re.IGNORECASE)


def _docstrings(tree):
    """The string nodes that are docstrings: documentation, not a spelling
    any code derives from."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def spelling_files():
    """{library file: [the strings in it that spell a NAPI attribute]}."""
    found = {}
    for path in sorted(LIBRARY.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        docs = _docstrings(tree)
        spelled = [node.value for node in ast.walk(tree)
                   if isinstance(node, ast.Constant) and isinstance(node.value, str)
                   and id(node) not in docs and SPELLED.search(node.value)]
        if spelled:
            found[str(path.relative_to(LIBRARY))] = spelled
    return found


def test_only_the_table_spells_a_napi_attribute():
    found = spelling_files()
    assert set(found) == {TABLE}, {f: s for f, s in found.items() if f != TABLE}


def test_napi_msg_numbers_the_attributes_as_the_kernel_does():
    """Documentation/netlink/specs/netdev.yaml, attribute-set napi (Linux
    6.19): ifindex 1, id 2, irq 3, pid 4, defer-hard-irqs 5,
    gro-flush-timeout 6, irq-suspend-timeout 7, threaded 8."""
    numbers = {name: number for name, (number, _) in attr_table(napi_msg).items()}
    assert numbers == {"ifindex": 1, "id": 2, "irq": 3, "pid": 4, "defer-hard-irqs": 5,
                       "gro-flush-timeout": 6, "irq-suspend-timeout": 7, "threaded": 8}


def test_napi_config_holds_one_value_per_attribute():
    assert [f.name for f in fields(NapiConfig) if f.name != "measured_attrs"] == \
        [a.option for a in NAPI_ATTRS]
