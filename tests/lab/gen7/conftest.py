# SPDX-License-Identifier: GPL-2.0-or-later
"""Fixtures of the current-kernel lab (generation 7, see tests/lab/README.md
and tests/support/host7.py): `host7` is a booted 7.2 guest with the project
installed and tuned.service restarted."""

import pytest

from support.host7 import BOOT_ARGS, KERNEL, Host7


@pytest.fixture
def host7(lab):
    """Function-scoped: a test that boots another configuration (the
    realtime flavour, RSS-capable NICs) powers this guest off; the next
    test gets a fresh one from the pool, with the project installed."""
    g = lab.get(kernel=KERNEL, cmdline=BOOT_ARGS)
    h = Host7(g)
    if not getattr(g, "irqtune_installed", False):
        h.install_project()
        g.irqtune_installed = True
    return h
