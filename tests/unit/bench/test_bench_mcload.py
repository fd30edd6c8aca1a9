# SPDX-License-Identifier: GPL-2.0-or-later
"""mcload (bench/mcload.c), built and run against a small memcached
stand-in on the loopback: every request scheduled in the window is in
its histogram, those never answered at the histogram's maximum, and the
per-second slices' p99 say when that happened.  The stand-in answers in
memcached's text protocol ("STORED\\r\\n" to the set, a 32-byte VALUE
block and END to each get, as memcached 1.6 prints them)."""

import json
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from irqtune_bench import stats
from support.bench import StandIn, free_ports

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def mcload(tmp_path_factory):
    if not shutil.which("gcc"):
        pytest.skip("no gcc")
    out = tmp_path_factory.mktemp("mcload") / "mcload"
    subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(out), str(REPO / "bench/mcload.c"),
                    "-lm"], check=True)
    return out


def run(mcload, answer, rate=2000, seconds=2, extra=(), server=None):
    server = server or StandIn(answer)
    res = subprocess.run([str(mcload), "--host", "127.0.0.1", "--port", str(server.port), "--rate", str(rate),
                          "--seconds", str(seconds), "--warmup", "0.2", "--seed", "3", *extra],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_every_request_of_the_window_is_in_the_histogram(mcload):
    out = run(mcload, answer=10 ** 9)
    h = out["hist"]
    assert out["unanswered"] == 0 == h["unanswered"]
    assert sum(c for _, c in h["counts"]) == out["measured"] > 3000
    # mcload's percentiles are the histogram's, as the report reads them
    for p, key in ((50, "p50_us"), (99, "p99_us")):
        assert stats.quantile_us(h, p) == pytest.approx(out[key], abs=0.06)
    assert out["p99_us"] < 1e6 and len(out["slices_p99_us"]) == 2
    assert all(v is not None and v < 1e6 for v in out["slices_p99_us"])


def test_unanswered_requests_are_counted_at_the_maximum(mcload):
    """The stand-in falls silent after about 1.4 s of the 2.2 s load: the
    rest of the window is never answered.  Dropping those requests would
    leave a p99 of microseconds; counting them puts it at the maximum."""
    out = run(mcload, answer=2800)
    h = out["hist"]
    assert out["unanswered"] == h["unanswered"] > 0.01 * out["measured"]
    assert sum(c for _, c in h["counts"]) + h["unanswered"] == out["measured"]
    top = h["max_ns"] / 1e3         # printed to 0.1 us
    assert stats.quantile_us(h, 99) == top
    assert out["p99_us"] == pytest.approx(top, abs=0.1) and out["max_us"] == pytest.approx(top, abs=0.1)
    # the first second was answered; the second one was not
    first, second = out["slices_p99_us"]
    assert first < 1e6 and second == pytest.approx(top, abs=0.1)


def time_wait(port):
    """Sockets in TIME_WAIT (06) with local port, from /proc/net/tcp."""
    rows = [line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:]]
    return [r for r in rows if int(r[1].split(":")[1], 16) == port and r[3] == "06"]


def test_source_ports_bind_each_connection_and_end_without_time_wait(mcload):
    """Issue 41: a source port found to land on the served queue is used
    by every run, so the connection must leave no TIME_WAIT behind."""
    ports = free_ports(2)
    server = StandIn(10 ** 9)
    out = run(mcload, 10 ** 9, rate=500, seconds=1, extra=["--conns", "2", "--source-ports", "%d,%d" % tuple(ports)],
              server=server)
    assert sorted(server.peers) == sorted(ports) and out["conns"] == 2
    assert time_wait(ports[0]) == [] and time_wait(ports[1]) == []
    run(mcload, 10 ** 9, rate=500, seconds=1, extra=["--conns", "2", "--source-ports", "%d,%d" % tuple(ports)],
        server=server)
    assert sorted(server.peers) == sorted(ports * 2)


@pytest.mark.parametrize("ports,words", [("1,2", "names 2 port(s) for 1 connection(s)"),
                                         ("0", "accepted comma-separated ports 1-65535"),
                                         ("7x", "accepted comma-separated ports")])
def test_source_ports_refused(mcload, ports, words):
    res = subprocess.run([str(mcload), "--host", "127.0.0.1", "--rate", "10", "--source-ports", ports],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 2 and words in res.stderr


def test_a_port_that_drops_syns_fails_in_seconds_with_a_timeout(mcload):
    """Issue 41: check's probe of a port a firewall drops.  A listener
    whose accept queue is full drops SYNs as such a firewall does; a
    blocking connect() would wait out the kernel's two minutes of SYN
    retries."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        queued = [socket.create_connection(listener.getsockname())]     # the queue holds one
        try:
            res = subprocess.run([str(mcload), "--host", "127.0.0.1", "--port", str(listener.getsockname()[1]),
                                  "--rate", "10", "--seconds", "0.2"], capture_output=True, text=True, timeout=60)
        finally:
            for sock in queued:
                sock.close()
    assert res.returncode == 1 and "mcload: connect: Connection timed out" in res.stderr, res.stderr


def test_the_slices_histograms_add_up_to_the_window(mcload):
    out = run(mcload, answer=2800)
    total = stats.merge([dict(out["hist"], **s) for s in out["slices_hist"]])
    assert total["counts"] == out["hist"]["counts"] and total["unanswered"] == out["hist"]["unanswered"]
    assert [stats.quantile_us(dict(out["hist"], **s), 99) for s in out["slices_hist"]] == \
        pytest.approx(out["slices_p99_us"], abs=0.06)


def test_several_generators_combine_into_one_run(mcload):
    """Two mcload processes at once against one server: the run's counts
    are their sums, its percentiles those of the merged histograms."""
    server = StandIn(10 ** 9)
    procs = [subprocess.Popen([str(mcload), "--host", "127.0.0.1", "--port", str(server.port), "--rate", "1000",
                               "--seconds", "1", "--warmup", "0.2", "--seed", str(seed)],
                              stdout=subprocess.PIPE, text=True) for seed in (1, 2)]
    a, b = (json.loads(p.communicate(timeout=30)[0]) for p in procs)
    both = stats.combine([a, b])
    assert both["generators"] == 2 and both["measured"] == a["measured"] + b["measured"]
    assert both["sent"] == a["sent"] + b["sent"] and both["offered"] == 2000
    merged = {i: c for i, c in both["hist"]["counts"]}
    for i, c in a["hist"]["counts"] + b["hist"]["counts"]:
        merged[i] -= c
    assert set(merged.values()) == {0}
    every = sorted(v for r in (a, b) for i, c in r["hist"]["counts"] for v in [stats.bucket_mid(i, 7)] * c)
    assert both["p99_us"] == pytest.approx(every[-(-99 * len(every) // 100) - 1] / 1e3)
    assert both["send_late_p99_us"] == max(a["send_late_p99_us"], b["send_late_p99_us"])
    assert both["gen_cpu_pct"] == max(a["gen_cpu_pct"], b["gen_cpu_pct"]) and len(both["slices_p99_us"]) == 1
    assert stats.combine([a]) is a
