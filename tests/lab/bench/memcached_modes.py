#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`make lab-bench`: the seed's memcached benchmark (IRQ suspension v9
cover letter, all eleven modes) in the generation-7 lab (Linux 7.2 guest,
4-queue virtio-net, TuneD 2.27), with the CPU cost measured as guest
instructions per request.

Modes and who sets what ("project": the latency-suspend profile and its
variables file, the busy_poll_optin plugin with the preload library;
"bench": only what the project has no knob for):

  mode       NAPI defer / gro / suspend   memcached's epoll (EPIOCSPARAMS)
  base       0 / 0 / 0                    untouched
  deferX     100 / X us / 0               untouched            (X 10 20 50 200)
  napibusy   100 / 200 us / 0             usecs 64, budget 64, prefer 1
  fullbusy   100 / 5 ms / 0               usecs 1000, budget 64, prefer 1,
                                          + epoll_wait in 1 ms slices (bench)
  suspend0   0 / 0 / 20 ms                usecs 0, budget 64, prefer 1
  suspendX   100 / X us / 20 ms           usecs 0, budget 64, prefer 1 (X 10 20 50)

Every mode runs under latency-suspend (so they differ only in the seed's
knobs); fullbusy's epoll loop that never sleeps (the seed patched libevent)
is the bench's LD_PRELOAD shim epoll_slice.so, combined with the opt-in's
library through the unit's LD_PRELOAD.  Before every run the bench reads
back what the kernel and the server hold (napi-get of every rx NAPI,
EPIOCGPARAMS of every memcached epoll instance via pidfd_getfd, the shim's
setting) and fails the run if it is not the mode's.

Layout as in the seed: memcached pinned to one vCPU (bench drop-in
CPUAffinity=, default vCPU 2), one connection; its replies leave on that
vCPU's tx queue, so the tap steers the flow's requests to the paired rx
queue, whose interrupt is affine to the same vCPU.  The "serving" vCPUs of
a run are memcached's plus those of the rx queues that carried its packets.

Loads: the guest's saturation point is found first (base mode, offered
rate raised 1.5x per probe until the achieved rate falls below 95 % of it
or the median latency exceeds 10x the lightest probe's), then the offered
loads are fractions of it.  Load generator: mcload (C, open loop, Poisson,
latency from the scheduled send time, its own lateness and CPU reported)
on the host in the guest's namespace; it reads the instruction counter
(tests/lab/plugin) at the start and end of exactly the window its
latencies come from.

Every (mode, load) cell runs --repeats times; rounds interleave: each
round sets every mode once (shuffled order) and runs each load once
(shuffled order).  The JSON keeps every run; the table shows medians and
the spread (min..max).
"""

import argparse
import base64
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from lab import labvm
from lab.host7 import COUNTED_BOOT_ARGS, COUNTED_CPU, GUEST_IP, GUEST_PYTHON, KERNEL, Host7

PROFILE = "latency-suspend"
TOOLS = labvm.LAB_CACHE / "bench"
GUEST_SHIM = "/usr/local/lib/irqtune-bench/epoll_slice.so"
BENCH_DROPIN = "/etc/systemd/system/memcached.service.d/40-irqtune-bench.conf"
GUEST_STATE = "/irqtune/tests/lab/bench/guest_state.py"
MS, US = 1000000, 1000


def mode(defer, gro_us, suspend_ms, epoll_usecs=None, slice_ms=0):
    return {"defer_hard_irqs": defer, "gro_flush_timeout_ns": gro_us * US,
            "irq_suspend_timeout_ns": suspend_ms * MS,
            "epoll": None if epoll_usecs is None else
            {"busy_poll_usecs": epoll_usecs, "busy_poll_budget": 64, "prefer_busy_poll": 1},
            "epoll_slice_ms": slice_ms}


MODES = {
    "base": mode(0, 0, 0),
    "defer10": mode(100, 10, 0),
    "defer20": mode(100, 20, 0),
    "defer50": mode(100, 50, 0),
    "defer200": mode(100, 200, 0),
    "napibusy": mode(100, 200, 0, epoll_usecs=64),
    "fullbusy": mode(100, 5000, 0, epoll_usecs=1000, slice_ms=1),
    "suspend0": mode(0, 0, 20, epoll_usecs=0),
    "suspend10": mode(100, 10, 20, epoll_usecs=0),
    "suspend20": mode(100, 20, 20, epoll_usecs=0),
    "suspend50": mode(100, 50, 20, epoll_usecs=0),
}
WHO_SETS = {
    "NAPI defer-hard-irqs / gro-flush-timeout / irq-suspend-timeout":
        "project: latency-suspend variables defer_hard_irqs, gro_flush_timeout, irq_suspend_timeout",
    "epoll busy_poll_usecs / busy_poll_budget / prefer_busy_poll":
        "project: latency-suspend variables optin_services=memcached, optin_busy_poll_usecs "
        "(budget 64 and prefer 1 are busy_poll_optin's defaults), optin_restart=true",
    "fullbusy's epoll_wait that never sleeps (1 ms slices)":
        "bench: LD_PRELOAD shim epoll_slice.so with IRQTUNE_BENCH_EPOLL_SLICE_MS=1 in a "
        "memcached drop-in (the project has no knob for an application's epoll timeout)",
    "memcached pinned to one vCPU": "bench: CPUAffinity= in the same drop-in (the seed pins memcached)",
}


def variables_of(m, nic):
    """latency-suspend's variables for mode m."""
    return {"suspend_nics": nic, "defer_hard_irqs": str(m["defer_hard_irqs"]),
            "gro_flush_timeout": "%dus" % (m["gro_flush_timeout_ns"] // US),
            "irq_suspend_timeout": "%dms" % (m["irq_suspend_timeout_ns"] // MS),
            "optin_services": "memcached" if m["epoll"] else "",
            "optin_busy_poll_usecs": str(m["epoll"]["busy_poll_usecs"] if m["epoll"] else 0),
            "optin_restart": "true"}


# -- the guest -------------------------------------------------------------

class Bench:
    def __init__(self, h, args):
        self.h = h
        self.g = h.g
        self.args = args
        self.cpu = args.memcached_cpu

    def prepare(self):
        h = self.h
        h.install_project()
        h.serve_memcached_on_nic()
        # The image's other servers (nginx, redis) are for other tests; under
        # TCG their timers cost millions of instructions a second.
        h.sh("systemctl stop nginx redis-server")
        shim = (TOOLS / "epoll_slice.so").read_bytes()
        rc, out = self.g.run(["sh", "-c", "mkdir -p %s && base64 -d > %s"
                              % (os.path.dirname(GUEST_SHIM), GUEST_SHIM)],
                             input=base64.b64encode(shim).decode())
        assert rc == 0, self.g.last_stderr

    def write_dropin(self, m):
        lines = ["# irqtune lab bench (tests/lab/bench/memcached_modes.py)", "[Service]",
                 "CPUAffinity=%d" % self.cpu]
        if m["epoll_slice_ms"]:
            lines += ['Environment="LD_PRELOAD=%s"' % GUEST_SHIM,
                      "Environment=IRQTUNE_BENCH_EPOLL_SLICE_MS=%d" % m["epoll_slice_ms"]]
        self.h.sh("mkdir -p %s" % os.path.dirname(BENCH_DROPIN))
        self.h.write(BENCH_DROPIN, "\n".join(lines) + "\n")
        self.h.sh("systemctl daemon-reload")

    def set_mode(self, name):
        """The mode through the project (profile variables, opt-in), and the
        bench's own drop-in (pinning, fullbusy's epoll slices)."""
        m = MODES[name]
        t0 = time.monotonic()
        self.write_dropin(m)
        self.h.profile(PROFILE, variables={PROFILE: variables_of(m, self.h.nic)})
        if not m["epoll"]:
            # no opt-in: restart so memcached runs without whatever preload
            # and pinning the previous mode left
            self.h.sh("systemctl restart memcached && systemctl is-active memcached")
        else:
            # the opt-in restarted it; make sure the pinning drop-in is in
            self.h.sh("systemctl is-active memcached")
        return time.monotonic() - t0

    def state(self, stats_only=False):
        argv = [*GUEST_PYTHON, GUEST_STATE, self.h.nic] + (["--stats-only"] if stats_only else [])
        rc, out = self.g.run(argv, timeout=60)
        assert rc == 0, "guest_state: %s" % self.g.last_stderr
        return json.loads(out)

    def load(self, rate, seconds, warmup, seed):
        argv = [str(TOOLS / "mcload"), "--host", GUEST_IP, "--rate", str(rate),
                "--seconds", str(seconds), "--warmup", str(warmup), "--conns", str(self.args.conns),
                "--counter", str(self.g.insn_sock), "--seed", str(seed)]
        res = subprocess.run(self.g.netns.exec_argv(argv), capture_output=True, text=True,
                             timeout=seconds + warmup + 60)
        if res.returncode != 0:
            raise RuntimeError("mcload: %s" % res.stderr.strip())
        return json.loads(res.stdout)


def check(m, st, cpu):
    """Why the guest does not hold mode m now ([] when it does)."""
    problems = []
    rx_napis = set(st["rx_queues"].values())
    want = {"defer-hard-irqs": m["defer_hard_irqs"], "gro-flush-timeout": m["gro_flush_timeout_ns"],
            "irq-suspend-timeout": m["irq_suspend_timeout_ns"]}
    if not rx_napis:
        problems.append("queue-get lists no rx NAPI")
    for napi in st["napis"]:
        if napi["id"] not in rx_napis:
            continue
        for k, v in want.items():
            if napi.get(k, 0) != v:
                problems.append("NAPI %d %s=%s, mode wants %s" % (napi["id"], k, napi.get(k), v))
    ep = m["epoll"] or {"busy_poll_usecs": 0, "busy_poll_budget": 0, "prefer_busy_poll": 0}
    if not st["epoll"]:
        problems.append("memcached holds no epoll instance")
    for e in st["epoll"]:
        got = {k: e[k] for k in ep}
        if got != ep:
            problems.append("memcached epoll fd %d %s, mode wants %s" % (e["fd"], got, ep))
    if st["slice_ms"] != m["epoll_slice_ms"]:
        problems.append("epoll slice %s ms, mode wants %s" % (st["slice_ms"], m["epoll_slice_ms"]))
    if st["affinity"] != [cpu]:
        problems.append("memcached may run on vCPUs %s, bench wants [%d]" % (st["affinity"], cpu))
    return problems


# -- counters --------------------------------------------------------------

def parse_stats(s, irq_names):
    """The counters of one guest_state snapshot."""
    out = {"cpu": {}, "irqs": {}, "rxq": {}}
    for line in s["/proc/stat"].splitlines():
        f = line.split()
        if f and f[0].startswith("cpu") and f[0][3:].isdigit():
            v = [int(x) for x in f[1:]]
            out["cpu"][int(f[0][3:])] = (sum(v) - v[3] - v[4], sum(v))
    lines = s["/proc/interrupts"].splitlines()
    ncpu = len(lines[0].split())
    for line in lines[1:]:
        f = line.split()
        if f and f[0].rstrip(":").isdigit() and int(f[0].rstrip(":")) in irq_names:
            out["irqs"][int(f[0].rstrip(":"))] = sum(int(x) for x in f[1:1 + ncpu])
    for line in s["/proc/softirqs"].splitlines():
        if line.split()[:1] == ["NET_RX:"]:
            out["net_rx"] = sum(int(x) for x in line.split()[1:])
    nl = [l.split() for l in s["/proc/net/netstat"].splitlines() if l.startswith("TcpExt:")]
    out["busy_poll_rx"] = int(dict(zip(nl[0][1:], nl[1][1:]))["BusyPollRxPackets"])
    rx_total = 0
    for line in s["/proc/net/dev"].splitlines():
        name, _, fields = line.partition(":")
        if fields and name.strip() not in ("lo",):
            rx_total += int(fields.split()[1])
    out["rx_packets"] = rx_total
    out["rxq"] = {int(q): n for q, n in s["rxq"].items()}
    return out


def derive(res, st0, st1, cpu, ncpu):
    """Per-run figures from mcload's answer and two guest snapshots."""
    # virtio-net's NAPIs carry no irq in napi-get: guest_state maps rx
    # queues to their "-input.N" interrupts
    irq_of_queue = {int(q): irq for q, irq in st0["queue_irqs"].items()}
    a = parse_stats(st0["stats"], set(irq_of_queue.values()))
    b = parse_stats(st1["stats"], set(irq_of_queue.values()))
    rxq = {q: b["rxq"].get(q, 0) - a["rxq"].get(q, 0) for q in b["rxq"]}
    rx_all = max(1, sum(rxq.values()))
    queues = sorted(q for q, n in rxq.items() if n >= 0.1 * rx_all)
    serving = {cpu}
    for q in queues:
        serving.update(st0["irq_cpus"].get(str(irq_of_queue.get(q)), []))
    serving = sorted(serving)
    busy = {c: b["cpu"][c][0] - a["cpu"][c][0] for c in b["cpu"]}
    total = {c: max(1, b["cpu"][c][1] - a["cpu"][c][1]) for c in b["cpu"]}
    answered = max(1, res["measured"])
    out = {
        "rx_queues_used": queues, "serving_vcpus": serving,
        "cpu_pct_serving": round(100.0 * sum(busy[c] for c in serving) / sum(total[c] for c in serving), 1),
        "cpu_pct_guest": round(100.0 * sum(busy.values()) / sum(total.values()), 1),
        "irqs_per_request": round((sum(b["irqs"].values()) - sum(a["irqs"].values())) / answered, 4),
        "net_rx_per_request": round((b["net_rx"] - a["net_rx"]) / answered, 4),
        "busy_share": round((b["busy_poll_rx"] - a["busy_poll_rx"]) / max(1, b["rx_packets"] - a["rx_packets"]), 3),
    }
    ins = res.get("insns")
    if ins:
        out["insns_per_vcpu"] = ins
        out["ipr_serving"] = round(sum(ins[c] for c in serving) / answered)
        out["ipr_guest"] = round(sum(ins) / answered)
        out["minsn_per_s_guest"] = round(sum(ins) / res["window_s"] / 1e6, 1)
    return out


# -- schedule --------------------------------------------------------------

def saturation(bench, args, log):
    """Highest offered rate the guest keeps up with in base mode."""
    bench.set_mode("base")
    probes = []
    rate, good, bad, ref_p50 = args.probe_start, None, None, None

    def probe(r):
        res = bench.load(r, args.probe_seconds, args.warmup, seed=len(probes) + 1)
        ok = (res["qps"] >= 0.95 * r and res["lost"] == 0 and res["p50_us"] is not None
              and (ref_p50 is None or res["p50_us"] <= 10 * ref_p50))
        probes.append({"offered": r, "qps": res["qps"], "p50_us": res["p50_us"], "p99_us": res["p99_us"],
                       "lost": res["lost"], "send_late_p99_us": res["send_late_p99_us"],
                       "gen_cpu_pct": res["gen_cpu_pct"], "kept_up": ok})
        log("saturation probe %6d req/s: qps %.0f p50 %s us p99 %s us -> %s"
            % (r, res["qps"], res["p50_us"], res["p99_us"], "kept up" if ok else "saturated"))
        return ok, res

    while rate <= args.probe_max:
        ok, res = probe(rate)
        if ref_p50 is None:
            if not ok:
                raise SystemExit("lab-bench: the guest does not keep up with %d req/s" % rate)
            ref_p50 = res["p50_us"]
        if not ok:
            bad = rate
            break
        good = rate
        rate = int(rate * 1.5)
    if bad is not None:
        for _ in range(2):      # two bisection steps between kept up and saturated
            mid = (good + bad) // 2
            ok, _ = probe(mid)
            good, bad = (mid, bad) if ok else (good, mid)
    return good, probes


def summarise(runs, modes, loads):
    keys = ("qps", "avg_us", "p50_us", "p99_us", "cpu_pct_serving", "cpu_pct_guest", "ipr_serving",
            "ipr_guest", "irqs_per_request", "busy_share", "send_late_p99_us", "gen_cpu_pct")
    cells = {}
    for m in modes:
        for load in loads:
            ok = [r for r in runs if r["mode"] == m and r["offered"] == load and not r.get("failed")]
            cell = {"runs": len(ok), "failed": sum(1 for r in runs if r["mode"] == m
                                                   and r["offered"] == load and r.get("failed"))}
            for k in keys:
                vals = [r[k] for r in ok if r.get(k) is not None]
                if vals:
                    cell[k] = {"median": statistics.median(vals), "min": min(vals), "max": max(vals)}
            cells["%s@%d" % (m, load)] = cell
    return cells


def fmt(cell, key, scale=1.0, digits=0, between=".."):
    """"median [min..max]" of a cell's key, "-" when it has none."""
    v = cell.get(key)
    if not v:
        return "-"
    f = "%%.%df" % digits
    return (f + " [" + f + between + f + "]") % (v["median"] * scale, v["min"] * scale, v["max"] * scale)


def med(cell, key):
    return cell.get(key, {}).get("median")


def table(cells, modes, loads):
    lines = []
    head = "%-10s %7s %7s %26s %24s %17s %15s %6s %6s %7s %6s" % (
        "mode", "qps", "p50 us", "p99 us med [min..max]", "kinsn/req serving", "kinsn/req guest",
        "CPU% serv/all", "irq/r", "busy%", "late99", "gen%")
    for load in loads:
        lines.append("offered %d req/s" % load)
        lines.append(head)
        for m in modes:
            c = cells["%s@%d" % (m, load)]
            if not c["runs"]:
                lines.append("%-10s no valid run (%d failed)" % (m, c["failed"]))
                continue
            lines.append("%-10s %7.0f %7.0f %26s %24s %17s %15s %6.3f %6.0f %7.0f %6.1f" % (
                m, med(c, "qps"), med(c, "p50_us"), fmt(c, "p99_us"), fmt(c, "ipr_serving", 1e-3, 1),
                "%.1f" % (med(c, "ipr_guest") / 1e3) if med(c, "ipr_guest") else "-",
                "%.0f/%.0f" % (med(c, "cpu_pct_serving"), med(c, "cpu_pct_guest")),
                med(c, "irqs_per_request"), 100 * med(c, "busy_share"), med(c, "send_late_p99_us"),
                med(c, "gen_cpu_pct")))
        lines.append("")
    return "\n".join(lines)


def markdown(cells, modes, loads):
    """The per-load tables of docs/benchmarks.md (median [min-max])."""
    def one(c, key, scale=1.0, digits=0):
        v = med(c, key)
        return "-" if v is None else ("%%.%df" % digits) % (v * scale)

    lines = []
    for load in loads:
        lines += ["### Offered %d req/s" % load, "",
                  "| mode | runs | qps | p50 us | p99 us | kinsn/req serving | kinsn/req guest | CPU % "
                  "| irq/req | busy % | late p99 | gen % |", "|" + "---|" * 12]
        for m in modes:
            c = cells["%s@%d" % (m, load)]
            if not c["runs"]:
                lines.append("| %s | 0 (%d failed) |%s" % (m, c["failed"], " - |" * 10))
                continue
            lines.append("| %s | %d | %s | %s | %s | %s | %s | %s/%s | %s | %s | %s | %s |" % (
                m, c["runs"], one(c, "qps"), one(c, "p50_us"), fmt(c, "p99_us", between="-"),
                fmt(c, "ipr_serving", 1e-3, 1, between="-"), one(c, "ipr_guest", 1e-3, 1),
                one(c, "cpu_pct_serving"), one(c, "cpu_pct_guest"), one(c, "irqs_per_request", digits=2),
                one(c, "busy_share", 100), one(c, "send_late_p99_us"), one(c, "gen_cpu_pct", digits=1)))
        lines.append("")
    return "\n".join(lines)


def verdicts(cells, loads):
    out = []
    for load in loads:
        s, f = cells["suspend20@%d" % load], cells["fullbusy@%d" % load]
        if not (med(s, "p99_us") and med(f, "p99_us") and med(s, "ipr_serving") and med(f, "ipr_serving")):
            out.append("offered %d: suspend20 or fullbusy has no valid run - no verdict" % load)
            continue
        p = med(s, "p99_us") / med(f, "p99_us")
        c = med(s, "ipr_serving") / med(f, "ipr_serving")
        holds = p <= 1.5 and c <= 0.7
        line = ("offered %d: suspend20 p99 %.2fx fullbusy's (target <= 1.5x) at %.2fx its instructions "
                "per request on the serving vCPUs (target <= 0.7x; whole guest %.2fx): %s"
                % (load, p, c, med(s, "ipr_guest") / med(f, "ipr_guest"), "HOLDS" if holds else "does NOT hold"))
        defers = [(med(cells["%s@%d" % (d, load)], "p99_us"), d) for d in ("defer10", "defer20", "defer50", "defer200")
                  if med(cells.get("%s@%d" % (d, load), {}), "p99_us")]
        if defers:
            best_p99, best = min(defers)
            bc = cells["%s@%d" % (best, load)]
            line += ("; against the best defer mode (%s): p99 %.2fx, instructions/request %.2fx"
                     % (best, med(s, "p99_us") / best_p99, med(s, "ipr_serving") / med(bc, "ipr_serving")))
        out.append(line)
    return out


def plot(cells, modes, loads, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plots (apt-get install python3-matplotlib)", file=sys.stderr)
        return []
    written = []
    styles = {"base": ("k", "o"), "defer10": ("tab:blue", "v"), "defer20": ("tab:blue", "^"),
              "defer50": ("tab:blue", "<"), "defer200": ("tab:blue", ">"), "napibusy": ("tab:orange", "s"),
              "fullbusy": ("tab:red", "D"), "suspend0": ("tab:green", "x"), "suspend10": ("tab:green", "v"),
              "suspend20": ("tab:green", "o"), "suspend50": ("tab:green", "^")}
    for key, fname, title, scale in (
            ("p99_us", "lab-bench-p99.png", "p99 latency (us), median of runs, bars min..max", 1.0),
            ("ipr_serving", "lab-bench-insn.png",
             "guest instructions per request, serving vCPUs (thousands)", 1e-3)):
        fig, ax = plt.subplots(figsize=(9, 5.5))
        for m in modes:
            xs, ys, lo, hi = [], [], [], []
            for load in loads:
                c = cells["%s@%d" % (m, load)]
                if med(c, key) is None:
                    continue
                xs.append(load)
                ys.append(med(c, key) * scale)
                lo.append((c[key]["median"] - c[key]["min"]) * scale)
                hi.append((c[key]["max"] - c[key]["median"]) * scale)
            color, marker = styles.get(m, (None, "o"))
            ls = "--" if m.startswith("defer") else "-"
            ax.errorbar(xs, ys, yerr=[lo, hi], label=m, color=color, marker=marker, linestyle=ls,
                        capsize=2, alpha=0.85)
        ax.set_xlabel("offered load (req/s)")
        ax.set_title(title)
        if key == "p99_us":
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        ax.legend(ncol=2, fontsize=8)
        fig.suptitle("memcached in the lab guest (Linux 7.2, QEMU TCG, 4 vCPUs)", fontsize=10)
        fig.tight_layout()
        fig.savefig(out / fname, dpi=100)
        plt.close(fig)
        written.append(out / fname)
    return written


def write_report(report, out):
    """Table, verdicts and plots of a run (also from a saved JSON, --report)."""
    runs, loads, args = report["runs"], report["loads"], report["settings"]
    modes = [m.strip() for m in args["modes"].split(",") if m.strip()]
    cells = summarise(runs, modes, loads)
    report["cells"] = cells
    text = table(cells, modes, loads)
    verdict = verdicts(cells, loads) if "suspend20" in modes and "fullbusy" in modes else []
    report["verdicts"] = verdict
    (out / "lab-bench.json").write_text(json.dumps(report, indent=1) + "\n")
    settings = ["who sets what:"] + ["  %s: %s" % kv for kv in report["who_sets"].items()]
    sat = report.get("saturation")
    header = ("memcached, Linux 7.2 guest under QEMU TCG (4 vCPUs, -cpu %s), %d run(s) per cell, "
              "%.1f s windows, %d connection(s); saturation %s req/s; full run %s s\n"
              "columns: achieved qps; p50 and p99 latency (us); guest instructions per request (thousands) "
              "on the serving vCPUs (memcached's and its rx queue's) and the whole guest; guest CPU %% "
              "serving/all; queue interrupts per request; busy-polled share of rx packets (%%); the "
              "generator's p99 send lateness (us) and CPU %%"
              % (report["guest"]["cpu_model"], args["repeats"], args["seconds"], args["conns"],
                 sat["rate"] if sat else "not searched", report.get("seconds_total", "?")))
    full = "\n".join([header, ""] + settings + ["", text] + verdict)
    (out / "lab-bench.txt").write_text(full + "\n")
    (out / "lab-bench.md").write_text(markdown(cells, modes, loads) + "\n".join(
        ["Verdicts (printed by the bench):", ""] + ["- " + v for v in verdict]) + "\n")
    print(full)
    for p in plot(cells, modes, loads, out):
        print("wrote %s" % p)
    print("wrote %s, %s, %s" % (out / "lab-bench.json", out / "lab-bench.txt", out / "lab-bench.md"))


def machine():
    info = {"host_cpus": os.cpu_count(), "host_kernel": platform.release()}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["host_cpu"] = line.split(":", 1)[1].strip()
                break
        info["host_mem_gib"] = round(int(Path("/proc/meminfo").read_text().split()[1]) / 2**20, 1)
    except (OSError, ValueError, IndexError):
        pass
    res = subprocess.run([labvm.QEMU, "--version"], capture_output=True, text=True)
    info["qemu"] = res.stdout.splitlines()[0] if res.stdout else "?"
    return info


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--modes", default=",".join(MODES), help="comma separated, of: " + " ".join(MODES))
    ap.add_argument("--loads", default="", help="offered req/s, comma separated (default: found "
                    "from the guest's saturation point and --fractions)")
    ap.add_argument("--fractions", default="0.1,0.3,0.55,0.8,1.0",
                    help="offered loads as fractions of the saturation point")
    ap.add_argument("--repeats", type=int, default=3, help="runs per cell, interleaved rounds")
    ap.add_argument("--seconds", type=float, default=3.0, help="measurement window per run")
    ap.add_argument("--warmup", type=float, default=0.5, help="load before the window opens")
    ap.add_argument("--conns", type=int, default=1)
    ap.add_argument("--memcached-cpu", type=int, default=2, help="vCPU memcached is pinned to")
    ap.add_argument("--probe-start", type=int, default=1000)
    ap.add_argument("--probe-max", type=int, default=200000)
    ap.add_argument("--probe-seconds", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=1, help="of the round orders")
    ap.add_argument("--quick", action="store_true",
                    help="a short run: 1 repeat, 2 s windows, 3 loads (checks the machinery, not the modes)")
    ap.add_argument("--out", default=str(labvm.REPO / "build"))
    ap.add_argument("--report", metavar="JSON", help="only write table, verdicts and plots of a saved run")
    args = ap.parse_args(argv)
    if args.report:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        write_report(json.loads(Path(args.report).read_text()), out)
        return 0
    if args.quick:
        args.repeats, args.seconds, args.fractions = 1, 2.0, "0.2,0.6,1.0"
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        ap.error("unknown mode(s) %s; known: %s" % (", ".join(unknown), " ".join(MODES)))
    for need in ("suspend20", "fullbusy"):
        if need not in modes:
            print("lab-bench: %s not among --modes: no verdict lines" % need, file=sys.stderr)
    reason = labvm.missing(KERNEL)
    for tool in ("mcload", "epoll_slice.so"):
        if not reason and not (TOOLS / tool).is_file():
            reason = "%s not built; run `make lab-bench-tools`" % (TOOLS / tool)
    if not reason and not labvm.insn_plugin().is_file():
        reason = "%s not built; run `make lab-plugin`" % labvm.insn_plugin()
    if reason:
        print("lab-bench: %s" % reason, file=sys.stderr)
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.monotonic()

    def log(msg):
        print("[lab-bench %5.0fs] %s" % (time.monotonic() - t_start, msg), file=sys.stderr, flush=True)

    report = {"kernel": KERNEL, "kernel_info": labvm.kernel_info(KERNEL), "machine": machine(),
              "guest": {"vcpus": 4, "cpu_model": COUNTED_CPU, "cmdline_extra": COUNTED_BOOT_ARGS,
                        "nic_queues": labvm.NIC_QUEUES},
              "settings": vars(args), "modes": MODES, "who_sets": WHO_SETS,
              "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    runs = []
    report["runs"] = runs
    with labvm.Guest(kernel=KERNEL, cmdline=COUNTED_BOOT_ARGS, cpu=COUNTED_CPU, count_insns=True) as g:
        log("guest up in %.0fs, nic %s" % (g.boot_seconds, g.nic))
        h = Host7(g)
        bench = Bench(h, args)
        bench.prepare()
        log("project installed")
        idle0 = g.insns()
        time.sleep(2)
        idle1 = g.insns()
        report["idle_insns_per_s"] = [round((b - a) / 2) for a, b in zip(idle0, idle1)]
        log("idle guest: %s instructions/s per vCPU" % report["idle_insns_per_s"])
        if args.loads:
            loads = sorted(int(x) for x in args.loads.split(","))
            report["saturation"] = None
        else:
            sat, probes = saturation(bench, args, log)
            report["saturation"] = {"rate": sat, "probes": probes}
            fr = sorted(float(x) for x in args.fractions.split(","))
            loads = sorted({max(100, int(round(sat * f, -2))) for f in fr})
            log("saturation %d req/s; loads %s" % (sat, loads))
        report["loads"] = loads
        n_runs = len(modes) * len(loads) * args.repeats
        for rnd in range(args.repeats):
            rng = random.Random(args.seed * 1000 + rnd)
            order = modes[:]
            rng.shuffle(order)
            for name in order:
                lorder = loads[:]
                rng.shuffle(lorder)
                try:
                    took = bench.set_mode(name)
                    log("round %d: mode %s set in %.0fs" % (rnd + 1, name, took))
                except (AssertionError, labvm.LabError) as err:
                    log("round %d: mode %s could not be set: %s" % (rnd + 1, name, err))
                    runs.extend({"round": rnd + 1, "mode": name, "offered": load,
                                 "failed": "setting the mode: %s" % err} for load in lorder)
                    continue
                for load in lorder:
                    run = {"round": rnd + 1, "mode": name, "offered": load}
                    try:
                        st0 = bench.state()
                    except (AssertionError, labvm.LabError, ValueError) as err:
                        run["failed"] = "reading the guest back: %s" % err
                        log("%s @ %d: FAILED %s" % (name, load, run["failed"]))
                        runs.append(run)
                        continue
                    problems = check(MODES[name], st0, args.memcached_cpu)
                    run["readback"] = {"napis": [{k: n.get(k) for k in ("id", "irq", "defer-hard-irqs",
                                                                         "gro-flush-timeout", "irq-suspend-timeout")}
                                                 for n in st0["napis"]],
                                       "rx_queues": st0["rx_queues"], "epoll": st0["epoll"],
                                       "epoll_slice_ms": st0["slice_ms"], "memcached_vcpus": st0["affinity"]}
                    if problems:
                        run["failed"] = "mode not in effect: " + "; ".join(problems)
                        log("%s @ %d: FAILED %s" % (name, load, run["failed"]))
                        runs.append(run)
                        continue
                    try:
                        res = bench.load(load, args.seconds, args.warmup, seed=len(runs) + 1)
                    except (RuntimeError, subprocess.TimeoutExpired, ValueError) as err:
                        run["failed"] = "load generator: %s" % err
                        log("%s @ %d: FAILED %s" % (name, load, run["failed"]))
                        runs.append(run)
                        continue
                    try:
                        st1 = bench.state(stats_only=True)
                    except (AssertionError, labvm.LabError, ValueError) as err:
                        run["failed"] = "reading the guest's counters after the load: %s" % err
                        runs.append(run)
                        continue
                    run.update(res)
                    run.update(derive(res, st0, st1, args.memcached_cpu, g.smp))
                    runs.append(run)
                    log("[%d/%d] %-9s %6d req/s: qps %.0f p50 %s p99 %s us, %s kinsn/req serving %s, "
                        "CPU %s%%, late99 %s us, gen %s%%"
                        % (len(runs), n_runs, name, load, res["qps"], res["p50_us"], res["p99_us"],
                           round(run.get("ipr_serving", 0) / 1e3, 1), run["serving_vcpus"],
                           run["cpu_pct_serving"], res["send_late_p99_us"], res["gen_cpu_pct"]))
                    (out / "lab-bench.json").write_text(json.dumps(report, indent=1) + "\n")
        h.off()
    report["seconds_total"] = round(time.monotonic() - t_start)
    write_report(report, out)
    failed = [r for r in runs if r.get("failed")]
    if failed:
        print("lab-bench: %d run(s) failed the settings check (see the JSON)" % len(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
