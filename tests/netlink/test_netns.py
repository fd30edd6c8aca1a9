# SPDX-License-Identifier: GPL-2.0-or-later
"""Work inside a named network namespace (irqtune.kernel.netns) on the
host's kernel: the worker thread is inside, the caller's thread never
leaves its own, and the id one namespace knows the other by is read and,
when asked, given."""

import os
import socket

import pytest

from irqtune.kernel import netns
from support.netns import NetNs


@pytest.fixture
def named():
    ns = NetNs("irqtune-nl-ns")
    ns.add_veth("nsveth0", up=False)
    yield ns
    ns.delete()


def test_the_work_runs_inside_and_the_caller_stays_outside(named):
    own = os.stat("/proc/thread-self/ns/net").st_ino
    inside = netns.run_in(named.name, lambda fd: (os.stat("/proc/thread-self/ns/net").st_ino,
                                                 sorted(n for _, n in socket.if_nameindex())))
    assert inside[0] == netns.inode(named.name) != own
    assert inside[1] == ["lo", "nsveth0", "nsveth0p"]
    assert os.stat("/proc/thread-self/ns/net").st_ino == own


def test_an_error_inside_reaches_the_caller(named):
    def fails(_fd):
        raise ValueError("inside")
    with pytest.raises(ValueError, match="inside"):
        netns.run_in(named.name, fails)


def test_the_id_of_the_callers_namespace_is_read_then_given(named):
    assert netns.run_in(named.name, netns.peer_id) is None
    nsid = netns.run_in(named.name, lambda fd: netns.peer_id(fd, assign=True))
    assert nsid is not None and nsid >= 0
    assert netns.run_in(named.name, netns.peer_id) == nsid
    listed = named.exec("ip", "netns", "list-id").stdout
    assert "nsid %d" % nsid in listed


def test_a_name_ip_netns_cannot_have_is_refused():
    for bad in ("", "..", "a/b"):
        with pytest.raises(Exception, match="not a network namespace name"):
            netns.namespace_path(bad)
    assert netns.inode("irqtune-no-such-ns") is None
