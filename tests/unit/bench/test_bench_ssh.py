# SPDX-License-Identifier: GPL-2.0-or-later
"""irqtune-bench's ssh transport (bench/irqtune_bench/ssh.py): the remote
shell gets each argument quoted, so what it runs is exactly the bench's
argument vector, whatever a path or value holds; options and destination
never mix."""

import shlex

import pytest

from irqtune_bench.ssh import SshHost
from irqtune_bench.runner import WRITE


@pytest.mark.parametrize("argv", [
    ["sh", "-c", WRITE, "write", "/etc/tuned/latency-suspend-variables.conf", "0644"],
    ["cat", "--", "/etc/systemd/system/memcached.service.d/40-irqtune-bench.conf"],
    ["mcload", "--host", "10.0.0.1; reboot", "--rate", "$(id)", "`x`", "a b", "'q'", ""],
])
def test_the_remote_shell_runs_exactly_the_argument_vector(argv):
    h = SshHost("root@server", ["IdentityFile=/root/.ssh/k"], "/tmp/ctl")
    full = h.argv(argv)
    assert full[:2] == ["ssh", "-o"] and full[-3:-1] == ["--", "root@server"]
    assert shlex.split(full[-1]) == argv


def test_options_are_separate_words_before_the_destination():
    h = SshHost("admin@server", ["ProxyCommand=nc %h %p", "StrictHostKeyChecking=no"], "/tmp/ctl")
    full = h.argv(["true"])
    i = full.index("--")
    assert full[i + 1] == "admin@server"
    assert ["-o", "ProxyCommand=nc %h %p"] == full[full.index("ProxyCommand=nc %h %p") - 1:][:2]
    assert "BatchMode=yes" in full[:i] and "ControlPath=/tmp/ctl/%C" in full[:i]
