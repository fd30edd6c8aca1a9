# SPDX-License-Identifier: GPL-2.0-or-later
"""A measurement window's memory and its perf events
(irqtune.shared.measure.epolltrace, busy): decoded as the rings drain, so what
the daemon keeps is bounded by what it keeps, not by how fast the target
waits; and every way out between opening and closing the events closes
them.

The records are built as the kernel writes them (the layouts of the
tracefs format files in measure_fixtures/, Linux 6.18); the fd tests open
real perf events on this test process's own epoll waits (root, tracefs),
and are skipped where the kernel cannot.
"""

import errno
import os
import select
import threading
import time
import tracemalloc

import pytest

from irqtune.kernel.errors import IrqtuneError
from irqtune.shared.measure import busy, epolltrace, perf
from test_measure import decoder, enter, exit_


# -- decoded as the rings drain -----------------------------------------------

def spinning(tracker, waits, t=0, tid=1):
    """A thread in epoll_wait(timeout 0) in a loop, as the rings deliver it
    (a drain every 1000 waits): an entry and a return of 0 events each."""
    for _ in range(waits // 1000):
        samples = []
        for _ in range(1000):
            samples += [enter(tid, t), exit_(tid, t + 300, 0)]
            t += 1000
        tracker.add(samples)
        tracker.settle(t)
    return t


def peak_bytes(waits):
    tracker = busy.Tracker(decoder())
    tracemalloc.start()
    try:
        spinning(tracker, waits)
        return tracemalloc.get_traced_memory()[1], tracker
    finally:
        tracemalloc.stop()


def test_a_spinning_target_costs_no_memory_per_wait():
    """The probe's target: every wait returns at once with nothing.  What
    is held does not grow with the waits - 20 000 or 200 000 of them peak
    at the same size (one drain's samples) - and no period is kept."""
    small, _ = peak_bytes(20000)
    large, tracker = peak_bytes(200000)
    print("peak while decoding: 20k waits %d bytes, 200k waits %d bytes" % (small, large))
    assert len(tracker.periods) == 0 and tracker.waits == 200000
    assert large < small * 1.2 and large < 2 << 20


def test_kept_periods_are_compact_and_capped():
    """Every wait returning events: the periods are kept as two arrays of
    integers, at most max_periods of them; then the tracker is full (the
    window ends early, truncated)."""
    tracker = busy.Tracker(decoder(), max_periods=1000)
    t = 0
    for _ in range(3):
        samples = []
        for _ in range(1000):
            samples += [exit_(1, t, 4), enter(1, t + 4000)]
            t += 5000
        tracker.add(samples)
        tracker.settle(t)
    assert tracker.full and len(tracker.periods) == 1000
    assert [(p.ns, p.events) for p in list(tracker.periods)[:2]] == [(4000, 4), (4000, 4)]
    periods = tracker.periods
    assert sum(a.itemsize * len(a) for a in (periods.tids, periods.ns, periods.events)) \
        == 1000 * 16


def test_waits_are_put_in_order_across_rings_before_they_count():
    """A thread that returned on one CPU and waited again on another: the
    return can be drained after the entry (two rings, read one after the
    other).  Waits younger than the settle mark are held until the next
    drain, so the period is measured whole; one older than what was already
    counted is dropped with its thread's open period, not mis-paired."""
    tracker = busy.Tracker(decoder())
    tracker.add([enter(1, 2000)])                   # CPU 1's ring, read first
    tracker.settle(1000)
    tracker.add([exit_(1, 500, 3)])                 # CPU 0's ring, read later
    tracker.settle(3000)
    assert [(p.ns, p.events) for p in tracker.periods] == [(1500, 3)]
    tracker.add([exit_(1, 4000, 2), enter(1, 9000)])
    tracker.settle(5000)                             # the return counted, the entry held
    tracker.add([enter(1, 3500)])                    # older than the return counted
    tracker.finish()
    assert [(p.ns, p.events) for p in tracker.periods] == [(1500, 3)]
    assert tracker.late == 1


def test_held_waits_are_bounded():
    """More waits held than MAX_PENDING (a host whose rings deliver faster
    than the settle mark passes): the oldest are counted anyway."""
    tracker = busy.Tracker(decoder(), max_pending=100)
    tracker.add([enter(1, t) for t in range(1000, 1500)])
    tracker.settle(0)
    assert len(tracker._held) <= 100 and tracker.waits >= 400       # the waits held


# -- the perf events are closed on every way out ------------------------------

def fds():
    """This process's perf event fds (a ring's mmap holds a duplicate of
    one): only those, since other threads of the test process (an earlier
    test's, the garbage collector's finalizers) may open and close other
    files meanwhile, as in rpmbuild's %check."""
    held = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink("/proc/self/fd/" + fd) == "anon_inode:[perf_event]":
                held.append(fd)
        except OSError:
            continue        # the listing's own fd, or one closed meanwhile
    return sorted(held)


@pytest.fixture
def perf_events():
    """Skips where this process cannot open the tracepoints (not root, no
    tracefs, no syscall tracepoints)."""
    try:
        epolltrace.EpollTrace([os.getpid()]).close()
    except IrqtuneError as err:
        pytest.skip(str(err))


def epoll_waits(seconds):
    """The window's sleep, spent waiting in epoll (timeout 0, one event
    ready) so that the rings have records to decode."""
    ep, (r, w) = select.epoll(), os.pipe()
    os.write(w, b"x")
    ep.register(r, select.EPOLLIN)
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            ep.poll(0)
    finally:
        ep.close()
        os.close(r)
        os.close(w)


def test_a_window_opens_and_closes_its_events(perf_events):
    before = fds()
    recorded = epolltrace.record([os.getpid()], 0.3, sleep=epoll_waits)
    assert fds() == before
    assert len(recorded.periods) > 100 and recorded.maxevents >= 1


class NoThread(threading.Thread):
    def start(self):
        raise RuntimeError("can't start new thread")


def test_a_copier_that_cannot_start_closes_the_events(perf_events, monkeypatch):
    """Thread or pid exhaustion: each re-check used to leak a set."""
    before = fds()
    monkeypatch.setattr(epolltrace.threading, "Thread", NoThread)
    for _ in range(3):
        with pytest.raises(IrqtuneError, match="cannot start the thread that copies the "
                                               "recording: can't start new thread"):
            epolltrace.record([os.getpid()], 0.1)
    assert fds() == before


def test_enabling_that_fails_closes_the_events(perf_events, monkeypatch):
    before = fds()

    def enable(self, on=True):
        raise OSError(errno.EBADF, "Bad file descriptor")
    monkeypatch.setattr(perf.Recording, "enable", enable)
    with pytest.raises(IrqtuneError, match="enabling the recording: .*Bad file descriptor"):
        epolltrace.record([os.getpid()], 0.1)
    assert fds() == before


def test_a_decoding_error_closes_the_events(perf_events, monkeypatch):
    before = fds()

    def decode(self, raw):
        raise ValueError("a record the decoder does not understand")
    monkeypatch.setattr(busy.Decoder, "decode", decode)
    with pytest.raises(IrqtuneError, match="recording the epoll waits failed: ValueError: a "
                                           "record the decoder does not understand"):
        epolltrace.record([os.getpid()], 0.3, sleep=epoll_waits)
    assert fds() == before
    assert not any(t.name == "irqtune-epolltrace" for t in threading.enumerate())


def test_a_failing_last_drain_closes_the_events(perf_events, monkeypatch):
    before = fds()
    trace = epolltrace.EpollTrace([os.getpid()]).start()
    monkeypatch.setattr(perf.Recording, "drain", lambda self, consume: 1 / 0)
    with pytest.raises(IrqtuneError, match="ZeroDivisionError"):
        trace.stop()
    assert fds() == before


def test_an_interrupted_window_closes_the_events(perf_events):
    before = fds()

    def interrupted(seconds):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        epolltrace.record([os.getpid()], 1, sleep=interrupted)
    assert fds() == before
