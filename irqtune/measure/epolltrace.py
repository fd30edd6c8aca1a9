# SPDX-License-Identifier: GPL-2.0-or-later
"""Recording a process's epoll waits over a bounded window.

The six syscall tracepoints of epoll_wait, epoll_pwait and epoll_pwait2
(entry and return, CONFIG_FTRACE_SYSCALLS) on every online CPU, filtered
in the kernel on the target's thread ids, into perf ring buffers
(irqtune.measure.perf) that a thread of ours copies out while the window
runs; decoding waits until the window is over, so that it does not
compete with the service for CPU.  Threads the target starts during the
window are not followed.
"""

import os
import select
import threading
import time
from dataclasses import dataclass, field

from ..errors import IrqtuneError
from ..kfs import KFS
from ..values import parse_index_list
from . import busy, perf, tracefs

MAX_SECONDS = 60.0
# Copied bytes at which the window ends early: ~56-88 bytes a wait, so
# about 400 000 waits - plenty for percentiles, and memory stays bounded.
MAX_BYTES = 64 << 20
# Per CPU: up to 512 KiB (less on hosts with many CPUs: perf.ring_pages);
# the copying thread is woken at half of it.
RING_PAGES = None


@dataclass
class Recorded:
    """One window's result."""
    seconds: float
    threads: int
    periods: list = field(default_factory=list)    # busy.Period
    maxevents: int = 0
    lost: int = 0                                   # samples the kernel dropped
    truncated: bool = False                         # ended at MAX_BYTES
    exited: list = field(default_factory=list)      # pids gone during the window


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
    text = kfs.read_optional(kfs.proc_path(pid, "stat"))
    if not text:
        return None
    return int(text.rpartition(")")[2].split()[19])


def tid_filter(tids):
    """A tracepoint filter matching common_pid against tids, consecutive
    ids folded into ranges (a service's threads mostly are)."""
    ranges, tids = [], sorted(tids)
    for tid in tids:
        if ranges and tid == ranges[-1][1] + 1:
            ranges[-1][1] = tid
        else:
            ranges.append([tid, tid])
    return "||".join("common_pid==%d" % a if a == b else
                     "(common_pid>=%d&&common_pid<=%d)" % (a, b) for a, b in ranges)


def online_cpus(kfs=KFS):
    return parse_index_list("cpu online",
                            kfs.read_text(kfs.sys_path("devices/system/cpu/online")))


class EpollTrace:
    """EpollTrace(pids).start() ... .stop() -> Recorded.  Opening fails with
    one IrqtuneError naming what is missing."""

    def __init__(self, pids, kfs=KFS, max_bytes=MAX_BYTES, pages=RING_PAGES):
        self.pids, self.kfs, self.max_bytes = list(pids), kfs, max_bytes
        self.tids = threads_of(self.pids, kfs)
        self.started = {pid: start_time(pid, kfs) for pid in self.pids}
        formats = tracefs.formats("syscalls", busy.tracepoint_names())
        if not any(name.startswith("sys_exit_") for name in formats):
            raise IrqtuneError("no syscall tracepoints for epoll_wait in tracefs "
                               "(events/syscalls; the kernel needs CONFIG_FTRACE_SYSCALLS)")
        self.decoder = busy.Decoder.from_formats(formats)
        try:
            self.recording = perf.Recording([f["id"] for f in formats.values()],
                                            tid_filter(self.tids), online_cpus(kfs), pages)
        except OSError as err:
            raise IrqtuneError(perf.explain_open_error(err, "syscalls:sys_enter_epoll_wait")) \
                from None
        self._stop = threading.Event()
        self._copier = None
        self.truncated = False
        self.t0 = self.t1 = None

    def start(self):
        self.t0 = time.monotonic()
        self.recording.enable()
        self._copier = threading.Thread(target=self._copy, name="irqtune-epolltrace",
                                        daemon=True)
        self._copier.start()
        return self

    def _copy(self):
        poller = select.poll()
        for fd in self.recording.fds():
            poller.register(fd, select.POLLIN)
        while not self._stop.is_set():
            poller.poll(100)
            self.recording.drain()
            if self.recording.size >= self.max_bytes:
                self.recording.enable(False)
                self.t1 = time.monotonic()
                self.truncated = True
                return

    def stop(self):
        """Ends the window (if MAX_BYTES did not end it first) and decodes."""
        try:
            self._stop.set()
            if self._copier is not None:
                self._copier.join()
            self.recording.enable(False)
            if self.t1 is None:
                self.t1 = time.monotonic()
            self.recording.drain()
            samples, lost = [], 0
            for ring in self.recording.rings:
                got, dropped = perf.records(ring.data())
                samples.extend(got)
                lost += dropped
        finally:
            self.recording.close()
        periods, maxevents = busy.busy_periods(samples, self.decoder)
        exited = [pid for pid, t in self.started.items() if start_time(pid, self.kfs) != t]
        return Recorded(self.t1 - self.t0, len(self.tids), periods, maxevents, lost,
                        self.truncated, exited)

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
