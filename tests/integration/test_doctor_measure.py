# SPDX-License-Identifier: GPL-2.0-or-later
"""`irqtune doctor`'s measurement and recommendation against a known truth.

Testbed (root only): two network namespaces joined by a veth pair with one
queue a side (every connection behind the server's one NAPI), GRO on at
the server end (veth NAPIs), TSO off at the client end
(support.netns.veth_between), NAPI values set with the raw netlink writer
(rawnapi).
tests/integration/epoll_server.py serves with a busy loop of COST_NS per
request; tests/integration/burst_client.py sends bursts of K requests over
K connections.  Both run SCHED_FIFO at one priority on one CPU, so that
neither preempts the other and nothing else on the shared host stretches
a batch: every wait of the server returns K events and each costs COST_NS
plus the interpreter's own few microseconds.

The right answer is known: gro_flush_timeout must cover one request
(>= COST_NS), irq_suspend_timeout the largest batch (>= K x COST_NS), their
ratio at least K; and neither may be absurdly larger (FACTOR).
"""

import json
import os
import signal
import subprocess
import time

import pytest

from support.netns import NetNs, veth_between
from support.waiting import wait_for

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(REPO, "tests", "integration")
SRV, CLI = "irqtune-bst-s", "irqtune-bst-c"
SERVER_ADDR, CLIENT_ADDR, PORT = "10.250.81.1", "10.250.81.2", 9400
CPU = "0"
MAXEVENTS = 64
GAP_US = 1000
SUSPEND = {"defer-hard-irqs": 100, "gro-flush-timeout": 20000, "irq-suspend-timeout": 20000000}
# "not absurdly larger": at most this factor above the truth
FACTOR = 4

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root")


@pytest.fixture(scope="module")
def bed():
    srv, cli = NetNs(SRV), NetNs(CLI)
    try:
        veth_between(srv, cli, ("vbsrv", "vbcli"), (SERVER_ADDR, CLIENT_ADDR))
        srv.set_napis(["vbsrv"], SUSPEND)
        yield srv, cli
    finally:
        srv.delete()
        cli.delete()


class Load:
    """The server with a cost per request and the burst client, for `seconds`."""

    def __init__(self, bed, cost_ns, k, seconds):
        srv, cli = bed
        self.server = srv.popen("taskset", "-c", CPU, "/usr/bin/python3",
                                os.path.join(HERE, "epoll_server.py"), SERVER_ADDR, str(PORT),
                                str(cost_ns), str(MAXEVENTS), "--fifo",
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.server.stdout.readline().strip() == "ready", self.server.stderr.read()
        self.pid = self.server.pid        # ip netns exec and taskset exec: one pid
        self.client = cli.popen("taskset", "-c", CPU, "/usr/bin/python3",
                                os.path.join(HERE, "burst_client.py"), SERVER_ADDR, str(PORT),
                                str(k), str(seconds), str(GAP_US), "--fifo",
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def finish(self):
        out, err = self.client.communicate(timeout=60)
        self.stop()
        assert self.client.returncode == 0, err
        return out

    def stop(self):
        if self.server.poll() is None:
            self.server.terminate()
        self.server.communicate(timeout=10)


def doctor(*args, text=False):
    p = subprocess.run(["/usr/bin/python3", "-m", "irqtune", "doctor"]
                       + ([] if text else ["--json"]) + list(args),
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    if text:
        return p.returncode, p.stdout, p.stderr
    return p.returncode, (json.loads(p.stdout) if p.stdout.strip() else None), p.stderr


def recommend_link(report):
    links = [l for l in report["links"] if l["group"] == "recommend"]
    assert len(links) == 1, report["links"]
    return links[0]


@pytest.mark.parametrize("cost_ns,k", [(100000, 8), (30000, 32)])
def test_recommendation_covers_a_request_and_the_largest_batch(bed, cost_ns, k):
    from irqtune.kernel.values import parse_duration_ns
    load = Load(bed, cost_ns, k, seconds=14)
    try:
        time.sleep(1.5)
        rc, out, err = doctor("--pid", str(load.pid), "--seconds", "3", text=True)
        print(out)
        rc, report, err = doctor("--pid", str(load.pid), "--seconds", "2")
    finally:
        print(load.finish())
    assert report is not None, err
    measured, rec = report["measured"], report["recommend"]
    print(json.dumps({"measured": measured, "recommend": rec}, sort_keys=True))
    assert measured["busy_periods"] >= 100, measured
    assert measured["batch_events"]["max"] == k, measured
    assert cost_ns <= measured["event_ns"]["p50"] <= measured["event_ns"]["p99"], measured
    assert measured["batch_ns"]["p99"] >= k * cost_ns, measured
    gro, suspend = rec["gro_flush_timeout_ns"], rec["irq_suspend_timeout_ns"]
    assert cost_ns <= gro <= FACTOR * cost_ns, rec
    assert k * cost_ns <= suspend <= FACTOR * k * cost_ns, rec
    assert suspend >= k * gro, rec              # the ratio is at least the largest batch
    assert rec["defer_hard_irqs"] == 100
    link = recommend_link(report)
    assert link["state"] == "info"
    lines = dict(l.split("=", 1) for l in link["data"]["lines"])
    assert parse_duration_ns("gro_flush_timeout", lines["gro_flush_timeout"]) == gro
    assert parse_duration_ns("irq_suspend_timeout", lines["irq_suspend_timeout"]) == suspend
    assert lines["defer_hard_irqs"] == "100"


def perf_fds():
    """(pid, fd) of every perf event file descriptor on the host."""
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir("/proc/%s/fd" % pid):
                if os.readlink("/proc/%s/fd/%s" % (pid, fd)) == "anon_inode:[perf_event]":
                    found.add((int(pid), int(fd)))
        except OSError:
            continue
    return found


def test_killed_doctor_leaves_no_event_behind(bed):
    """The recording's events live in the doctor's file descriptors: SIGKILL
    during the window leaves no descriptor, so no event, anywhere."""
    before = perf_fds()
    load = Load(bed, 20000, 4, seconds=8)
    try:
        p = subprocess.Popen(["/usr/bin/python3", "-m", "irqtune", "doctor", "--pid",
                              str(load.pid), "--seconds", "20"], cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        held = wait_for(lambda: {f for f in perf_fds() - before if f[0] == p.pid},
                        timeout=30, what="the doctor's perf events")
        # six tracepoints per CPU (and the dup Python's mmap keeps of each ring's fd)
        assert len(held) >= 6 * os.cpu_count(), held
        p.send_signal(signal.SIGKILL)
        p.wait(10)
        assert perf_fds() - before == set()
    finally:
        load.finish()


def test_pid_exiting_during_the_window_is_named(bed):
    load = Load(bed, 20000, 4, seconds=30)
    try:
        before = perf_fds()
        doc = subprocess.Popen(["/usr/bin/python3", "-m", "irqtune", "doctor", "--json",
                                "--pid", str(load.pid), "--seconds", "3"], cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: {f for f in perf_fds() - before if f[0] == doc.pid},
                 timeout=30, interval=0.05, what="the doctor's window")
        load.stop()
        out, err = doc.communicate(timeout=60)
    finally:
        load.client.kill()
        load.client.communicate()
    report = json.loads(out)
    link = recommend_link(report)
    assert (link["state"], link["text"]) == (
        "unknown", "pid %d exited during the measured window" % load.pid), link
    assert report["recommend"] is None, report
    assert doc.returncode != 0 and report["exit_status"] == doc.returncode, report
