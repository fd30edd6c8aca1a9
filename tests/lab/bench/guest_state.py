#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Run in the lab guest by the bench before each run: what the kernel and
the server hold now, read without the library under test, plus the
counters the run's figures are differences of.  Prints one JSON object.

  napis      every NAPI of the NIC as napi-get answers it (raw netlink,
             tests/support/rawnapi.py): id, irq, defer-hard-irqs,
             gro-flush-timeout (ns), irq-suspend-timeout (ns)
  rx_queues  {rx queue: NAPI id} as queue-get answers it
  queue_irqs {rx queue: irq} from /proc/interrupts (virtio-net's NAPIs
             carry no irq in napi-get)
  irq_cpus   {irq: effective affinity CPUs} of those interrupts
  epoll      EPIOCGPARAMS of every epoll instance memcached holds, read
             through pidfd_getfd (busy_poll_usecs, budget, prefer)
  slice_ms   IRQTUNE_BENCH_EPOLL_SLICE_MS in memcached's environment when
             the bench's epoll shim is mapped into it, else 0
  affinity   the CPUs memcached's threads may run on
  stats      /proc/stat, /proc/interrupts, /proc/softirqs,
             /proc/net/netstat, /proc/net/dev as text; rx packets per
             queue (qstats-get)

  guest_state.py NIC [--stats-only]
"""

import ctypes
import fcntl
import json
import os
import socket
import struct
import subprocess
import sys


EPIOCGPARAMS = (2 << 30) | (8 << 16) | (0x8A << 8) | 0x02
SYS_PIDFD_GETFD = 438
STATS = ("/proc/stat", "/proc/interrupts", "/proc/softirqs", "/proc/net/netstat", "/proc/net/dev")


QSTATS_GET, QSTATS_SCOPE_QUEUE = 12, 1
QSTATS_IFINDEX, QSTATS_QUEUE_TYPE, QSTATS_QUEUE_ID, QSTATS_SCOPE, QSTATS_RX_PACKETS = 1, 2, 3, 4, 8


def rx_packets_per_queue(nic):
    """{rx queue: packets} from the netdev family's qstats-get, queue scope
    (virtio-net keeps per-queue packet counts there, not in ethtool -S)."""
    from support import rawnapi     # run with the share's tests/ on PYTHONPATH (GUEST_PYTHON)
    genl = rawnapi.RawGenl()
    try:
        payload = (rawnapi._nla(QSTATS_IFINDEX, struct.pack("=I", socket.if_nametoindex(nic)))
                   + rawnapi._nla(QSTATS_SCOPE, struct.pack("=I", QSTATS_SCOPE_QUEUE)))
        replies = genl._talk(genl.family, QSTATS_GET, rawnapi.NLM_F_DUMP, payload)
    finally:
        genl.close()
    out = {}
    for attrs in replies:
        num = {k: int.from_bytes(v, "little") for k, v in attrs.items()}
        if num.get(QSTATS_QUEUE_TYPE) == 0 and QSTATS_RX_PACKETS in num:
            out[num[QSTATS_QUEUE_ID]] = num[QSTATS_RX_PACKETS]
    return out


def stats(nic):
    out = {}
    for path in STATS:
        with open(path) as f:
            out[path] = f.read()
    out["rxq"] = rx_packets_per_queue(nic)
    return out


def memcached_pid():
    res = subprocess.run(["systemctl", "show", "-p", "MainPID", "--value", "memcached"],
                         capture_output=True, text=True)
    pid = int(res.stdout.strip() or 0)
    if not pid:
        raise SystemExit("memcached is not running")
    return pid


def epoll_params(pid):
    libc = ctypes.CDLL(None, use_errno=True)
    found = []
    pidfd = os.pidfd_open(pid)
    try:
        fddir = "/proc/%d/fd" % pid
        for name in sorted(os.listdir(fddir), key=int):
            try:
                if os.readlink(os.path.join(fddir, name)) != "anon_inode:[eventpoll]":
                    continue
            except FileNotFoundError:
                continue
            fd = libc.syscall(SYS_PIDFD_GETFD, pidfd, int(name), 0)
            if fd < 0:
                raise OSError(ctypes.get_errno(), "pidfd_getfd")
            try:
                raw = fcntl.ioctl(fd, EPIOCGPARAMS, bytes(8))
            finally:
                os.close(fd)
            usecs, budget, prefer = struct.unpack("=IHBx", raw)
            found.append({"fd": int(name), "busy_poll_usecs": usecs, "busy_poll_budget": budget,
                          "prefer_busy_poll": prefer})
    finally:
        os.close(pidfd)
    return found


def slice_ms(pid):
    with open("/proc/%d/maps" % pid) as f:
        if "epoll_slice.so" not in f.read():
            return 0
    with open("/proc/%d/environ" % pid, "rb") as f:
        for item in f.read().split(b"\0"):
            if item.startswith(b"IRQTUNE_BENCH_EPOLL_SLICE_MS="):
                return int(item.split(b"=", 1)[1] or 0)
    return 0


def affinity(pid):
    cpus = set()
    for tid in os.listdir("/proc/%d/task" % pid):
        cpus.update(os.sched_getaffinity(int(tid)))
    return sorted(cpus)


def queue_irqs(nic):
    """{rx queue: irq} from /proc/interrupts ("<virtio dev>-input.<q>"):
    virtio-net does not report its NAPIs' interrupts in napi-get."""
    dev = os.path.basename(os.path.realpath("/sys/class/net/%s/device" % nic))
    out = {}
    with open("/proc/interrupts") as f:
        for line in f:
            fields = line.split()
            if fields and fields[0].rstrip(":").isdigit() and fields[-1].startswith(dev + "-input."):
                out[int(fields[-1].rsplit(".", 1)[1])] = int(fields[0].rstrip(":"))
    return out


def cpu_list(irq):
    with open("/proc/irq/%d/effective_affinity_list" % irq) as f:
        text = f.read().strip()
    cpus = []
    for part in text.split(","):
        if part:
            lo, _, hi = part.partition("-")
            cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def main():
    nic = sys.argv[1]
    out = {"stats": stats(nic)}
    if "--stats-only" not in sys.argv:
        import rawnapi
        genl = rawnapi.RawGenl()
        try:
            out["napis"] = genl.napis(nic)
            out["rx_queues"] = genl.rx_queues(nic)
        finally:
            genl.close()
        out["queue_irqs"] = queue_irqs(nic)
        irqs = set(out["queue_irqs"].values()) | {n["irq"] for n in out["napis"] if n.get("irq")}
        out["irq_cpus"] = {str(irq): cpu_list(irq) for irq in sorted(irqs)}
        pid = memcached_pid()
        out.update(pid=pid, epoll=epoll_params(pid), slice_ms=slice_ms(pid), affinity=affinity(pid))
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
