# SPDX-License-Identifier: GPL-2.0-or-later
import os
import tempfile

import pytest

from support.netns import NetNs
from support.tuned_daemon import CONFINED_LATENCY_SUSPEND, TunedDaemon

NS = "irqtune-it"

OTHER_PROFILE = """
[main]
summary=a profile without the napi plugin (tests)
[sysfs]
enabled=false
"""


def pytest_collection_modifyitems(config, items):
    if os.geteuid() != 0:
        for item in items:
            item.add_marker(pytest.mark.skip(reason="integration tests need root"))


@pytest.fixture(scope="module")
def netns():
    ns = NetNs(NS)
    yield ns
    ns.delete()


@pytest.fixture(scope="module")
def tuned(host_tuned, netns):
    workdir = tempfile.mkdtemp(prefix="irqtune-tuned-")
    daemon = TunedDaemon(netns, workdir)
    try:
        daemon.setup()
        daemon.write_profile("latency-suspend-test", CONFINED_LATENCY_SUSPEND)
        daemon.write_profile("irqtune-test-other", OTHER_PROFILE)
        daemon.write_variables("suspend_nics=va*\n")
        daemon.start()
        yield daemon
        daemon.adm("off", check=False)
    finally:
        daemon.teardown()


@pytest.fixture(autouse=True)
def no_traceback(request):
    """No test may leave a Python traceback in the daemon's log."""
    if "tuned" not in request.fixturenames:
        yield
        return
    daemon = request.getfixturevalue("tuned")
    mark = daemon.log_mark()
    yield
    text = daemon.log_since(mark)
    assert "Traceback" not in text, text[text.index("Traceback"):][:3000]
