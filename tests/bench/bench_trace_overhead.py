# SPDX-License-Identifier: GPL-2.0-or-later
"""What recording a service's epoll waits (irqtune.shared.measure, `irqtune
doctor`'s recommend link) costs the service.

1. The cost per system call, which the host's other load hardly blurs: a
   small C program times 2 000 000 epoll_wait(timeout 0) calls and as
   many getppid() calls in thread CPU time, with no recording, while
   its epoll waits are recorded (the target), and while another
   process's are (every other process: with a syscall tracepoint on,
   every thread's system calls take the kernel's slow path).
2. memcached (one worker thread, CPU 1) in a network namespace behind a
   veth pair (GRO on at the server end), loaded from another namespace
   by the lab's C generator (tests/lab/bench/mcload.c, CPU 0).  Windows
   of SECONDS alternate between no recording and an EpollTrace over
   memcached's threads, ROUNDS times each, at two loads:
   - a fixed moderate rate: memcached's CPU time per request
     (/proc/PID/stat) and latency p50/p99;
   - saturating (open loop far above capacity): answered requests/s is
     the server's throughput.
   Prints one line per window and the medians, with the recording's own
   CPU time (the copying thread) and what it recorded.

Run as root: python3 tests/bench/bench_trace_overhead.py [ROUNDS] [SECONDS]
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from irqtune.shared.measure import busy, epolltrace  # noqa: E402  (PYTHONPATH=. as make bench sets it)

SRV, CLI = "irqtune-ovh-s", "irqtune-ovh-c"
SERVER_ADDR, CLIENT_ADDR, PORT = "10.250.83.1", "10.250.83.2", 11211
SATURATING, MODERATE = 400000, 20000
CONNS = 8
CALLS = 2000000

PROBE = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>
static double cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}
int main(int argc, char **argv)
{
	long n = atol(argv[1]);
	int ep = epoll_create1(0);
	struct epoll_event ev;
	char line[8];
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	double t0 = cpu_ns();
	for (long i = 0; i < n; i++)
		epoll_wait(ep, &ev, 1, 0);
	double t1 = cpu_ns();
	for (long i = 0; i < n; i++)
		getppid();
	double t2 = cpu_ns();
	printf("%.1f %.1f\n", (t1 - t0) / n, (t2 - t1) / n);
	return 0;
}
"""


def sh(*argv):
    subprocess.run(argv, check=True, capture_output=True)


def setup():
    for ns in (SRV, CLI):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        sh("ip", "netns", "add", ns)
    sh("ip", "link", "add", "vosrv", "netns", SRV, "type", "veth", "peer", "name", "vocli",
       "netns", CLI)
    sh("ip", "-n", SRV, "addr", "add", SERVER_ADDR + "/24", "dev", "vosrv")
    sh("ip", "-n", CLI, "addr", "add", CLIENT_ADDR + "/24", "dev", "vocli")
    for ns, dev in ((SRV, "vosrv"), (CLI, "vocli")):
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "-n", ns, "link", "set", dev, "up")
    sh("ip", "netns", "exec", SRV, "ethtool", "-K", "vosrv", "gro", "on")


def teardown():
    for ns in (SRV, CLI):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def load(mcload, rate, seconds):
    out = subprocess.run(["ip", "netns", "exec", CLI, "taskset", "-c", "0", mcload, "--host",
                          SERVER_ADDR, "--rate", str(rate), "--conns", str(CONNS), "--seconds",
                          str(seconds), "--warmup", "0.5"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def window(mcload, server_pid, rate, seconds, traced):
    if not traced:
        return load(mcload, rate, seconds), None
    cpu0 = time.process_time()
    trace = epolltrace.EpollTrace([server_pid]).start()
    try:
        result = load(mcload, rate, seconds)
    finally:
        recorded = trace.stop()
    f = busy.figures(recorded.periods, recorded.maxevents)
    return result, {"busy_periods": f.busy_periods, "lost": recorded.lost,
                    "event_p99_us": (f.event_ns["p99"] or 0) / 1e3,
                    "batch_events_max": f.batch_events["max"],
                    "recorder_cpu_s": round(time.process_time() - cpu0, 3),
                    "window_s": round(recorded.seconds, 2)}


def probe_once(binary, trace_self):
    """(ns per epoll_wait, ns per getppid) of one probe run; trace_self:
    None (no recording), True (the probe's waits recorded), False
    (another process's)."""
    p = subprocess.Popen(["taskset", "-c", "1", binary, str(CALLS)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    other = None
    try:
        assert p.stdout.readline().strip() == "ready"
        trace = None
        if trace_self is not None:
            if not trace_self:
                other = subprocess.Popen(["sleep", "60"])
            trace = epolltrace.EpollTrace([p.pid if trace_self else other.pid]).start()
        p.stdin.write("go\n")
        p.stdin.flush()
        wait_ns, getppid_ns = map(float, p.stdout.readline().split())
        if trace is not None:
            trace.stop()
        return wait_ns, getppid_ns
    finally:
        p.wait()
        if other is not None:
            other.kill()
            other.wait()


def syscall_costs(binary, rounds):
    cases = {None: "no recording", True: "target recorded", False: "another recorded"}
    got = {c: [] for c in cases}
    for _ in range(rounds):
        for case in cases:
            got[case].append(probe_once(binary, case))
    for case, name in cases.items():
        print("syscall cost, %-17s epoll_wait %6.0f ns  getppid %6.0f ns (medians of %d)"
              % (name, statistics.median(w for w, _ in got[case]),
                 statistics.median(g for _, g in got[case]), rounds), flush=True)


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rpartition(")")[2].split()
    return int(fields[11]) + int(fields[12])


def main(rounds=6, seconds=3.0):
    tmp = tempfile.mkdtemp(prefix="irqtune-ovh-")
    mcload = os.path.join(tmp, "mcload")
    sh("gcc", "-O2", "-o", mcload, os.path.join(ROOT, "tests/lab/bench/mcload.c"), "-lm")
    with open(os.path.join(tmp, "probe.c"), "w") as f:
        f.write(PROBE)
    sh("gcc", "-O2", "-o", os.path.join(tmp, "probe"), os.path.join(tmp, "probe.c"))
    syscall_costs(os.path.join(tmp, "probe"), rounds)
    setup()
    server = subprocess.Popen(["ip", "netns", "exec", SRV, "taskset", "-c", "1",
                               shutil.which("memcached"), "-u", "nobody", "-l", SERVER_ADDR,
                               "-p", str(PORT), "-U", "0", "-t", "1"])
    try:
        time.sleep(1)
        for name, rate in (("moderate", MODERATE), ("saturating", SATURATING)):
            rows = {False: [], True: []}
            for i in range(rounds):
                for traced in ((False, True) if i % 2 == 0 else (True, False)):
                    ticks = cpu_ticks(server.pid)
                    result, rec = window(mcload, server.pid, rate, seconds, traced)
                    cpu_s = (cpu_ticks(server.pid) - ticks) / os.sysconf("SC_CLK_TCK")
                    # the server's CPU over the whole load run (warm-up and
                    # connection set-up included), per answered request
                    result["cpu_us_per_req"] = 1e6 * cpu_s / max(1, result["answered"])
                    rows[traced].append(result)
                    print("%-10s %-6s qps %9.0f p50 %7.1f us p99 %8.1f us cpu/req %5.2f us %s"
                          % (name, "traced" if traced else "plain", result["qps"],
                             result["p50_us"] or 0, result["p99_us"] or 0,
                             result["cpu_us_per_req"], rec or ""), flush=True)
            for traced in (False, True):
                med = {k: statistics.median(r[k] or 0 for r in rows[traced])
                       for k in ("qps", "p50_us", "p99_us", "cpu_us_per_req")}
                print("%-10s %-6s median qps %.0f p50 %.1f us p99 %.1f us cpu/req %.2f us "
                      "(min/max qps %.0f/%.0f)"
                      % (name, "traced" if traced else "plain", med["qps"], med["p50_us"],
                         med["p99_us"], med["cpu_us_per_req"],
                         min(r["qps"] for r in rows[traced]),
                         max(r["qps"] for r in rows[traced])), flush=True)
    finally:
        server.terminate()
        server.wait()
        teardown()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    main(int(args[0]) if args else 6, float(args[1]) if len(args) > 1 else 3.0)
