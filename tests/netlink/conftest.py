# SPDX-License-Identifier: GPL-2.0-or-later
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))

from harness import NetNs  # noqa: E402


def pytest_collection_modifyitems(config, items):
    if os.geteuid() != 0:
        for item in items:
            item.add_marker(pytest.mark.skip(reason="netlink tests need root"))


@pytest.fixture
def netns():
    ns = NetNs("irqtune-nl")
    ns.add_veth("vn0", queues=2)
    with ns.entered():
        yield ns
    ns.delete()
