# SPDX-License-Identifier: GPL-2.0-or-later
import os

import pytest

from support.netns import NetNs


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
