# SPDX-License-Identifier: GPL-2.0-or-later
"""The installed `irqtune` command (make install puts it in BINDIR) against
real veth NAPIs in a namespace, with a PATH whose first python3 is not the
one the library was installed for (as with pyenv or a virtualenv)."""

import os
import shutil
import subprocess

import pytest


@pytest.fixture
def foreign_python_first(tmp_path):
    """A PATH whose python3 is a stub that fails, then the system's."""
    stub = tmp_path / "python3"
    stub.write_text("#!/bin/sh\necho 'not the Python irqtune lives in' >&2\nexit 3\n")
    stub.chmod(0o755)
    return "%s:%s" % (tmp_path, os.environ.get("PATH", "/usr/bin:/bin"))


def test_status_lists_every_napi_of_the_device(netns, foreign_python_first):
    command = shutil.which("irqtune", path="/usr/local/bin:/usr/bin")
    assert command, "make install did not put irqtune on PATH"
    netns.add_veth("vcli", queues=2)
    try:
        result = subprocess.run(["ip", "netns", "exec", netns.name, "irqtune", "status", "vcli"],
                                capture_output=True, text=True, timeout=60,
                                env=dict(os.environ, PATH=foreign_python_first))
        assert result.returncode == 0, result.stderr
        rows = [line.split() for line in result.stdout.splitlines()
                if line.split()[:1] == ["vcli"]]
        assert len(rows) == 2, result.stdout      # one NAPI per rx queue of veth
    finally:
        netns.exec("ip", "link", "del", "vcli", check=False)
