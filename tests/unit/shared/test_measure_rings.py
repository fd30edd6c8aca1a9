# SPDX-License-Identifier: GPL-2.0-or-later
"""A CPU's perf ring (irqtune.shared.measure.perf.CpuRing) that fails
half made - a later event's perf_event_open, the ring's mmap, the
SET_OUTPUT that joins an event to the ring, the SET_FILTER the kernel
refuses (EINVAL for a filter it cannot parse) - closes every event it
opened and unmaps its ring itself: the Recording that asked for it never
holds it, so nothing else would (issue 47 item 14).  And a recording
whose ENABLE or DISABLE fails is closed by the window (EpollTrace).

The kernel is faked: an event is a memfd, so what is left open shows in
/proc/self/fd and a mapping of it in /proc/self/maps as a real event's
would.  test_measure_window.py opens real events where the host can.
"""

import collections
import errno
import mmap
import os
import types

import pytest

from irqtune.kernel.errors import IrqtuneError
from irqtune.shared.measure import epolltrace, perf
from test_measure import formats

MEMFD = "irqtune-fake-perf-event"
EVENTS = [1066, 1067, 1068]         # ids of three tracepoints
PAGES = 8


class FakePerf:
    """perf_event_open, mmap and ioctl as CpuRing calls them, failing the
    nth call of one kind ("open", "mmap" or an ioctl request) with error."""

    made = []           # every mapping, of every test

    def __init__(self, monkeypatch, fail=None, nth=1, error=None):
        self.fail, self.nth = fail, nth
        self.error = error or OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        self.calls = collections.Counter()
        self.opened, self.maps = [], []
        monkeypatch.setattr(perf, "_open", self.open)
        monkeypatch.setattr(perf, "mmap", types.SimpleNamespace(
            mmap=self.mmap, PAGESIZE=mmap.PAGESIZE, MAP_SHARED=mmap.MAP_SHARED,
            PROT_READ=mmap.PROT_READ, PROT_WRITE=mmap.PROT_WRITE))
        monkeypatch.setattr(perf, "fcntl", types.SimpleNamespace(ioctl=self.ioctl))

    def _call(self, kind):
        self.calls[kind] += 1
        if kind == self.fail and self.calls[kind] == self.nth:
            raise self.error

    def open(self, attr, cpu, nr):
        self._call("open")
        fd = os.memfd_create(MEMFD, os.MFD_CLOEXEC)
        os.ftruncate(fd, 1 << 20)
        self.opened.append(fd)
        return fd

    def mmap(self, fd, length, flags, prot):
        self._call("mmap")
        ring = mmap.mmap(fd, length, flags, prot)
        self.maps.append(ring)
        self.made.append(ring)
        return ring

    def ioctl(self, fd, request, arg):
        os.fstat(fd)                # EBADF on an event already closed, as the kernel
        self._call(request)
        return 0


def left_open():
    held = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if MEMFD in os.readlink("/proc/self/fd/" + fd):
                held.append(fd)
        except OSError:
            continue        # the listing's own fd, or one closed meanwhile
    return held


def left_mapped():
    with open("/proc/self/maps") as f:
        return [line for line in f if MEMFD in line]


def assert_all_released(kernel):
    assert left_open() == [] and left_mapped() == []
    assert all(ring.closed for ring in kernel.maps)


@pytest.fixture(autouse=True)
def released_after():
    """What a failing test left open is closed after it, so that the next
    test starts clean."""
    yield
    for fd in left_open():
        os.close(int(fd))
    for m in FakePerf.made:
        m.close()
    FakePerf.made.clear()


SET_OUTPUT, SET_FILTER = perf.PERF_EVENT_IOC_SET_OUTPUT, perf.PERF_EVENT_IOC_SET_FILTER


@pytest.mark.parametrize("fail, nth, opened", [
    ("open", 2, 1),                 # the second event's perf_event_open (EMFILE, ENOENT...)
    ("open", 3, 2),
    ("mmap", 1, 3),                 # beyond perf_event_mlock_kb: EPERM
    (SET_OUTPUT, 1, 3),
    (SET_OUTPUT, 2, 3),
    (SET_FILTER, 1, 3),             # a filter the kernel refuses
    (SET_FILTER, 3, 3),
], ids=["open-2", "open-3", "mmap", "set-output-1", "set-output-2", "set-filter-1",
        "set-filter-3"])
def test_a_ring_that_fails_half_made_closes_its_events(monkeypatch, fail, nth, opened):
    kernel = FakePerf(monkeypatch, fail, nth)
    with pytest.raises(OSError) as err:
        perf.CpuRing(0, EVENTS, "common_pid==4242", PAGES, 298)
    assert err.value is kernel.error
    assert len(kernel.opened) == opened and len(kernel.maps) == (fail not in ("open", "mmap"))
    assert_all_released(kernel)


def test_a_ring_interrupted_while_it_is_made_closes_its_events(monkeypatch):
    """Ctrl-C (or TuneD's SIGTERM raised as an exception) between two
    ioctls: not an OSError, closed all the same."""
    kernel = FakePerf(monkeypatch, SET_FILTER, 2, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        perf.CpuRing(0, EVENTS, "common_pid==4242", PAGES, 298)
    assert_all_released(kernel)


def test_a_ring_made_whole_holds_its_events_until_closed(monkeypatch):
    """The fake's own check: a ring that is made keeps its events."""
    kernel = FakePerf(monkeypatch)
    ring = perf.CpuRing(0, EVENTS, "common_pid==4242", PAGES, 298)
    assert len(left_open()) == len(EVENTS) + 1          # mmap keeps a duplicate
    assert len(left_mapped()) == 1
    assert kernel.calls[SET_FILTER] == len(EVENTS) and kernel.calls[SET_OUTPUT] == 2
    ring.close()
    assert_all_released(kernel)


def test_a_recording_whose_later_ring_fails_closes_every_ring(monkeypatch):
    """The third CPU's filter refused: the two rings made before are closed
    by the recording, the half-made one by itself."""
    kernel = FakePerf(monkeypatch, SET_FILTER, 2 * len(EVENTS) + 2)
    with pytest.raises(OSError):
        perf.Recording(EVENTS, "common_pid==4242", [0, 1, 2])
    assert len(kernel.opened) == 3 * len(EVENTS) and len(kernel.maps) == 3
    assert_all_released(kernel)


@pytest.fixture
def window(monkeypatch):
    """EpollTrace of this process on two CPUs, tracefs from the fixtures."""
    monkeypatch.setattr(epolltrace.tracefs, "formats", lambda system, names: formats())
    monkeypatch.setattr(epolltrace, "online_cpus", lambda kfs: [0, 1])


def test_enabling_that_fails_on_a_later_ring_closes_every_ring(monkeypatch, window):
    events = len(formats())
    kernel = FakePerf(monkeypatch, perf.PERF_EVENT_IOC_ENABLE, events + 1)
    with pytest.raises(IrqtuneError, match="enabling the recording: .*Invalid argument"):
        epolltrace.EpollTrace([os.getpid()]).start()
    assert len(kernel.opened) == 2 * events
    assert_all_released(kernel)


def test_disabling_that_fails_closes_every_ring(monkeypatch, window):
    kernel = FakePerf(monkeypatch, perf.PERF_EVENT_IOC_DISABLE, 1)
    trace = epolltrace.EpollTrace([os.getpid()]).start()
    with pytest.raises(IrqtuneError, match="recording the epoll waits failed: OSError"):
        trace.stop()
    assert_all_released(kernel)
