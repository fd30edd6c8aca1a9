# SPDX-License-Identifier: GPL-2.0-or-later
"""Recording a process's epoll waits over a bounded window.

The six syscall tracepoints of epoll_wait, epoll_pwait and epoll_pwait2
(entry and return, CONFIG_FTRACE_SYSCALLS) on every online CPU, filtered
in the kernel on the target's thread ids, into perf ring buffers
(irqtune.shared.measure.perf) that a thread of ours drains while the window
runs, decoding as it goes (irqtune.shared.measure.busy.Tracker): what is kept is
the busy periods, compact and at most busy.MAX_PERIODS, never the
samples, so a target waiting as fast as it can (epoll_wait with timeout
0 in a loop) costs the daemon CPU time for the window, not memory.  A
host whose waits come faster than they decode loses samples in the
kernel (counted, never blocking the target).  Threads the target starts
during the window are not followed.

Every way out between opening and closing the perf events closes them:
a copier thread that cannot start, a failed ioctl, a decoding error, an
exception in the window.
"""

import os
import select
import threading
import time
from dataclasses import dataclass, field

from ...kernel.cpus import online_cpus
from ...kernel.errors import IrqtuneError, describe_os_error
from ...kernel.kfs import KFS
from ...kernel.values import index_runs
from . import busy, perf, procstat, tracefs

MAX_SECONDS = 60.0


@dataclass
class Recorded:
    """One window's result."""
    seconds: float
    threads: int
    periods: list = field(default_factory=list)    # busy.Period
    maxevents: int = 0
    lost: int = 0                                   # samples the kernel dropped
    truncated: bool = False                         # ended at busy.MAX_PERIODS
    exited: list = field(default_factory=list)      # pids gone during the window
    started: dict = field(default_factory=dict)     # pid: start time (ticks) measured


def threads_of(pids, kfs=KFS):
    """{tid: pid} of the pids' threads now; IrqtuneError for a pid that is gone."""
    tids = {}
    for pid in pids:
        try:
            for name in os.listdir(kfs.proc_path(pid, "task")):
                tids[int(name)] = pid
        except OSError:
            raise IrqtuneError("pid %d: no such process" % pid) from None
    return tids


def start_time(pid, kfs=KFS):
    """The process's start time in clock ticks (/proc/PID/stat field 22):
    tells a pid that was reused from the one measured."""
    stat = procstat.read(pid, kfs)
    return None if stat is None else stat.start_ticks


def tid_filter(tids):
    """A tracepoint filter matching common_pid against tids, consecutive
    ids folded into ranges (a service's threads mostly are)."""
    return "||".join("common_pid==%d" % a if a == b else
                     "(common_pid>=%d&&common_pid<=%d)" % (a, b) for a, b in index_runs(tids))


class EpollTrace:
    """EpollTrace(pids).start() ... .stop() -> Recorded, or .close() to
    drop it.  Opening fails with one IrqtuneError naming what is missing;
    a recording that fails later raises IrqtuneError from start() or
    stop(), the events closed."""

    def __init__(self, pids, kfs=KFS):
        self.pids, self.kfs = list(pids), kfs
        self.tids = threads_of(self.pids, kfs)
        self.started = {pid: start_time(pid, kfs) for pid in self.pids}
        formats = tracefs.formats("syscalls", busy.TRACEPOINTS)
        if not any(name.startswith("sys_exit_") for name in formats):
            raise IrqtuneError("no syscall tracepoints for epoll_wait in tracefs "
                               "(events/syscalls; the kernel needs CONFIG_FTRACE_SYSCALLS)")
        self.tracker = busy.Tracker(busy.Decoder.from_formats(formats))
        try:
            self.recording = perf.Recording([f["id"] for f in formats.values()],
                                            tid_filter(self.tids), online_cpus(kfs))
        except OSError as err:
            raise IrqtuneError("syscalls:sys_enter_epoll_wait: perf_event_open: %s"
                               % describe_os_error(err, perf.OPEN_MEANINGS)) from None
        self._stop = threading.Event()
        self._copier = None
        self._failed = None         # what ended the copier, raised by stop()
        self.lost = 0
        self.truncated = False
        self.t0 = self.t1 = None

    def start(self):
        self.t0 = time.monotonic()
        try:
            self.recording.enable()
        except BaseException as err:
            self.close()
            if isinstance(err, OSError):
                raise IrqtuneError("enabling the recording: %s" % describe_os_error(err)) from None
            raise
        try:
            self._copier = threading.Thread(target=self._copy, name="irqtune-epolltrace",
                                            daemon=True)
            self._copier.start()
        except BaseException as err:
            # thread or pid exhaustion (RuntimeError)
            self._copier = None
            self.close()
            if isinstance(err, Exception):
                raise IrqtuneError("cannot start the thread that copies the recording: %s"
                                   % err) from None
            raise
        return self

    def _consume(self, data):
        samples, lost = perf.records(data)
        self.lost += lost
        self.tracker.add(samples)

    def _drain(self):
        """Decodes what the rings hold; counts the waits all rings have
        delivered (older than the settle mark, taken before draining)."""
        mark = time.monotonic_ns() - busy.SETTLE_NS
        self.recording.drain(self._consume)
        self.tracker.settle(mark)

    def _copy(self):
        try:
            poller = select.poll()
            for fd in self.recording.fds():
                poller.register(fd, select.POLLIN)
            while not self._stop.is_set():
                poller.poll(100)
                self._drain()
                if self.tracker.full:
                    self.recording.enable(False)
                    self.t1 = time.monotonic()
                    self.truncated = True
                    return
        except Exception as err:          # raised by stop(), the events closed there
            self._failed = err

    def stop(self):
        """Ends the window (if busy.MAX_PERIODS did not end it first),
        decodes the rest and closes the events."""
        try:
            self._stop.set()
            if self._copier is not None:
                self._copier.join()
            self.recording.enable(False)
            if self.t1 is None:
                self.t1 = time.monotonic()
            if self._failed is None:
                self.recording.drain(self._consume)
                self.tracker.finish()
        except Exception as err:
            self._failed = self._failed or err
        finally:
            self.recording.close()
        if self._failed is not None:
            raise IrqtuneError("recording the epoll waits failed: %s: %s"
                               % (type(self._failed).__name__, self._failed))
        exited = [pid for pid, t in self.started.items() if start_time(pid, self.kfs) != t]
        return Recorded(self.t1 - self.t0, len(self.tids), self.tracker.periods,
                        self.tracker.maxevents, self.lost, self.truncated, exited,
                        dict(self.started))

    def close(self):
        """Releases the events without decoding (error paths)."""
        self._stop.set()
        if self._copier is not None:
            self._copier.join()
        self.recording.close()


def record(pids, seconds, kfs=KFS, sleep=time.sleep):
    """Recorded for pids over seconds (bounded by MAX_SECONDS)."""
    trace = EpollTrace(pids, kfs).start()
    try:
        sleep(min(max(seconds, 0.1), MAX_SECONDS))
    except BaseException:
        trace.close()
        raise
    return trace.stop()
