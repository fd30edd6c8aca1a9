# SPDX-License-Identifier: GPL-2.0-or-later
"""What runs on the server (as root), started by the bench before and
after each run: `irqtune-bench server-state NIC` prints one JSON object
of what the kernel and the server hold now, read without the library
under test, plus the counters a run's figures are differences of
(after the run, `--stats-only`: the counters and the NAPIs' values only).

  napis      every NAPI of the NIC as napi-get answers it (netlink.py):
             id, irq, defer-hard-irqs, gro-flush-timeout (ns),
             irq-suspend-timeout (ns)
  rx_queues  {rx queue: NAPI id} as queue-get answers it
  queue_irqs {rx queue: irq}: the NAPI's irq from napi-get, else
             virtio-net's "<device>-input.<q>" line of /proc/interrupts
             (virtio-net's NAPIs carry no irq in napi-get)
  irq_cpus   {irq: effective affinity CPUs} of those interrupts
  epoll      EPIOCGPARAMS of every epoll instance the service holds, read
             through pidfd_getfd (busy_poll_usecs, budget, prefer)
  slice_ms   IRQTUNE_BENCH_EPOLL_SLICE_MS in the service's environment
             when the bench's epoll shim is mapped into it, else 0
  affinity   the CPUs the service's threads may run on
  stats      /proc/stat, /proc/interrupts, /proc/softirqs,
             /proc/net/netstat, /proc/net/dev as text; rx packets per
             queue (qstats-get); the service's threads' run and run-queue
             wait (schedstat, ns); CLOCK_MONOTONIC

`irqtune-bench count` counts instructions per CPU with perf while the
load runs (count_instructions()).  nic_of_address() is the bench's own
(run on the administrator's machine on the server's `ip -j addr show`).
"""

import ctypes
import fcntl
import json
import os
import platform
import struct
import subprocess
import sys
import time

from . import netlink, placement

EPIOCGPARAMS = (2 << 30) | (8 << 16) | (0x8A << 8) | 0x02
# pidfd_getfd: 438 in the asm-generic table and on x86, s390, powerpc;
# 64-bit MIPS numbers its calls from 5000 (n64) - not one number everywhere
SYS_PIDFD_GETFD = {"mips64": 5438}.get(platform.machine(), 438)
STATS = ("/proc/stat", "/proc/interrupts", "/proc/softirqs", "/proc/net/netstat", "/proc/net/dev")


def service_pid(service):
    res = subprocess.run(["systemctl", "show", "-p", "MainPID", "--value", "--", service],
                         capture_output=True, text=True)
    pid = int(res.stdout.strip() or 0)
    if not pid:
        raise SystemExit("irqtune-bench: service %s is not running" % service)
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
        try:
            cpus.update(os.sched_getaffinity(int(tid)))
        except OSError:         # a thread that just ended
            pass
    return sorted(cpus)


def virtio_queue_irqs(interrupts, device):
    """{rx queue: irq} of virtio-net's "<device>-input.<q>" lines."""
    out = {}
    for line in interrupts.splitlines():
        fields = line.split()
        if fields and fields[0].rstrip(":").isdigit() and fields[-1].startswith(device + "-input."):
            out[int(fields[-1].rsplit(".", 1)[1])] = int(fields[0].rstrip(":"))
    return out


def queue_irqs(nic, napis, rx_queues, interrupts):
    """{rx queue: irq}: the irq napi-get gives the queue's NAPI; virtio-net
    gives none, its queue vectors are found by name."""
    irq_of_napi = {n["id"]: n["irq"] for n in napis if n.get("irq")}
    out = {q: irq_of_napi[nid] for q, nid in rx_queues.items() if nid in irq_of_napi}
    if not out:
        device = os.path.basename(os.path.realpath("/sys/class/net/%s/device" % nic))
        out = virtio_queue_irqs(interrupts, device)
    return out


def stats(nic, pid=None):
    out = {}
    for path in STATS:
        with open(path) as f:
            out[path] = f.read()
    with netlink.Netdev() as nd:
        out["rxq"] = nd.rx_packets_per_queue(nic)
    out["monotonic"] = time.monotonic()
    if pid:
        out["service_threads"] = {str(tid): t for tid, t in placement.snapshot(pid).items()}
    return out


def state(nic, service="memcached", stats_only=False):
    pid = service_pid(service)
    out = {"stats": stats(nic, pid)}
    with netlink.Netdev() as nd:
        out["napis"] = nd.napis(nic)
        if stats_only:
            return out
        out["rx_queues"] = nd.rx_queues(nic)
    out["queue_irqs"] = queue_irqs(nic, out["napis"], out["rx_queues"], out["stats"]["/proc/interrupts"])
    irqs = set(out["queue_irqs"].values()) | {n["irq"] for n in out["napis"] if n.get("irq")}
    out["irq_cpus"] = {}
    for irq in sorted(irqs):
        with open("/proc/irq/%d/effective_affinity_list" % irq) as f:
            out["irq_cpus"][str(irq)] = sorted(placement.cpu_list(f.read()))
    out.update(pid=pid, epoll=epoll_params(pid), slice_ms=slice_ms(pid), affinity=affinity(pid))
    return out


def nic_of_address(ip_json, address):
    """The interface holding address, from `ip -j addr show`'s answer."""
    for link in json.loads(ip_json or "[]"):
        for a in link.get("addr_info", []):
            if a.get("local") == address:
                return link["ifname"]
    return None


# -- instructions per CPU with perf ------------------------------------------

PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241, "ppc64le": 319, "s390x": 331}
PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS = 0, 1
PERF_EVENT_IOC_ENABLE, PERF_EVENT_IOC_DISABLE = 0x2400, 0x2401


def open_counters(cpus):
    """One instruction counter per CPU (every task on it, kernel included),
    disabled; [] when the CPU or the kernel has no such counter (a virtual
    machine without a PMU) or perf is not permitted."""
    nr = PERF_EVENT_OPEN.get(platform.machine())
    if nr is None:
        return []
    libc = ctypes.CDLL(None, use_errno=True)
    # struct perf_event_attr, PERF_ATTR_SIZE_VER0 (64 bytes): type, size,
    # config, sample_period, sample_type, read_format, flags (bit 0:
    # disabled), wakeup_events, bp_type, config1
    attr = ctypes.create_string_buffer(struct.pack("=IIQQQQQIIQ", PERF_TYPE_HARDWARE, 64,
                                                   PERF_COUNT_HW_INSTRUCTIONS, 0, 0, 0, 1, 0, 0, 0))
    fds = []
    for cpu in cpus:
        fd = libc.syscall(nr, attr, -1, cpu, -1, 0)
        if fd < 0:
            for f in fds:
                os.close(f)
            return []
        fds.append(fd)
    return fds


def count_instructions(stdin=sys.stdin, stdout=sys.stdout):
    """`irqtune-bench count`: counters on every online CPU; prints "ready"
    (or "unavailable"), counts until a line arrives on stdin, then prints
    {"insns": [count per CPU number], "seconds": s}."""
    with open("/sys/devices/system/cpu/online") as f:
        cpus = sorted(placement.cpu_list(f.read()))
    fds = open_counters(cpus)
    print("ready" if fds else "unavailable", file=stdout, flush=True)
    if not fds:
        return 0
    for fd in fds:
        fcntl.ioctl(fd, PERF_EVENT_IOC_ENABLE, 0)
    t0 = time.monotonic()
    stdin.readline()
    seconds = time.monotonic() - t0
    counts = [0] * (cpus[-1] + 1)       # indexed by CPU number
    for cpu, fd in zip(cpus, fds):
        fcntl.ioctl(fd, PERF_EVENT_IOC_DISABLE, 0)
        counts[cpu] = struct.unpack("=Q", os.read(fd, 8))[0]
        os.close(fd)
    json.dump({"insns": counts, "seconds": round(seconds, 4)}, stdout)
    stdout.write("\n")
    return 0
