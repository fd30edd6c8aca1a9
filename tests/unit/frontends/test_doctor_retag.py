# SPDX-License-Identifier: GPL-2.0-or-later
"""The doctor duplicates a target's socket only where that cannot re-tag
it (irqtune.shared.epoll), and says so where it leaves the sockets alone.

Fixtures in doctor_fixtures/, /proc/cgroups of the development host
(Linux 6.18, cgroup v1 controllers mounted beside a v2 hierarchy):
- cgroups-hybrid-6.18: as it boots, net_cls and net_prio on the v2
  hierarchy (hierarchy 0) with its one cgroup;
- cgroups-v2-children-6.18: with a child cgroup made in the v2 hierarchy
  (/sys/fs/cgroup/unified): net_cls and net_prio count 2 cgroups there,
  and still cannot tell tasks apart (no cgroup v2 interface);
- cgroups-netcls-v1-6.18: during tests/integration/test_doctor_netcls.py,
  net_cls mounted as a v1 hierarchy with the test's child cgroup.
"""

import os
import select
import socket

from irqtune.frontends.doctor import chain
from irqtune.shared import epoll
from irqtune.frontends.doctor.links import Report

FIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "doctor_fixtures")


def fixture(name):
    with open(os.path.join(FIX, name)) as f:
        return f.read()


def test_controllers_on_the_v2_hierarchy_tell_no_task_apart():
    assert epoll.why_sockets_stay(fixture("cgroups-hybrid-6.18")) is None
    assert epoll.why_sockets_stay(fixture("cgroups-v2-children-6.18")) is None


def test_a_v1_net_cls_hierarchy_with_a_child_keeps_the_sockets_untouched():
    text = fixture("cgroups-netcls-v1-6.18")
    assert epoll.parse_cgroups(text)["net_cls"][1:] == (2, 1)
    why = epoll.why_sockets_stay(text)
    assert why.startswith("net_cls (cgroup v1 hierarchy %d holds 2 cgroups) in use: "
                          % epoll.parse_cgroups(text)["net_cls"][0]), why
    assert "pidfd_getfd" in why and "__receive_sock" in why


def test_a_v1_hierarchy_with_only_its_root_and_net_prio_named():
    text = ("#subsys_name\thierarchy\tnum_cgroups\tenabled\n"
            "net_cls\t9\t1\t1\nnet_prio\t9\t3\t1\n")
    assert epoll.why_sockets_stay(text).startswith("net_prio (cgroup v1 hierarchy 9 holds 3")
    assert epoll.why_sockets_stay(text.replace("\t3\t", "\t1\t")) is None


def _inspect_own_epoll(monkeypatch, inspect_own_epoll, why):
    """(instance, fds pidfd_getfd duplicated, {name: fd}) for an epoll fd of
    ours watching a UDP socket and a pipe, socket_dup_disturbs() being why."""
    ep = select.epoll()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    r, w = os.pipe()
    ep.register(sock.fileno(), select.EPOLLIN)
    ep.register(r, select.EPOLLIN)
    numbers = {"epoll": ep.fileno(), "socket": sock.fileno(), "pipe": r}
    duplicated = []
    real_dup = epoll.ProcessFds.dup

    def dup(self, fd):
        duplicated.append(fd)
        return real_dup(self, fd)
    monkeypatch.setattr(epoll.ProcessFds, "dup", dup)
    monkeypatch.setattr(epoll, "socket_dup_disturbs", lambda kfs: why)
    return inspect_own_epoll(ep, sock, r, w), duplicated, numbers


def test_no_socket_is_duplicated_where_it_would_be_re_tagged(monkeypatch, inspect_own_epoll):
    """Only the epoll fd itself goes through pidfd_getfd."""
    inst, duplicated, numbers = _inspect_own_epoll(monkeypatch, inspect_own_epoll,
                                                   "net_cls (...) in use: ...")
    assert duplicated == [numbers["epoll"]]
    assert {t.fd: t.kind for t in inst.targets} == {numbers["socket"]: "socket",
                                                    numbers["pipe"]: "other"}
    assert inst.napi_unread == "net_cls (...) in use: ..."


def test_sockets_are_duplicated_where_that_writes_back_their_values(monkeypatch,
                                                                   inspect_own_epoll):
    inst, duplicated, numbers = _inspect_own_epoll(monkeypatch, inspect_own_epoll, None)
    assert duplicated == [numbers["epoll"], numbers["socket"]]     # the pipe: stat() only
    assert inst.napi_unread is None and inst.napi_ids == []


def _instance(unread):
    i = epoll.EpollInstance(812, 7, params=epoll.EpollParams(0, 64, 1), napi_unread=unread)
    i.targets = [epoll.EpollTarget(10, 100, "socket"), epoll.EpollTarget(11, 101, "socket")]
    return i


def test_unread_napi_ids_are_named_not_taken_for_idle_sockets():
    why = epoll.why_sockets_stay(fixture("cgroups-netcls-v1-6.18"))
    report = Report()
    inst = _instance(why)
    chain.check_epoll(report, inst, "memcached", {})
    chain.check_sockets_seen(report, {812: [inst]})
    epoll_link, sockets = report.links
    assert epoll_link.state == "info"
    assert "2 socket(s), their NAPI ids not read: net_cls" in epoll_link.text
    assert sockets.state == "unknown" and "none has received" not in sockets.text
    assert sockets.text == "the NAPI ids of the target's sockets were not read: " + why
    assert "irqtune doctor --pid PID DEVICE" in sockets.fix
    assert report.verdict()[0] == 2


def test_sockets_without_napi_still_read_as_idle():
    report = Report()
    chain.check_sockets_seen(report, {812: [_instance(None)]})
    link, = report.links
    assert link.state == "unknown" and "has received through a NAPI yet" in link.text
