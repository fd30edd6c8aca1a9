# SPDX-License-Identifier: GPL-2.0-or-later
"""irqtune-bench local's testbed (bench/irqtune_bench/netns.py) on this
machine's kernel, for real: the namespace, the veth pair with GRO on and
TSO off, both NAPIs threaded and pinned, memcached opted in through
irqtune-busypoll-run and read back through its pid file, a load whose
CPU figures come from the server's tasks - and nothing of it left after
the testbed ends, also when a signal ends it in the middle of a load.
Latency is not asserted (issue 48: figures, not timed asserts).  TuneD is
not involved: the bench's profile switches and their put-back are the
runner's (tests/unit/test_bench_runner.py, test_bench_undo.py)."""

import json
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from irqtune_bench import modes, netns

REPO = Path(__file__).resolve().parents[2]
CPUS = sorted(os.sched_getaffinity(0))

pytestmark = [
    pytest.mark.skipif(len(CPUS) < 2, reason="the testbed needs two CPUs"),
    pytest.mark.skipif(not os.path.exists(netns.MEMCACHED), reason="memcached is not installed (make deps)"),
    pytest.mark.skipif(not os.path.exists(netns.BUSYPOLL_RUN), reason="irqtune-busypoll-run not installed"),
]


@pytest.fixture(scope="module")
def tools(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench-tools")
    subprocess.run(["gcc", "-O2", "-o", str(out / "mcload"), str(REPO / "bench/mcload.c"), "-lm"], check=True)
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(out / "epoll_slice.so"),
                    str(REPO / "bench/epoll_slice.c"), "-ldl"], check=True)
    # the shim's path must pass servervalues.shim_path: no unusual characters
    return str(out / "mcload"), str(out / "epoll_slice.so")


def settings(tools, modes_run=("suspend20",)):
    return types.SimpleNamespace(mcload=tools[0], shim=tools[1], memcached_cpu=CPUS[-1], generator_cpu=CPUS[0],
                                 modes=list(modes_run))


def leftovers():
    """What of the testbed is still there."""
    found = []
    if os.path.exists("/sys/class/net/%s" % netns.SERVER_DEV):
        found.append(netns.SERVER_DEV)
    if os.path.exists("/run/netns/%s" % netns.NAMESPACE):
        found.append("namespace")
    if netns.PID_FILE.exists():
        found.append(str(netns.PID_FILE))
    res = subprocess.run(["pgrep", "-f", "memcached .*-l %s" % netns.SERVER_ADDR], capture_output=True, text=True)
    if res.stdout.strip():
        found.append("memcached %s" % res.stdout.split())
    return found


def read_back(tb):
    rc, out, err = tb.server.run(tb.server_bench + ["server-state", tb.nic, "--pid-file", tb.pid_file])
    assert rc == 0, err
    return json.loads(out)


@pytest.fixture
def clean():
    assert leftovers() == [], "a testbed is left from before"
    yield
    assert leftovers() == []


def test_the_testbed_is_built_read_back_loaded_and_torn_down(tools, clean):
    tb = netns.NetnsTestbed(settings(tools))
    try:
        tb.prepare(lambda msg: None)
        inside = ["ip", "netns", "exec", netns.NAMESPACE]
        for pre, dev in (([], netns.SERVER_DEV), (inside, netns.CLIENT_DEV)):
            features = subprocess.run(pre + ["ethtool", "-k", dev], capture_output=True, text=True).stdout
            assert "generic-receive-offload: on" in features and "tcp-segmentation-offload: off" in features
        assert Path("/sys/class/net/%s/threaded" % netns.SERVER_DEV).read_text().strip() == "1"
        for dev, cpu in ((netns.SERVER_DEV, CPUS[-1]), (netns.CLIENT_DEV, CPUS[0])):
            pids = netns.napi_threads(dev)
            assert pids and all(os.sched_getaffinity(p) == {cpu} for p in pids), (dev, pids)

        tb.serve(modes.MODES["suspend20"])
        st = read_back(tb)
        assert st["pid"] == int(netns.PID_FILE.read_text())
        assert oct(netns.PID_FILE.stat().st_mode & 0o7777) == "0o644"
        assert st["affinity"] == [CPUS[-1]] and st["slice_ms"] == 0
        assert st["epoll"] and all((e["busy_poll_usecs"], e["prefer_busy_poll"]) == (0, 1) for e in st["epoll"])
        assert list(st["rx_queues"].values()) == [n["id"] for n in st["napis"]]

        tb.serve(modes.MODES["keepbusy"])       # restarted: the shim and the long busy window
        st = read_back(tb)
        assert st["slice_ms"] == 1 and all(e["busy_poll_usecs"] == 100000 for e in st["epoll"])

        res = tb.load(2000, 1.0, 0.2, 1, seed=1)
        assert res["answered"] > 1000 and res["server_task_ms"] > 0
        assert res["worker_sleeps"] is not None and res["napi_thread_runs"] is not None
        assert 0 <= res["generator_core_other_pct"] <= 100
        share = tb.poller_share(2000, 1, seed=2, seconds=0.5)
        if share is not None:       # perf installed: keepbusy's poller took packets
            assert share["poller"] > 0 and 0 < share["share"] <= 1, share
    finally:
        tb.finish()


DRIVER = """
import signal, sys, types
from irqtune_bench import modes, netns, orchestrator
s = types.SimpleNamespace(mcload=sys.argv[1], shim=sys.argv[2], memcached_cpu=int(sys.argv[3]),
                          generator_cpu=int(sys.argv[4]), modes=["suspend20"])
signal.signal(signal.SIGTERM, orchestrator.stop_on_signal)
tb = netns.NetnsTestbed(s)
try:
    tb.prepare(lambda msg: None)
    tb.serve(modes.MODES["suspend20"])
    print("loading", flush=True)
    tb.load(1000, 60.0, 0.0, 1, seed=1)
finally:
    tb.finish()
"""


def test_a_signal_during_a_load_leaves_nothing_behind(tools, clean):
    env = dict(os.environ, PYTHONPATH=str(REPO / "bench"))
    proc = subprocess.Popen([sys.executable, "-c", DRIVER, tools[0], tools[1], str(CPUS[-1]), str(CPUS[0])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "loading", proc.stderr.read()
        deadline = time.monotonic() + 10
        while not subprocess.run(["pgrep", "-x", "mcload"], capture_output=True).stdout:
            assert time.monotonic() < deadline, "mcload did not start"
            time.sleep(0.1)
        assert leftovers()          # the testbed stands while the load runs
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr.read()
    assert leftovers() == []
    assert not subprocess.run(["pgrep", "-x", "mcload"], capture_output=True).stdout     # the generator ended too


def test_a_testbed_left_by_a_killed_bench_is_named_not_reused(tools, clean):
    subprocess.run(["ip", "netns", "add", netns.NAMESPACE], check=True)
    try:
        tb = netns.NetnsTestbed(settings(tools))
        with pytest.raises(netns.BenchError, match="exists already"):
            tb.prepare(lambda msg: None)
        tb.finish()
        assert os.path.exists("/run/netns/%s" % netns.NAMESPACE)    # not ours: left as it was
    finally:
        subprocess.run(["ip", "netns", "del", netns.NAMESPACE])
