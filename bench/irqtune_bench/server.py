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
load runs (count_instructions()).
"""

import ctypes
import errno
import fcntl
import json
import os
import platform
import select
import socket
import struct
import subprocess
import sys
import time

from . import netlink, placement
from .modes import PROFILE

EPIOCGPARAMS = (2 << 30) | (8 << 16) | (0x8A << 8) | 0x02
# pidfd_getfd: 438 in the asm-generic table and on x86, s390, powerpc;
# 64-bit MIPS numbers its calls from 5000 (n64) - not one number everywhere
SYS_PIDFD_GETFD = {"mips64": 5438}.get(platform.machine(), 438)
SO_INCOMING_NAPI_ID = 56       # asm-generic/socket.h (x86, arm64, s390, ppc)
STATS = ("/proc/stat", "/proc/interrupts", "/proc/softirqs", "/proc/net/netstat", "/proc/net/dev")


def service_pid(service):
    res = subprocess.run(["systemctl", "show", "-p", "MainPID", "--value", "--", service],
                         capture_output=True, text=True)
    pid = int(res.stdout.strip() or 0)
    if not pid:
        raise SystemExit("irqtune-bench: service %s is not running" % service)
    return pid


def borrowed_fds(pid, link):
    """(fd number, our copy) of each of pid's file descriptors whose
    /proc/PID/fd link starts with link, copied with pidfd_getfd and closed
    once the caller moves on; one closed meanwhile is skipped."""
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    try:
        fddir = "/proc/%d/fd" % pid
        for name in sorted(os.listdir(fddir), key=int):
            try:
                if not os.readlink(os.path.join(fddir, name)).startswith(link):
                    continue
            except FileNotFoundError:
                continue
            fd = libc.syscall(SYS_PIDFD_GETFD, pidfd, int(name), 0)
            if fd < 0:
                if ctypes.get_errno() == errno.EBADF:
                    continue
                raise OSError(ctypes.get_errno(), "pidfd_getfd")
            try:
                yield int(name), fd
            finally:
                os.close(fd)
    finally:
        os.close(pidfd)


def epoll_params(pid):
    found = []
    for num, fd in borrowed_fds(pid, "anon_inode:[eventpoll]"):
        usecs, budget, prefer = struct.unpack("=IHBx", fcntl.ioctl(fd, EPIOCGPARAMS, bytes(8)))
        found.append({"fd": num, "busy_poll_usecs": usecs, "busy_poll_budget": budget,
                      "prefer_busy_poll": prefer})
    return found


def incoming(pid, port):
    """[{"peer": [address, port], "napi_id": id}] of pid's TCP connections
    on local port: SO_INCOMING_NAPI_ID is the NAPI (rx queue) that
    delivered the connection's last packet, 0 before any."""
    found = []
    for _, fd in borrowed_fds(pid, "socket:["):
        sock = socket.socket(fileno=os.dup(fd))
        try:
            if sock.type != socket.SOCK_STREAM or sock.family != socket.AF_INET:
                continue
            try:
                local, peer = sock.getsockname(), sock.getpeername()
            except OSError:             # a listening socket has no peer
                continue
            if local[1] == port:
                found.append({"peer": list(peer),
                              "napi_id": sock.getsockopt(socket.SOL_SOCKET, SO_INCOMING_NAPI_ID)})
        finally:
            sock.close()
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


def queues(nic, nd, napis, interrupts):
    """rx_queues {rx queue: NAPI id}, queue_irqs {rx queue: irq} and
    irq_cpus {irq: effective affinity CPUs} of the NIC."""
    out = {"rx_queues": nd.rx_queues(nic)}
    if not out["rx_queues"]:
        # a veth links no NAPI to its queues in queue-get; it adds one
        # NAPI per rx queue, in queue order, so ids ascend with the queues
        out["rx_queues"] = {q: n["id"] for q, n in enumerate(sorted(napis, key=lambda n: n["id"]))}
    out["queue_irqs"] = queue_irqs(nic, napis, out["rx_queues"], interrupts)
    irqs = set(out["queue_irqs"].values()) | {n["irq"] for n in napis if n.get("irq")}
    out["irq_cpus"] = {}
    for irq in sorted(irqs):
        with open("/proc/irq/%d/effective_affinity_list" % irq) as f:
            out["irq_cpus"][str(irq)] = sorted(placement.cpu_list(f.read()))
    return out


def pid_in_file(path):
    """The pid a pid file holds (the netns testbed's own memcached)."""
    with open(path) as f:
        text = f.read(32).strip()
    if not text.isdigit():
        raise SystemExit("irqtune-bench: %s holds no pid" % path)
    return int(text)


def state(nic, service="memcached", stats_only=False, pid_file=None):
    pid = pid_in_file(pid_file) if pid_file else service_pid(service)
    out = {"stats": stats(nic, pid)}
    with netlink.Netdev() as nd:
        out["napis"] = nd.napis(nic)
        if stats_only:
            return out
        out.update(queues(nic, nd, out["napis"], out["stats"]["/proc/interrupts"]))
    out.update(pid=pid, epoll=epoll_params(pid), slice_ms=slice_ms(pid), affinity=affinity(pid))
    return out


def listening(port, tables=("/proc/net/tcp", "/proc/net/tcp6")):
    """The addresses a TCP socket listens on at port ("0.0.0.0" and "::"
    for every address), from /proc/net/tcp{,6}: local address in hex,
    each 32-bit word in host order, then the port; state 0A is LISTEN."""
    found = []
    for table in tables:
        try:
            with open(table) as f:
                lines = f.read().splitlines()[1:]
        except FileNotFoundError:       # a kernel without IPv6
            continue
        for line in lines:
            fields = line.split()
            address, _, hexport = fields[1].partition(":")
            if fields[3] != "0A" or int(hexport, 16) != port:
                continue
            raw = b"".join(struct.pack("=I", int(address[i:i + 8], 16)) for i in range(0, len(address), 8))
            found.append(socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, raw))
    return sorted(set(found))


def _out(argv):
    """(rc, stdout) of a command; (None, "") when it is not installed."""
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        return None, ""
    return res.returncode, res.stdout.strip()


def firewall(port):
    """What may block port/tcp: firewalld's answer, else whether nftables
    has an input hook at all (its rules are not interpreted)."""
    if _out(["systemctl", "is-active", "--quiet", "firewalld"])[0] == 0:
        opened = any(_out(["firewall-cmd", q])[1] == "yes"
                     for q in ("--query-port=%d/tcp" % port, "--query-service=memcache"))
        return {"firewalld": True, "open": opened}
    rc, ruleset = _out(["nft", "list", "ruleset"])
    return {"firewalld": False, "nft_input": rc == 0 and "hook input" in ruleset}


def ntuple(nic):
    """ethtool -k's "ntuple-filters" line: "on", "off", "off [fixed]"; None
    without ethtool or the feature."""
    for line in _out(["ethtool", "-k", nic])[1].splitlines():
        if line.strip().startswith("ntuple-filters:"):
            return line.split(":", 1)[1].strip()
    return None


def epoll_ioctl():
    """Whether the kernel has EPIOCGPARAMS (Linux 6.9)."""
    ep = select.epoll()
    try:
        fcntl.ioctl(ep.fileno(), EPIOCGPARAMS, bytes(8))
        return True
    except OSError:
        return False
    finally:
        ep.close()


def facts(nic, service, port, cpu):
    """`irqtune-bench server-facts`: what irqtune-bench check judges on
    the server, as one JSON object."""
    out = {"kernel": os.uname().release, "nic": nic, "epoll_ioctl": epoll_ioctl(),
           "service": _out(["systemctl", "is-active", "--", service])[1],
           "tuned": _out(["systemctl", "is-active", "tuned"])[1],
           "profile": _out(["tuned-adm", "profile_info", PROFILE])[0] == 0,
           "listening": listening(port), "firewall": firewall(port), "ntuple": ntuple(nic)}
    fds = open_counters([cpu])
    out["pmu"] = bool(fds)
    for fd in fds:
        os.close(fd)
    try:
        with netlink.Netdev() as nd, open("/proc/interrupts") as f:
            napis = nd.napis(nic)
            out.update(queues(nic, nd, napis, f.read()))
        out["napi_attrs"] = sorted({k for n in napis for k in n})
    except OSError as err:
        out["napi_error"] = err.strerror or str(err)
    return out


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
