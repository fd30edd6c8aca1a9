# SPDX-License-Identifier: GPL-2.0-or-later
"""`irqtune doctor` against a real server on real veth NAPIs.

Testbed (root only): two network namespaces joined by a veth pair with two
queues a side.  The server end has GRO on (veth registers one NAPI per rx
queue), the client end TSO off (so the server's sockets get a NAPI id, see
tests/preload/test_memcached.py).  Debian's memcached with one worker
thread serves in the server namespace, under irqtune-busypoll-run (the
preload) or without it; tests/preload/memcached_client.py loads it from
the client namespace.  NAPI values are set with the raw netlink writer
(rawnapi), never with the library under test.

The doctor runs from the host's namespace with --pid: it must find the
server's namespace itself.  What veth can show of the engaged chain is
everything but interrupts (veth has no IRQ): the epoll parameters, one
NAPI behind the worker's epoll instance, deferral and suspension values,
and busy polling taking the packets.  Each broken link is produced for
real: memcached without the preload, deferral off, and eight connections
spread over both rx queues behind the one worker's epoll instance.
"""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from support.netns import NetNs, entered, veth_between
from support.rawnapi import RawGenl
from support.waiting import wait_for

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLIENT = os.path.join(REPO, "tests", "preload", "memcached_client.py")
# Server and client on one CPU: a closed-loop client on an idle second CPU
# answers each reply at once and veth's sender-side softirq takes every
# packet before the server's loop polls (busy share ~1 % on an idle host,
# ~70 % when the CPUs are shared), so engagement would depend on whatever
# else the host runs.  Sharing one CPU makes the server's loop the one that
# finds the packets, on any host.
SHARED_CPU = "0"
LIB = os.path.join(REPO, "build", "preload", "libirqtune-busypoll.so")
RUNNER = os.path.join(REPO, "build", "preload", "irqtune-busypoll-run")
SRV, CLI = "irqtune-doc-s", "irqtune-doc-c"
SERVER_ADDR, CLIENT_ADDR, PORT = "10.250.79.1", "10.250.79.2", 11211
SUSPEND = {"defer-hard-irqs": 100, "gro-flush-timeout": 20000, "irq-suspend-timeout": 20000000}
# defer_hard_irqs=0 with the rest as latency-suspend sets it
NO_DEFERRAL = {"defer-hard-irqs": 0, "gro-flush-timeout": 20000, "irq-suspend-timeout": 20000000}


def _missing():
    if os.geteuid() != 0:
        return "needs root"
    if shutil.which("memcached") is None:
        return "memcached not installed"
    for name in ("busy_poll", "busy_read"):
        with open("/proc/sys/net/core/" + name) as f:
            if f.read().strip() != "0":
                return "net.core.%s is not 0: every epoll loop would busy poll" % name
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


def set_napis(values):
    with entered(SRV):
        nl = RawGenl()
        try:
            napis = nl.napis("vsrv")
            for n in napis:
                nl.set(n["id"], **values)
            return {n["id"]: n for n in nl.napis("vsrv")}
        finally:
            nl.close()


@pytest.fixture(scope="module")
def bed():
    subprocess.run(["make", "-C", REPO, "preload"], check=True, stdout=subprocess.DEVNULL)
    srv, cli = NetNs(SRV), NetNs(CLI)
    try:
        veth_between(srv, cli, ("vsrv", "vcli"), (SERVER_ADDR, CLIENT_ADDR), queues=2)
        assert len(set_napis(SUSPEND)) == 2
        yield
    finally:
        srv.delete()
        cli.delete()


class Server:
    """memcached with one worker thread in the server namespace."""

    def __init__(self, preload):
        argv = [shutil.which("memcached"), "-u", "nobody", "-l", SERVER_ADDR, "-p", str(PORT),
                "-U", "0", "-t", "1"]
        if preload:
            argv = [RUNNER, "--"] + argv
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("IRQTUNE_") and k != "LD_PRELOAD"}
        env["IRQTUNE_BUSYPOLL_LIBRARY"] = LIB
        self.proc = subprocess.Popen(["ip", "netns", "exec", SRV, "taskset", "-c", SHARED_CPU]
                                     + argv, env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.pid = self.proc.pid      # ip netns exec and the runner exec: one pid
        wait_for(lambda: open("/proc/%d/comm" % self.pid).read().strip() == "memcached",
                 timeout=10, what="memcached")

    def load(self, conns, seconds):
        # The client shares CPU 0 with the server (see SHARED_CPU).
        return subprocess.Popen(["ip", "netns", "exec", CLI, "taskset", "-c", SHARED_CPU,
                                 sys.executable, CLIENT, SERVER_ADDR,
                                 str(PORT), str(conns), "100000000", str(seconds)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def fds(self):
        return sorted(os.listdir("/proc/%d/fd" % self.pid), key=int)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()


def doctor(*args):
    """(exit status, JSON report, stderr) of `python3 -m irqtune doctor`."""
    p = subprocess.run(["/usr/bin/python3", "-m", "irqtune", "doctor", "--json"] + list(args),
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    return p.returncode, (json.loads(p.stdout) if p.stdout.strip() else None), p.stderr


def first_broken(report):
    return next((l for l in report["links"] if l["state"] == "broken"), None)


def under_load(server, conns=1, seconds=8):
    """Doctor --pid for the server while the client keeps it busy; the
    client's answers prove the server kept serving."""
    load = server.load(conns, seconds)
    try:
        time.sleep(1.5)
        rc, report, err = doctor("--pid", str(server.pid), "--seconds", "2")
    finally:
        out, lerr = load.communicate(timeout=seconds + 30)
    assert load.returncode == 0, lerr
    answers = int(out.split()[0].split("=")[1])
    assert report is not None, err
    print("\n".join("%s %s %s: %s" % (l["state"], l["group"], l["subject"], l["text"])
                    for l in report["links"]))
    print(report["verdict"], "; answers during the run:", answers)
    return rc, report, answers


def test_engaged_chain_on_veth(bed):
    set_napis(SUSPEND)
    server = Server(preload=True)
    try:
        fds_before = server.fds()
        rc, report, answers = under_load(server)
        assert server.proc.poll() is None, "memcached died while the doctor read it"
        assert server.fds() == fds_before, "the doctor left fds behind in the target"
        rc2, report2, answers2 = under_load(server)     # still serving, same answer
    finally:
        server.stop()
    assert answers > 1000 and answers2 > 1000
    assert (rc, report["verdict"]) == (0, "suspension engaged"), report
    assert rc2 == 0, report2
    groups = {l["group"] for l in report["links"] if l["state"] == "ok"}
    assert groups == {"kernel", "napi", "process", "epoll", "window"}, report
    process = [l for l in report["links"] if l["group"] == "process"][0]
    assert "preload libirqtune-busypoll.so is loaded" in process["text"]
    epolls = [l for l in report["links"] if l["group"] == "epoll" and l["state"] == "ok"]
    assert epolls and all(len(l["data"]["napi_ids"]) == 1 for l in epolls), epolls
    assert all(l["data"]["params"]["prefer_busy_poll"] == 1 for l in epolls)


class OwnServer(Server):
    """tests/integration/epoll_server.py: sets prefer_busy_poll itself."""

    def __init__(self):
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", SRV, "taskset", "-c", SHARED_CPU, "/usr/bin/python3",
             os.path.join(REPO, "tests", "integration", "epoll_server.py"), SERVER_ADDR,
             str(PORT)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.pid = self.proc.pid
        assert self.proc.stdout.readline().strip() == "ready", self.proc.stderr.read()


def test_program_setting_prefer_itself_is_engaged(bed):
    set_napis(SUSPEND)
    server = OwnServer()
    try:
        rc, report, answers = under_load(server)
    finally:
        server.stop()
    assert answers > 1000
    assert (rc, report["verdict"]) == (0, "suspension engaged"), report
    process, = [l for l in report["links"] if l["group"] == "process"]
    assert process["state"] == "ok"
    assert "the program sets them itself (the preload is not loaded)" in process["text"]


def test_preload_missing_is_named(bed):
    set_napis(SUSPEND)
    server = Server(preload=False)
    try:
        rc, report, _ = under_load(server)
    finally:
        server.stop()
    broken = first_broken(report)
    assert rc == 1 and broken["group"] == "process", report
    assert "preload is not loaded" in broken["text"] and "prefer_busy_poll is 0" in broken["text"]
    assert "optin_services=" in broken["fix"]
    assert report["verdict"].startswith("suspension not engaged: pid %d" % server.pid)


def test_deferral_off_is_named(bed):
    napis = set_napis(NO_DEFERRAL)
    server = Server(preload=True)
    try:
        rc, report, _ = under_load(server)
    finally:
        server.stop()
        set_napis(SUSPEND)
    broken = first_broken(report)
    assert rc == 1 and broken["group"] == "napi", report
    assert "deferral is off (defer-hard-irqs is 0)" in broken["text"], broken
    assert int(broken["subject"].split()[1]) in napis


def test_two_napis_behind_one_epoll_instance_are_named(bed):
    """Eight connections to one worker thread: the client's tx queue (one
    per flow hash) picks the server's rx queue, so they reach both NAPIs
    (all eight on one queue: 1 in 128)."""
    set_napis(SUSPEND)
    server = Server(preload=True)
    try:
        rc, report, _ = under_load(server, conns=8)
    finally:
        server.stop()
    broken = first_broken(report)
    assert rc == 1 and broken["group"] == "epoll", report
    assert len(broken["data"]["napi_ids"]) == 2, broken
    assert "receive from 2 NAPIs" in broken["text"]
    assert "SO_INCOMING_CPU" in broken["fix"] and "ethtool -X" in broken["fix"]


def test_bad_input_gets_one_line(bed):
    rc, report, err = doctor("--pid", "999999999")
    assert (rc, report) == (2, None)
    assert err.strip().splitlines() == ["irqtune doctor: --pid 999999999: no such process"]
    rc, report, err = doctor("--seconds", "0")
    assert rc == 2 and "--seconds 0: accepted 0.5 to 60" in err and "Traceback" not in err
    if not os.path.isdir("/run/systemd/system"):
        rc, report, err = doctor("--service", "no-such.service")
        assert rc == 2 and "systemd is not running" in err and "Traceback" not in err
    # not root: a process of another user is not readable without privileges
    p = subprocess.run(["/usr/bin/python3", "-m", "irqtune", "doctor", "--pid", "1"], cwd=REPO,
                       capture_output=True, text=True, timeout=60,
                       preexec_fn=lambda: (os.setgid(65534), os.setuid(65534)))
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.strip().splitlines() == [
        "irqtune doctor: --pid 1: reading another process's epoll instances needs root "
        "(pidfd_getfd); run irqtune doctor as root"]
