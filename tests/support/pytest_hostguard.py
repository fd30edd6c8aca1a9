# SPDX-License-Identifier: GPL-2.0-or-later
"""pytest's side of hostguard: recover at the start of every run (root
only), and the session fixture the daemon-driving suites depend on."""

import os

import pytest

from support import hostguard


def pytest_configure(config):
    if os.geteuid() != 0:
        return
    hostguard.terminate_as_interrupt()
    meta = hostguard.recover()
    if meta is not None:
        print("irqtune tests: the last run was interrupted; /etc/tuned, /run/irqtune "
              "and the TuneD daemon (%s) put back as they were before it"
              % ("running: %s" % meta["active"] if meta["daemon_running"] else "not running"))


@pytest.fixture(scope="session")
def host_tuned():
    """The system's TuneD stopped and /etc/tuned saved for the whole session;
    both put back at its end (or by the next run, if this one is killed)."""
    meta = hostguard.save()
    try:
        yield meta
    finally:
        hostguard.restore()
