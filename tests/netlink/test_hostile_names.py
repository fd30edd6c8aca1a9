# SPDX-License-Identifier: GPL-2.0-or-later
"""Names chosen by whoever owns a process or a network namespace reach
root's terminal escaped (issue 39 item 5), with the real kernel:

a server whose comm is "\\x1b[2J\\x1b[8m" (clear the screen, then hide what
follows) receives over a veth whose end in its namespace is named
"\\x1b[2J" (the kernel takes any byte but '/', ':', blanks); `irqtune
doctor --pid` runs from the host's namespace and finds both names itself,
and `irqtune status` and `irqtune metrics` run inside that namespace.
No control character but the newlines between lines may reach stdout or
stderr.

Beside it, a veth pair whose ends are named "q<ESC>" and, literally,
"q\\x1b" (issue 47 item 11): they print apart and are two series in the
metrics (Prometheus refuses a scrape holding one series twice).
"""

import os
import re
import subprocess
import sys

import pytest

from support.netns import EPOLL_SERVER_LOOP, NetNs, veth_between
from support.waiting import wait_for

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HIDE = "\x1b[2J\x1b[8m"
DEVICE = "\x1b[2J"
LOOKALIKES = ("q\x1b", "q\\x1b")
SRV, CLI = "irqtune-nl-hs", "irqtune-nl-hc"
SERVER_ADDR, CLIENT_ADDR, PORT = "10.250.91.1", "10.250.91.2", 7391
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")

SERVER = r"""
import select, socket, sys
open("/proc/self/comm", "w").write(sys.argv[1])
ADDR, PORT, READY = sys.argv[2], int(sys.argv[3]), ("ready",)
""" + EPOLL_SERVER_LOOP


@pytest.fixture(scope="module")
def bed():
    srv, cli = NetNs(SRV), NetNs(CLI)
    server = client = None
    try:
        veth_between(srv, cli, (DEVICE, "vhc"), (SERVER_ADDR, CLIENT_ADDR))
        srv.exec("ip", "link", "add", LOOKALIKES[0], "type", "veth", "peer", "name", LOOKALIKES[1])
        for dev in LOOKALIKES:                  # up with GRO: a NAPI each
            srv.exec("ip", "link", "set", dev, "up")
            srv.exec("ethtool", "-K", dev, "gro", "on")
        server = srv.popen(sys.executable, "-c", SERVER, HIDE, SERVER_ADDR, str(PORT),
                           stdout=subprocess.PIPE, text=True)
        assert server.stdout.readline().strip() == "ready"
        pid = server.pid          # ip netns exec execs: one pid
        wait_for(lambda: open("/proc/%d/comm" % pid).read() == HIDE + "\n", timeout=10,
                 what="the server's comm")
        # traffic through the veth NAPI, so that the connection gets a NAPI
        # id; the connection stays open while the tests run
        client = cli.popen(sys.executable, "-c",
                           "import socket, sys, time\n"
                           "s = socket.create_connection((sys.argv[1], int(sys.argv[2])))\n"
                           "[s.sendall(b'x' * 1000) for _ in range(200)]\n"
                           "print('sent', flush=True)\n"
                           "time.sleep(600)\n", SERVER_ADDR, str(PORT),
                           stdout=subprocess.PIPE, text=True)
        assert client.stdout.readline().strip() == "sent"
        yield srv, pid
    finally:
        for proc in (client, server):
            if proc is not None:
                proc.kill()
                proc.wait()
        srv.delete()
        cli.delete()


def irqtune(*args, netns=None):
    argv = [sys.executable, "-m", "irqtune"] + list(args)
    if netns:
        argv = ["ip", "netns", "exec", netns] + argv
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=REPO))


def assert_no_control(result):
    for stream in (result.stdout, result.stderr):
        found = _CONTROL.search(stream)
        assert found is None, (found, stream)


def test_doctor_of_a_hostile_process_behind_a_hostile_device(bed):
    srv, pid = bed
    result = irqtune("doctor", "--pid", str(pid), "--seconds", "0.5")
    print(result.stdout, result.stderr)
    assert_no_control(result)
    assert "pid %d ($'\\x1b[2J\\x1b[8m')" % pid in result.stdout
    assert "($'\\x1b[2J')" in result.stdout          # the device, found through the socket
    assert result.stdout.splitlines()[-1].startswith("verdict: ")


def test_status_and_metrics_in_the_hostile_namespace(bed):
    srv, _ = bed
    status = irqtune("status", netns=SRV)
    assert_no_control(status)
    assert status.returncode == 0, status.stderr
    assert re.search(r"^\$'\\x1b\[2J' +\d+ ", status.stdout, re.M), status.stdout
    metrics = irqtune("metrics", netns=SRV)
    assert_no_control(metrics)
    assert metrics.returncode == 0, metrics.stderr
    assert 'device="$\'\\\\x1b[2J\'"' in metrics.stdout, metrics.stdout
    refused = irqtune("status", "--watch", "--count", "1", "x" + DEVICE, netns=SRV)
    assert_no_control(refused)
    assert refused.returncode == 2
    assert "device $'x\\x1b[2J': no such device" in refused.stderr
    assert "accepted: lo, $'\\x1b[2J'" in refused.stderr


def test_lookalike_devices_print_apart_and_are_two_series(bed):
    status = irqtune("status", netns=SRV)
    assert_no_control(status)
    assert status.returncode == 0, status.stderr
    rows = {words[0] for words in map(str.split, status.stdout.splitlines())
            if words and "q" in words[0]}
    assert rows == {"$'q\\x1b'", "q\\x1b"}, status.stdout
    metrics = irqtune("metrics", netns=SRV)
    assert_no_control(metrics)
    assert metrics.returncode == 0, metrics.stderr
    series = [line.rsplit(" ", 1)[0] for line in metrics.stdout.splitlines()
              if not line.startswith("#")]
    assert len(series) == len(set(series)), metrics.stdout
    devices = set(re.findall(r'device="((?:[^"\\\\]|\\\\.)*)"', metrics.stdout))
    assert {"$'q\\\\x1b'", "q\\\\x1b"} <= devices, metrics.stdout
