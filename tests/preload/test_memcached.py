# SPDX-License-Identifier: GPL-2.0-or-later
"""Stock memcached opts in to epoll busy polling through the preload.

Testbed (built and torn down here, root only): two network namespaces joined
by a veth pair.  The server end has GRO on, so it registers a NAPI; the
client end has TSO off, so its packets go through that NAPI and the server's
sockets get a NAPI id (with TSO on they bypass it).  Debian's memcached
listens in the server namespace; a Python client in the other namespace
keeps CONNS requests in flight for TOTAL answers.

What makes BusyPollRxPackets rise (fs/eventpoll.c, net/core/dev.c, 6.13+):
ep_busy_loop() runs when the epoll context has busy_poll_usecs > 0,
prefer_busy_poll set, or the global net.core.busy_poll > 0, so the seed's
defaults (0 us, budget 64, prefer 1) do enter napi_busy_loop, for one pass.
That pass only finds packets when the NAPI is not already owned by softirq
processing.  veth schedules its NAPI from the sender's transmit path unless
the NAPI completed with deferral pending (gro_flush_timeout and
napi_defer_hard_irqs set), which masks the next schedule the way a NIC
driver masks its IRQ.  So the test sets deferral on the server's veth - a
per-device setting of the test's own namespace, what the latency profiles
set anyway - and keeps the preload's defaults.  Measured while writing the
test: without deferral the preload gave 0-2 busy-polled packets per 20000
requests (0 even with busy_poll_usecs=50); with it, 1900-11600.

/proc/net/netstat is per namespace: it is read through the server's pid.
"""

import os
import shutil
import subprocess
import sys
import time

import pytest

from conftest import clean_env
from irqtune_bench import server as server_state
from support.netns import NetNs, veth_between

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.join(HERE, "memcached_client.py")
SERVER_ADDR = "10.250.77.1"
CLIENT_ADDR = "10.250.77.2"
PORT = 11211
CONNS = 8
TOTAL = 20000
SECONDS = 30
GRO_FLUSH_TIMEOUT_NS = 200000
DEFER_HARD_IRQS = 100
# At least 1 % of the requests must have been picked up by busy polling
# (measured 1900-11600 of 20000 with the preload, 0 without, on 2 shared
# vCPUs; without deferral on the veth the preload gives 0-2).
MIN_BUSY_POLLED = TOTAL // 100


def _missing():
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in ("ip", "ethtool", "memcached"):
        if shutil.which(tool) is None:
            return "%s not installed" % tool
    for name in ("busy_poll", "busy_read"):
        with open("/proc/sys/net/core/" + name) as f:
            if f.read().strip() != "0":
                return ("net.core.%s is not 0: memcached would busy poll "
                        "without the preload" % name)
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


def sh(*argv, ns=None, **kw):
    if ns:
        argv = ("ip", "netns", "exec", ns) + argv
    return subprocess.run(list(argv), check=True, capture_output=True, text=True,
                          timeout=30, **kw)


def netstat_counter(pid, name):
    """TcpExt counter from the network namespace of process pid."""
    with open("/proc/%d/net/netstat" % pid) as f:
        lines = f.read().splitlines()
    for head, values in zip(lines[::2], lines[1::2]):
        if head.startswith("TcpExt:"):
            table = dict(zip(head.split()[1:], values.split()[1:]))
            return int(table[name])
    raise AssertionError("TcpExt not in /proc/%d/net/netstat" % pid)


@pytest.fixture(scope="module")
def testbed(built, kernel_params):
    tag = "%d" % os.getpid()
    srv, cli = NetNs("irqtpl-s" + tag), NetNs("irqtpl-c" + tag)
    try:
        veth_between(srv, cli, ("vsrv", "vcli"), (SERVER_ADDR, CLIENT_ADDR))
        # ip netns exec mounts the namespace's own /sys: tee writes vsrv's files.
        sh("tee", "/sys/class/net/vsrv/gro_flush_timeout", ns=srv.name,
           input="%d\n" % GRO_FLUSH_TIMEOUT_NS)
        sh("tee", "/sys/class/net/vsrv/napi_defer_hard_irqs", ns=srv.name,
           input="%d\n" % DEFER_HARD_IRQS)
        yield {"srv": srv.name, "cli": cli.name, **built}
    finally:
        srv.delete()
        cli.delete()


def serve_and_load(bed, preload):
    """Start memcached (under irqtune-busypoll-run when preload), load it.

    Returns (BusyPollRxPackets delta, answers, epoll params of memcached).
    """
    user = "memcache" if shutil.which("id") and subprocess.run(
        ["id", "memcache"], capture_output=True).returncode == 0 else "nobody"
    server = [shutil.which("memcached"), "-u", user, "-l", SERVER_ADDR,
              "-p", str(PORT), "-U", "0", "-t", "2"]
    if preload:
        server = [bed["run"], "--"] + server
    env = clean_env(IRQTUNE_BUSYPOLL_LIBRARY=bed["lib"])
    proc = subprocess.Popen(["ip", "netns", "exec", bed["srv"]] + server, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        # ip netns exec and the run command both exec: same pid throughout.
        deadline = time.monotonic() + 10
        while True:
            with open("/proc/%d/comm" % proc.pid) as f:
                if f.read().strip() == "memcached":
                    break
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "memcached did not start"
            time.sleep(0.05)
        before = netstat_counter(proc.pid, "BusyPollRxPackets")
        load = subprocess.run(
            ["ip", "netns", "exec", bed["cli"], sys.executable, CLIENT,
             SERVER_ADDR, str(PORT), str(CONNS), str(TOTAL), str(SECONDS)],
            capture_output=True, text=True, timeout=SECONDS + 30)
        after = netstat_counter(proc.pid, "BusyPollRxPackets")
        assert load.returncode == 0, load.stderr
        answers = int(load.stdout.split()[0].split("=")[1])
        # EPIOCGPARAMS of every epoll fd, through pidfd_getfd: the bench's
        # server-state reading (no library code), as (usecs, budget, prefer)
        params = [(p["busy_poll_usecs"], p["busy_poll_budget"], p["prefer_busy_poll"])
                  for p in server_state.epoll_params(proc.pid)]
    finally:
        proc.terminate()
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
    return after - before, answers, params, err.decode(errors="replace")


def test_memcached_without_preload_does_not_busy_poll(testbed):
    delta, answers, params, err = serve_and_load(testbed, preload=False)
    print("without preload: BusyPollRxPackets +%d for %d answers" % (delta, answers))
    assert answers == TOTAL
    assert params and all(p == (0, 0, 0) for p in params), params
    assert delta == 0


def test_memcached_with_preload_busy_polls(testbed):
    delta, answers, params, err = serve_and_load(testbed, preload=True)
    print("with preload: BusyPollRxPackets +%d for %d answers" % (delta, answers))
    assert answers == TOTAL
    assert "irqtune-busypoll" not in err, err
    # Every epoll instance memcached (libevent) made carries the defaults.
    assert params and all(p == (0, 64, 1) for p in params), params
    assert delta >= MIN_BUSY_POLLED, delta
