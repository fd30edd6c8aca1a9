# SPDX-License-Identifier: GPL-2.0-or-later
"""pytest fixtures of the irqtune kernel lab (see tests/lab/README.md).

Fixtures:
  guest  the default guest: the lab kernel (IRQTUNE_LAB_KERNEL, default
         "lab" = all kernel-patches series) booted with the default
         isolation "isolcpus=managed_irq,domain,2-3 nohz_full=2-3".
  lab    session-wide guest pool: lab.get(kernel=None, cmdline=...,
         **Guest kwargs) returns a running guest with that configuration,
         booting it if needed. One guest runs at a time (the host has two
         cores): asking for another configuration powers the current one
         off. lab.get(kernel="base") boots the unpatched base kernel.

A guest offers run(argv, timeout=) -> (rc, stdout), execute(), spawn(),
read_file(), write_file(), flood() (bounded UDP flood from the host side of
the tap into the guest NIC), host_run() and console(). Its NIC is
guest.nic, the repository is mounted read-only at /irqtune.

Tests skip with the reason when the lab artefacts, QEMU or root are
missing (e.g. when collected outside `make lab`).
"""

import pytest

from support import labvm

_BOOTS = []


class GuestPool:
    def __init__(self):
        self.current = None
        self.key = None

    def get(self, kernel=None, cmdline=labvm.DEFAULT_ISOLATION, **kwargs):
        kernel = kernel or labvm.default_kernel()
        reason = labvm.missing(kernel)
        if reason:
            pytest.skip(reason)
        key = (kernel, cmdline, tuple(sorted(kwargs.items())))
        if self.current is not None and self.key == key and self.current.alive():
            return self.current
        return self.boot(kernel=kernel, cmdline=cmdline, **kwargs)

    def boot(self, kernel=None, cmdline=labvm.DEFAULT_ISOLATION, **kwargs):
        """Always boot a fresh guest (powering off the current one)."""
        kernel = kernel or labvm.default_kernel()
        reason = labvm.missing(kernel)
        if reason:
            pytest.skip(reason)
        self.close()
        g = labvm.Guest(kernel=kernel, cmdline=cmdline, **kwargs)
        g.start()
        _BOOTS.append((kernel, cmdline, g.boot_seconds, str(g.workdir)))
        self.current = g
        self.key = (kernel, cmdline, tuple(sorted(kwargs.items())))
        return g

    def close(self):
        if self.current is not None:
            self.current.shutdown()
            self.current = None
            self.key = None


@pytest.fixture(scope="session")
def lab():
    pool = GuestPool()
    yield pool
    pool.close()


@pytest.fixture
def guest(lab):
    return lab.get()


def pytest_terminal_summary(terminalreporter):
    if not _BOOTS:
        return
    tr = terminalreporter
    tr.section("irqtune lab boots")
    for kernel, cmdline, seconds, workdir in _BOOTS:
        tr.write_line("%-6s %6.1fs to agent  cmdline=%r  (%s)"
                      % (kernel, seconds, cmdline, workdir))
