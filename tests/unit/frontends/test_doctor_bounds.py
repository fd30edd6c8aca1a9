# SPDX-License-Identifier: GPL-2.0-or-later
"""The doctor's inspection of a target is bounded - epoll instances,
watches and sockets examined of each, and time - and says what it left
out (issue 47 item 5: a target's 500 epoll instances x 2000 watches took
the doctor to 211 MiB and 36-102 s).

The instances inspected are this process's own (real epoll fds, real
sockets, as tests/unit/conftest.py's inspect_own_epoll); an instance's
fdinfo with more watches than any process here holds is a fixture tree
(KernelFs) whose tfd: lines copy the format of doctor_fixtures/
fdinfo-eventpoll-6.18 (Linux 6.18).
"""

import os
import select
import socket
import tracemalloc

import pytest

from irqtune.frontends.doctor import chain
from irqtune.frontends.doctor.links import Report
from irqtune.kernel.kfs import KernelFs
from irqtune.shared import epoll


@pytest.fixture
def own_epoll(monkeypatch):
    """(epoll object, [socket fds], pipe read fd, [fds pidfd_getfd
    duplicated]): one epoll instance of ours watching 12 UDP sockets and a
    pipe; all closed afterwards."""
    ep = select.epoll()
    socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(12)]
    r, w = os.pipe()
    for s in socks:
        ep.register(s.fileno(), select.EPOLLIN)
    ep.register(r, select.EPOLLIN)
    duplicated = []
    real_dup = epoll.ProcessFds.dup

    def dup(self, fd):
        duplicated.append(fd)
        return real_dup(self, fd)
    monkeypatch.setattr(epoll.ProcessFds, "dup", dup)
    monkeypatch.setattr(epoll, "socket_dup_disturbs", lambda kfs: None)
    try:
        epoll.check_pidfd_getfd()
    except epoll.UnsupportedError as err:
        pytest.skip(str(err))
    yield ep, [s.fileno() for s in socks], r, duplicated
    for f in [ep] + socks:
        f.close()
    os.close(r)
    os.close(w)


def own_instance(inspection, ep):
    inst, = [i for i in inspection.instances if i.fd == ep.fileno()]
    return inst


def test_an_instance_with_more_watches_than_the_bound_is_examined_to_it_and_says_so(own_epoll):
    ep, socks, _pipe, duplicated = own_epoll
    bounds = epoll.Bounds(instances=1000, watches=8, sockets=3, seconds=60)
    inspection = epoll.inspect_process(os.getpid(), bounds=bounds)
    inst = own_instance(inspection, ep)
    assert len(inst.targets) == 8 and inst.watches == 13
    assert len(inst.sockets) <= 8
    sockets_duplicated = [fd for fd in duplicated if fd in socks]
    assert len(sockets_duplicated) == 3
    skipped = inspection.skipped()
    assert "examined the first 8 watches of each, the NAPI ids of the first 3 sockets of each" \
        in skipped, skipped
    assert skipped.endswith("the rest not inspected"), skipped
    report = Report()
    chain.check_bounds(report, inspection, "python3")
    link, = report.links
    assert (link.group, link.state, link.subject) == ("epoll", "info",
                                                       "pid %d (python3)" % os.getpid())
    assert link.text == skipped


def test_an_instance_within_the_bounds_is_examined_whole_and_nothing_is_said(own_epoll):
    ep, socks, pipe, duplicated = own_epoll
    inspection = epoll.inspect_process(os.getpid())
    inst = own_instance(inspection, ep)
    kinds = {fd: "socket" for fd in socks}
    kinds[pipe] = "other"
    assert {t.fd: t.kind for t in inst.targets} == kinds
    assert inst.watches == 13
    assert sorted(fd for fd in duplicated if fd in socks) == sorted(socks)
    assert inspection.skipped() is None
    report = Report()
    chain.check_bounds(report, inspection, "python3")
    assert report.links == []


def test_the_default_bounds_stop_a_large_instance(own_epoll):
    """MAX watches and sockets of each instance hold without a Bounds
    given: 300 sockets in one instance, more than either."""
    ep = select.epoll()
    socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(300)]
    numbers = [s.fileno() for s in socks]
    _, _, _, duplicated = own_epoll
    try:
        for s in socks:
            ep.register(s.fileno(), select.EPOLLIN)
        inspection = epoll.inspect_process(os.getpid())
        inst = own_instance(inspection, ep)
    finally:
        ep.close()
        for s in socks:
            s.close()
    assert (len(inst.targets), inst.watches) == (epoll.BOUNDS.watches, 300)
    assert len([fd for fd in duplicated if fd in numbers]) == epoll.BOUNDS.sockets
    assert "examined the first 256 watches of each, the NAPI ids of the first 64 sockets of " \
        "each; the rest not inspected" in inspection.skipped()


def test_the_instance_bound_leaves_later_epoll_fds_counted_not_inspected(own_epoll):
    ep, _socks, _pipe, _duplicated = own_epoll
    extra = [select.epoll() for _ in range(3)]
    try:
        inspection = epoll.inspect_process(os.getpid(), bounds=epoll.Bounds(instances=2))
    finally:
        for e in extra:
            e.close()
    assert len(inspection.instances) == 2 and inspection.epoll_fds >= 4
    assert "examined the first 2 epoll instances" in inspection.skipped()


def test_the_time_bound_stops_the_inspection_and_is_said(own_epoll):
    ep, _socks, _pipe, _duplicated = own_epoll
    ticks = iter(range(0, 10 ** 6))
    inspection = epoll.inspect_process(os.getpid(), bounds=epoll.Bounds(seconds=5),
                                       clock=lambda: next(ticks))
    assert inspection.out_of_time
    examined = sum(len(i.targets) for i in inspection.instances)
    assert examined <= 5
    assert "stopped at its 5 s bound" in inspection.skipped()


def test_fdinfo_of_a_million_watches_costs_no_object_per_line(tmp_path):
    """fdinfo is read line by line and stops being parsed at the bound:
    the tfd: lines past it are counted only.  Our own epoll fd, its fdinfo
    a fixture of 1,000,000 watches (their fds name nothing in the tree:
    "gone")."""
    ep = select.epoll()
    pid = os.getpid()
    fd_dir = tmp_path / str(pid) / "fd"
    fd_dir.mkdir(parents=True)
    os.symlink(epoll.EVENTPOLL_LINK, fd_dir / str(ep.fileno()))
    head = "pos:\t0\nflags:\t02\nmnt_id:\t15\nino:\t1057\n"
    line = "tfd: %8d events:       19 data:             %x  pos:0 ino:%x sdev:8\n"
    (tmp_path / str(pid) / "fdinfo").mkdir()
    with open(tmp_path / str(pid) / "fdinfo" / str(ep.fileno()), "w") as f:
        f.write(head)
        f.writelines(line % (n, n, 0x10000 + n) for n in range(10 ** 6))
    kfs = KernelFs(proc=str(tmp_path))
    try:
        tracemalloc.start()
        inspection = epoll.inspect_process(pid, kfs)
        _, peak = tracemalloc.get_traced_memory()
    except epoll.UnsupportedError as err:
        pytest.skip(str(err))
    finally:
        tracemalloc.stop()
        ep.close()
    inst, = inspection.instances
    assert inst.watches == 10 ** 6 and len(inst.targets) == epoll.BOUNDS.watches
    assert {t.kind for t in inst.targets} == {"gone"}
    assert inspection.watches == 10 ** 6
    assert peak < 4 * 2 ** 20, peak           # one object a line: > 100 MB
    assert inspection.skipped().startswith("1 epoll instance, 1,000,000 watches: ")
