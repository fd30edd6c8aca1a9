# SPDX-License-Identifier: GPL-2.0-or-later
"""Kernel tracepoints recorded through perf_event_open(2), without the perf
tool or its Python binding: one event per tracepoint and CPU, each CPU's
events writing into one mmap ring buffer, handed out while they run.

Why perf events and not a tracefs instance: an event lives exactly as long
as its file descriptor.  When the recording process ends - also by
SIGKILL - the kernel closes the descriptors and unregisters the
tracepoints; nothing can be left enabled and nothing needs sweeping on
the next start.  A tracefs instance outlives its creator.

The ring buffer's layout is include/uapi/linux/perf_event.h
(struct perf_event_mmap_page; data_head/data_tail at 1024/1032,
data_offset/data_size at 1040/1048 since Linux 4.1).
"""

import ctypes
import errno
import fcntl
import mmap
import os
import resource
import struct

from ...kernel import syscalls
from ...kernel.errors import IrqtuneError

PERF_TYPE_TRACEPOINT = 2
PERF_SAMPLE_TID = 1 << 1
PERF_SAMPLE_TIME = 1 << 2
PERF_SAMPLE_RAW = 1 << 10
PERF_RECORD_LOST = 2
PERF_RECORD_SAMPLE = 9
PERF_FLAG_FD_CLOEXEC = 1 << 3
CLOCK_MONOTONIC = 1

# perf_event_attr flag bits
_DISABLED, _WATERMARK, _USE_CLOCKID = 1 << 0, 1 << 14, 1 << 25

# struct perf_event_attr up to PERF_ATTR_SIZE_VER5 (Linux 4.1): type, size,
# config, sample_period, sample_type, read_format, flags, wakeup_watermark,
# bp_type, config1, config2, branch_sample_type, sample_regs_user,
# sample_stack_user, clockid, sample_regs_intr, aux_watermark,
# sample_max_stack, reserved
_ATTR = struct.Struct("=IIQQQQQIIQQQQIiQIHH")
assert _ATTR.size == 112

_IOC_WRITE = 1
PERF_EVENT_IOC_ENABLE = 0x2400
PERF_EVENT_IOC_DISABLE = 0x2401
PERF_EVENT_IOC_SET_OUTPUT = 0x2405
# _IOW('$', 6, char *): the size field is that of a pointer
PERF_EVENT_IOC_SET_FILTER = (_IOC_WRITE << 30) | (ctypes.sizeof(ctypes.c_void_p) << 16) \
    | (0x24 << 8) | 6
# The kernel copies a filter with strndup_user(arg, PAGE_SIZE).
MAX_FILTER = 4095

_HEAD, _TAIL, _DATA_OFFSET, _DATA_SIZE = 1024, 1032, 1040, 1048
_U64 = struct.Struct("=Q")


def tracepoint_attr(event_id, watermark):
    """perf_event_attr bytes: every hit of the tracepoint is one sample
    with the thread, a CLOCK_MONOTONIC time and the tracepoint's record;
    created disabled; the reader is woken when watermark bytes are waiting."""
    sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW
    flags = _DISABLED | _WATERMARK | _USE_CLOCKID
    return _ATTR.pack(PERF_TYPE_TRACEPOINT, _ATTR.size, event_id, 1, sample_type, 0, flags,
                      watermark, 0, 0, 0, 0, 0, 0, CLOCK_MONOTONIC, 0, 0, 0, 0)


def _open(attr, cpu, nr):
    buf = ctypes.create_string_buffer(attr, len(attr))
    return syscalls.call(nr, buf, ctypes.c_int(-1), ctypes.c_int(cpu), ctypes.c_int(-1),
                         ctypes.c_ulong(PERF_FLAG_FD_CLOEXEC))


# What perf_event_open(2)'s errors mean for a tracepoint (describe_os_error).
OPEN_MEANINGS = {
    **dict.fromkeys((errno.EACCES, errno.EPERM), "not permitted (%s): needs root, or "
                    "CAP_PERFMON with kernel.perf_event_paranoid"),
    errno.ENOENT: "the kernel has no such tracepoint (%s)",
    errno.ENOSYS: "the kernel has no perf events (%s: CONFIG_PERF_EVENTS)"}


class CpuRing:
    """Tracepoint events on one CPU sharing one ring buffer."""

    def __init__(self, cpu, event_ids, filter_text, pages, nr):
        self.fds = []
        self.map = None
        size = pages * mmap.PAGESIZE
        try:
            for event_id in event_ids:
                self.fds.append(_open(tracepoint_attr(event_id, size // 2), cpu, nr))
            self.map = mmap.mmap(self.fds[0], (pages + 1) * mmap.PAGESIZE, mmap.MAP_SHARED,
                                 mmap.PROT_READ | mmap.PROT_WRITE)
            for fd in self.fds[1:]:
                fcntl.ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, self.fds[0])
            for fd in self.fds:
                fcntl.ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter_text.encode() + b"\0")
        except BaseException:
            self.close()
            raise
        offset, data_size = (_U64.unpack_from(self.map, o)[0] for o in (_DATA_OFFSET, _DATA_SIZE))
        self.data_offset = offset or mmap.PAGESIZE
        self.data_size = data_size or size

    def enable(self, on=True):
        for fd in self.fds:
            fcntl.ioctl(fd, PERF_EVENT_IOC_ENABLE if on else PERF_EVENT_IOC_DISABLE, 0)

    def drain(self, consume):
        """Copies what the kernel wrote since the last call, frees it in the
        ring and hands it to consume(bytes): nothing is kept here."""
        head = _U64.unpack_from(self.map, _HEAD)[0]
        tail = _U64.unpack_from(self.map, _TAIL)[0]
        if head == tail:
            return
        start, end = tail % self.data_size, head % self.data_size
        base = self.data_offset
        if start < end:
            data = self.map[base + start:base + end]
        else:
            data = self.map[base + start:base + self.data_size] + self.map[base:base + end]
        _U64.pack_into(self.map, _TAIL, head)
        consume(data)

    def close(self):
        if self.map is not None:
            self.map.close()
            self.map = None
        for fd in self.fds:
            os.close(fd)
        self.fds = []


def records(data):
    """(tid, time ns, raw tracepoint record) of each sample in a ring's
    bytes, and the count of samples the kernel lost (PERF_RECORD_LOST)."""
    samples, lost, pos, end = [], 0, 0, len(data)
    while pos + 8 <= end:
        kind, _, size = struct.unpack_from("=IHH", data, pos)
        if size < 8 or pos + size > end:
            break
        if kind == PERF_RECORD_SAMPLE:
            _, tid, time_ns, raw_size = struct.unpack_from("=IIQI", data, pos + 8)
            raw = data[pos + 28:pos + 28 + raw_size]
            samples.append((tid, time_ns, raw))
        elif kind == PERF_RECORD_LOST:
            lost += struct.unpack_from("=QQ", data, pos + 8)[1]
        pos += size
    return samples, lost


def ring_pages(cpus, most=128, budget=32 << 20):
    """Data pages per CPU ring (a power of two, as the kernel wants): up to
    most (512 KiB), but all rings together within budget bytes - they are
    pinned memory - and at least 8.  The reader is woken at half a ring."""
    pages = most
    while pages > 8 and pages * mmap.PAGESIZE * cpus > budget:
        pages //= 2
    return pages


def _room_for_fds(count):
    """Raise the soft limit of open files when count more would not fit
    (6 per CPU, and many CPUs)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = len(os.listdir("/proc/self/fd")) + count + 16
    if soft != resource.RLIM_INFINITY and wanted > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))


class Recording:
    """Tracepoints on every online CPU, filtered; the caller drains
    (Recording.drain) and decodes what it is handed."""

    def __init__(self, event_ids, filter_text, cpus):
        if len(filter_text) > MAX_FILTER:
            raise IrqtuneError("tracepoint filter of %d characters is longer than the kernel "
                               "takes (%d): the target has too many threads" % (
                                   len(filter_text), MAX_FILTER))
        nr = syscalls.number("perf_event_open")
        pages = ring_pages(len(cpus))
        _room_for_fds(2 * len(event_ids) * len(cpus))   # Python's mmap keeps a dup
        self.rings = []
        try:
            for cpu in cpus:
                self.rings.append(CpuRing(cpu, event_ids, filter_text, pages, nr))
        except BaseException:
            self.close()
            raise

    def fds(self):
        return [r.fds[0] for r in self.rings]

    def enable(self, on=True):
        for ring in self.rings:
            ring.enable(on)

    def drain(self, consume):
        """Each ring's new bytes to consume(bytes), ring after ring."""
        for ring in self.rings:
            ring.drain(consume)

    def close(self):
        for ring in self.rings:
            ring.close()
        self.rings = []
