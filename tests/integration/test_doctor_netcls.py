# SPDX-License-Identifier: GPL-2.0-or-later
"""`irqtune doctor` leaves the target's traffic classification alone.

pidfd_getfd() of a socket runs the kernel's __receive_sock()
(net/core/sock.c), which re-tags the socket with the caller's net_cls
classid and net_prio index.  A doctor that duplicated the target's sockets
to read SO_INCOMING_NAPI_ID moved the target's packets to another class
(issue 35 item 3).

Testbed (root only): a cgroup v1 net_cls hierarchy (the host's if it has
one, else one mounted under a temporary directory and unmounted after),
one child cgroup with classid 1:1, and two network namespaces joined by a
veth pair.  The victim runs in the child cgroup and in namespace A: an
epoll instance watching a UDP socket that has received a datagram through
the veth NAPI (GRO on), and that sends datagrams to B on request.  On the
victim's veth an HTB qdisc has the classes 1:1 and 1:2 (default), and a
cls_bpf filter classifies each packet by its socket's net_cls classid
(bpf_skb_cgroup_classid, which reads sk_cgrp_data as the re-tag writes
it; tc's cgroup classifier would not do: for a packet sent from process
context it takes the sending task's classid, not the socket's).  net_cls rather than net_prio: a net_prio map names a device of the
initial network namespace only (write_priomap) and is dropped when the
device moves to another namespace, so it cannot act on a veth inside one.

The victim's packets are counted per class before, during and after
`irqtune doctor --pid`: all in 1:1.  At the end the test duplicates the
socket itself with pidfd_getfd and sees the next packets fall into 1:2,
so the testbed can see a re-tag on this kernel.
"""

import ctypes
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import time

import pytest

from support.commands import run
from support.netns import NetNs, veth_between
from support.waiting import wait_for

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NS_A, NS_B = "irqtune-cg-a", "irqtune-cg-b"
DEV_A, DEV_B = "vcga", "vcgb"
ADDR_A, ADDR_B, PORT = "10.250.81.1", "10.250.81.2", 9981
CGROUP = "irqtune-doctor-test"
CLASSID = 0x10001          # the victim's: HTB class 1:1; classid 0 falls to the default 1:2
BATCH = 20

_libc = ctypes.CDLL(None, use_errno=True)
SYS_BPF, SYS_PIDFD_GETFD = 321, 438          # x86_64
BPF_PROG_LOAD, BPF_OBJ_PIN = 5, 6
BPF_PROG_TYPE_SCHED_CLS = 3
SK_BUFF_TC_CLASSID = 72    # offsetof(struct __sk_buff, tc_classid), uapi/linux/bpf.h
BPF_FUNC_SKB_CGROUP_CLASSID = 151

# The victim: an epoll instance with one UDP socket; each stdin line "N GAP"
# sends N datagrams to B, GAP seconds apart, and answers "sent".
VICTIM = r"""
import select, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[3])))
ep = select.epoll()
ep.register(s.fileno(), select.EPOLLIN)
print("ready", flush=True)
for line in sys.stdin:
    count, gap = line.split()
    for _ in range(int(count)):
        s.sendto(b"x", (sys.argv[2], int(sys.argv[3])))
        time.sleep(float(gap))
    print("sent", flush=True)
"""


def _missing():
    if os.geteuid() != 0:
        return "needs root"
    if os.uname().machine != "x86_64":
        return "the bpf and pidfd_getfd numbers here are x86_64's"
    with open("/proc/cgroups") as f:
        if not any(line.split()[0] == "net_cls" and line.split()[3] == "1"
                   for line in f if not line.startswith("#")):
            return "the kernel has no net_cls controller (CONFIG_CGROUP_NET_CLASSID)"
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


def _sys(number, *args):
    ret = _libc.syscall(number, *args)
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return ret


def load_classid_filter():
    """A tc program (direct action): the packet's class is its socket's
    net_cls classid as the socket holds it (bpf_skb_cgroup_classid reads
    sk_cgrp_data, what __receive_sock writes); classid 0: no verdict, so
    HTB's default class."""
    def insn(code, dst=0, src=0, off=0, imm=0):
        return struct.pack("<BBhi", code, src << 4 | dst, off, imm)
    prog = b"".join([
        insn(0xbf, dst=6, src=1),                          # r6 = skb
        insn(0x85, imm=BPF_FUNC_SKB_CGROUP_CLASSID),       # r0 = classid of skb->sk
        insn(0x15, dst=0, off=3, imm=0),                   # if r0 == 0 goto unspec
        insn(0x63, dst=6, src=0, off=SK_BUFF_TC_CLASSID),  # skb->tc_classid = r0
        insn(0xb7, dst=0, imm=0),                          # TC_ACT_OK
        insn(0x95),
        insn(0xb7, dst=0, imm=-1),                         # unspec: TC_ACT_UNSPEC
        insn(0x95)])
    code, lic = ctypes.create_string_buffer(prog, len(prog)), ctypes.create_string_buffer(b"GPL")
    log = ctypes.create_string_buffer(65536)
    attr = ctypes.create_string_buffer(struct.pack(
        "=IIQQIIQII16s", BPF_PROG_TYPE_SCHED_CLS, len(prog) // 8, ctypes.addressof(code),
        ctypes.addressof(lic), 1, len(log), ctypes.addressof(log), 0, 0, b"irqtune_classid"))
    try:
        return _sys(SYS_BPF, BPF_PROG_LOAD, attr, len(attr.raw))
    except OSError as err:
        raise AssertionError("BPF_PROG_LOAD: %s\n%s" % (err, log.value.decode())) from None


def pin(fd, path):
    name = ctypes.create_string_buffer(path.encode())
    attr = ctypes.create_string_buffer(struct.pack("=QII", ctypes.addressof(name), fd, 0))
    _sys(SYS_BPF, BPF_OBJ_PIN, attr, len(attr.raw))


def netcls_hierarchy():
    """(hierarchy id, cgroups in it) of net_cls, from /proc/cgroups."""
    with open("/proc/cgroups") as f:
        for line in f:
            fields = line.split()
            if fields[0] == "net_cls":
                return int(fields[1]), int(fields[2])
    raise AssertionError("no net_cls in /proc/cgroups")


def netcls_mount():
    """(mount point, mounted by us) of a cgroup v1 hierarchy with net_cls."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mine, _, theirs = line.partition(" - ")
            fstype, _, options = theirs.split()[:3]
            if fstype == "cgroup" and "net_cls" in options.split(","):
                return mine.split()[4], False
    path = tempfile.mkdtemp(prefix="irqtune-netcls-")
    # net_cls has no cgroup v2 interface: while no v1 hierarchy holds it, it
    # can be mounted as a v1 hierarchy of its own.
    run("mount", "-t", "cgroup", "-o", "net_cls", "irqtune-test", path)
    return path, True


@pytest.fixture
def netcls_cgroup():
    root, mounted = netcls_mount()
    path = os.path.join(root, CGROUP)
    if os.path.isdir(path):
        os.rmdir(path)
    os.mkdir(path, 0o700)
    try:
        with open(os.path.join(path, "net_cls.classid"), "w") as f:
            f.write("%d\n" % CLASSID)
        yield path
    finally:
        wait_for(lambda: _rmdir(path), timeout=10, what="the test cgroup to empty")
        if mounted:
            # a hierarchy is destroyed at umount only when no child remains,
            # dying ones included; otherwise it outlives the mount
            wait_for(lambda: netcls_hierarchy()[1] == 1, timeout=10,
                     what="the removed cgroup to be released")
            run("umount", root)
            os.rmdir(root)
            wait_for(lambda: netcls_hierarchy()[0] == 0, timeout=10,
                     what="net_cls back on the v2 hierarchy")


def _rmdir(path):
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError:          # EBUSY until the victim's exit is accounted
        return False
    return True


def ns_exec(ns, *argv, check=True):
    return run("ip", "netns", "exec", ns, *argv, check=check)


@pytest.fixture
def bed():
    a, b = NetNs(NS_A), NetNs(NS_B)
    for ns in (a, b):
        # no IPv6: router solicitations and MLD reports would be unclassified
        # packets in the default class
        for conf in ("all", "default"):
            ns.exec("sysctl", "-qw", "net.ipv6.conf.%s.disable_ipv6=1" % conf)
    bpffs = tempfile.mkdtemp(prefix="irqtune-bpffs-")
    try:
        # a NAPI for the victim's datagrams (A receives, B sends)
        veth_between(a, b, (DEV_A, DEV_B), (ADDR_A, ADDR_B))
        # static neighbours: no ARP request or reply (no socket, class 1:2) in the counts
        for ns, dev, addr, peer_ns, peer_dev in ((NS_A, DEV_A, ADDR_B, NS_B, DEV_B),
                                                 (NS_B, DEV_B, ADDR_A, NS_A, DEV_A)):
            mac = json.loads(run("ip", "-j", "-n", peer_ns, "link", "show",
                                 peer_dev).stdout)[0]["address"]
            run("ip", "-n", ns, "neigh", "replace", addr, "lladdr", mac, "dev", dev, "nud",
                "permanent")
        run("tc", "-n", NS_A, "qdisc", "add", "dev", DEV_A, "root", "handle", "1:", "htb",
            "default", "2")
        for minor in (1, 2):
            run("tc", "-n", NS_A, "class", "add", "dev", DEV_A, "parent", "1:", "classid",
                "1:%d" % minor, "htb", "rate", "1gbit")
        run("mount", "-t", "bpf", "irqtune-test", bpffs)
        try:
            prog = load_classid_filter()
            pin(prog, os.path.join(bpffs, "classid"))
            os.close(prog)
            # __sk_buff's tc_classid is 16 bits (qdisc_skb_cb): the program
            # sets the minor, the filter's classid supplies the major 1:
            run("tc", "-n", NS_A, "filter", "add", "dev", DEV_A, "parent", "1:", "bpf",
                "object-pinned", os.path.join(bpffs, "classid"), "direct-action",
                "classid", "1:1")
        finally:
            run("umount", bpffs)     # the filter holds the program
        yield
    finally:
        os.rmdir(bpffs)
        a.delete()
        b.delete()


class Victim:
    def __init__(self, cgroup):
        procs = os.path.join(cgroup, "cgroup.procs")

        def join():             # before exec: the socket is born in the cgroup
            with open(procs, "w") as f:
                f.write(str(os.getpid()))
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", NS_A, sys.executable, "-c", VICTIM, ADDR_A, ADDR_B,
             str(PORT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            preexec_fn=join)
        self.pid = self.proc.pid          # ip netns exec execs: one pid
        assert self.proc.stdout.readline().strip() == "ready"

    def send(self, count, gap=0.0):
        self.proc.stdin.write("%d %g\n" % (count, gap))
        self.proc.stdin.flush()

    def wait_sent(self):
        assert self.proc.stdout.readline().strip() == "sent"

    def socket_fd(self):
        for name in os.listdir("/proc/%d/fd" % self.pid):
            if os.readlink("/proc/%d/fd/%s" % (self.pid, name)).startswith("socket:"):
                return int(name)
        raise AssertionError("the victim has no socket")

    def stop(self):
        self.proc.kill()
        self.proc.wait(timeout=10)


def class_packets():
    """{"1:1": packets, "1:2": packets} sent through the HTB classes."""
    # iproute2 6.1 prints HTB classes as text only, even with -j
    text = run("tc", "-n", NS_A, "-s", "class", "show", "dev", DEV_A).stdout
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^class htb (\S+) .*\n Sent \d+ bytes (\d+) pkt", text, re.M)}


def counted(action):
    before = class_packets()
    action()
    after = class_packets()
    return {k: after[k] - before.get(k, 0) for k in after}


def peer_sends_one():
    """A datagram to the victim through the veth NAPI: its socket gets a NAPI id."""
    ns_exec(NS_B, sys.executable, "-c", "import socket; socket.socket(socket.AF_INET, "
            "socket.SOCK_DGRAM).sendto(b'x', (%r, %d))" % (ADDR_A, PORT))


def doctor_during_traffic(victim):
    """The doctor on the victim while the victim keeps sending (all of the
    doctor's run, its fd reading included, lies inside the sending)."""
    victim.send(3 * BATCH, 0.05)
    time.sleep(0.2)
    p = subprocess.run(["/usr/bin/python3", "-m", "irqtune", "doctor", "--json", "--pid",
                        str(victim.pid), "--seconds", "1", DEV_A], cwd=REPO, capture_output=True,
                       text=True, timeout=120)
    victim.wait_sent()
    assert p.stdout.strip(), p.stderr
    return p.returncode, json.loads(p.stdout)


def steal_socket(victim):
    """What the doctor must not do: pidfd_getfd the victim's socket."""
    pidfd = os.pidfd_open(victim.pid)
    try:
        os.close(_sys(SYS_PIDFD_GETFD, pidfd, victim.socket_fd(), 0))
    finally:
        os.close(pidfd)


def test_doctor_keeps_the_targets_classification(netcls_cgroup, bed):
    victim = Victim(netcls_cgroup)
    try:
        peer_sends_one()
        fds = sorted(os.listdir("/proc/%d/fd" % victim.pid))
        phases = {}
        phases["before"] = counted(lambda: (victim.send(BATCH), victim.wait_sent()))
        result = {}
        phases["during"] = counted(lambda: result.update(report=doctor_during_traffic(victim)))
        phases["after"] = counted(lambda: (victim.send(BATCH), victim.wait_sent()))
        assert sorted(os.listdir("/proc/%d/fd" % victim.pid)) == fds
        steal_socket(victim)
        phases["re-tagged"] = counted(lambda: (victim.send(BATCH), victim.wait_sent()))
    finally:
        victim.stop()
    print(phases)
    _, report = result["report"]
    print("\n".join("%s %s %s: %s" % (l["state"], l["group"], l["subject"], l["text"])
                    for l in report["links"]))
    assert phases["before"] == {"1:1": BATCH, "1:2": 0}, phases
    assert phases["during"] == {"1:1": 3 * BATCH, "1:2": 0}, phases
    assert phases["after"] == {"1:1": BATCH, "1:2": 0}, phases
    # the testbed sees a re-tag: the test's own pidfd_getfd moves the socket
    assert phases["re-tagged"] == {"1:1": 0, "1:2": BATCH}, phases
    # and the doctor says why it has no NAPI id to follow
    sockets, = [l for l in report["links"] if l["subject"] == "sockets"]
    assert sockets["state"] == "unknown", report
    assert "net_cls (cgroup v1 hierarchy" in sockets["text"], sockets
    epoll_link, = [l for l in report["links"] if l["group"] == "epoll" and l is not sockets]
    assert "1 socket(s), their NAPI ids not read" in epoll_link["text"], epoll_link
    # the device named instead: its NAPIs are judged (veth's defaults: deferral off)
    napis = [l for l in report["links"] if l["group"] == "napi" and l["state"] != "info"]
    assert napis and all(l["state"] == "broken" and "deferral is off" in l["text"]
                         for l in napis), report
