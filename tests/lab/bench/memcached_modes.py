#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`make lab-bench`: the seed's five-mode memcached benchmark in the
generation-7 lab (Linux 7.2 guest, 4-queue virtio-net, TuneD 2.27).

Every case is set up only through the project: the latency-suspend profile
and its variables (NAPI values per queue), the busy_poll_optin plugin with
the preload library for memcached (a stock server), or `tuned-adm off`.

  case       NAPI defer / gro / suspend   memcached's epoll (via the preload)
  base       0 / 0 / 0 (tuned-adm off)    untouched
  defer20    100 / 20 us / 0              untouched
  napibusy   100 / 200 us / 0             busy_poll_usecs 64, prefer 1
  fullbusy   100 / 5 ms / 0               busy_poll_usecs 1000, prefer 1 (*)
  suspend20  100 / 20 us / 20 ms          busy_poll_usecs 0, prefer 1

(*) The seed's fullbusy loops epoll_wait without blocking; a stock
memcached blocks in epoll_wait, so the approximation is a 1 ms busy loop
inside each epoll_wait before it sleeps.

Load: tests/lab/loadgen.py (open loop, Poisson arrivals, latency from the
scheduled send time) from the host end of the tap.  Printed per offered
rate: achieved qps, p50/p99 latency, CPU % of the guest CPUs serving the
NIC queues, NIC queue interrupts/s and the busy-polled share of rx packets
(TcpExt:BusyPollRxPackets over rx_packets: how much of the receive work the
application's busy poll took from the softirq); the same as JSON and a PNG
in build/.  One connection by default (--conns), so one memcached worker
busy polls the one rx queue that carries its requests.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import labvm  # noqa: E402
from host7 import BOOT_ARGS, KERNEL, Host7  # noqa: E402

PROFILE = "latency-suspend"
CASES = {
    "base": None,
    "defer20": {"gro_flush_timeout": "20us", "irq_suspend_timeout": "0"},
    "napibusy": {"gro_flush_timeout": "200us", "irq_suspend_timeout": "0",
                 "optin_services": "memcached", "optin_busy_poll_usecs": "64"},
    "fullbusy": {"gro_flush_timeout": "5ms", "irq_suspend_timeout": "0",
                 "optin_services": "memcached", "optin_busy_poll_usecs": "1000"},
    "suspend20": {"gro_flush_timeout": "20us", "irq_suspend_timeout": "20ms",
                  "optin_services": "memcached", "optin_busy_poll_usecs": "0"},
}


def set_up(h, case):
    h.off()
    values = CASES[case]
    if values is None:
        # tuned-adm off restores originals and removes drop-ins; restart so
        # memcached runs without the preload whatever ran before.
        h.sh("systemctl restart memcached")
        return
    variables = {"suspend_nics": h.nic, "defer_hard_irqs": "100", "optin_restart": "true",
                 "optin_services": ""}
    variables.update(values)
    h.profile(PROFILE, variables={PROFILE: variables})
    if not values.get("optin_services"):
        h.sh("systemctl restart memcached")


def queue_cpus(h):
    """Guest CPUs the NIC's rx queue interrupts are affine to."""
    cpus = set()
    for name, (irq, _) in h.g.nic_queue_interrupts().items():
        if name.startswith("input."):
            text = h.g.read_file("/proc/irq/%d/effective_affinity_list" % irq).strip()
            for part in text.split(","):
                lo, _, hi = part.partition("-")
                cpus.update(range(int(lo), int(hi or lo) + 1))
    return sorted(cpus)


def cpu_jiffies(h, cpus):
    busy = total = 0
    for line in h.g.read_file("/proc/stat").splitlines():
        name = line.split()[0]
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
            f = [int(x) for x in line.split()[1:]]
            idle = f[3] + f[4]
            busy += sum(f) - idle
            total += sum(f)
    return busy, total


def measure(h, rate, seconds, cpus, conns):
    irq0 = h.queue_interrupts()
    busy0, total0 = cpu_jiffies(h, cpus)
    t0 = time.monotonic()
    res = h.measure_memcached(rate, seconds, conns=conns)
    wall = time.monotonic() - t0
    busy1, total1 = cpu_jiffies(h, cpus)
    res["irq_per_s"] = round((h.queue_interrupts() - irq0) / wall, 1)
    res["cpu_pct"] = round(100.0 * (busy1 - busy0) / max(1, total1 - total0), 1)
    return res


def table(results, rates):
    lines = []
    cases = list(CASES)
    for rate in rates:
        lines.append("offered %d req/s" % rate)
        lines.append("%-10s %10s %10s %10s %8s %10s %8s" % ("case", "qps", "p50 us", "p99 us", "CPU %",
                                                            "irq/s", "busy %"))
        for case in cases:
            r = results[case][str(rate)]
            lines.append("%-10s %10.0f %10s %10s %8.1f %10.0f %8.0f" % (
                case, r["qps"], r["p50_us"], r["p99_us"], r["cpu_pct"], r["irq_per_s"],
                100 * r["busy_share"]))
        lines.append("")
    return "\n".join(lines)


def plot(results, rates, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no PNG (apt-get install python3-matplotlib)", file=sys.stderr)
        return False
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    for case in CASES:
        xs = [results[case][str(r)]["qps"] for r in rates]
        axes[0].plot(xs, [results[case][str(r)]["p99_us"] for r in rates], marker="o", label=case)
        axes[1].plot(xs, [results[case][str(r)]["cpu_pct"] for r in rates], marker="o", label=case)
        axes[2].plot(xs, [results[case][str(r)]["irq_per_s"] for r in rates], marker="o", label=case)
    for ax, title in zip(axes, ("p99 latency (us)", "CPU % (queue CPUs)", "NIC queue interrupts/s")):
        ax.set_title(title)
        ax.set_xlabel("achieved qps")
        ax.grid(True, alpha=0.3)
    axes[0].legend()
    fig.suptitle("memcached in the lab guest (Linux 7.2, QEMU TCG): judge by ratios")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="2000,5000,8000", help="offered req/s, comma separated")
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--conns", type=int, default=1,
                    help="connections (1: one rx queue, one memcached worker, as the seed's NAPI steering)")
    ap.add_argument("--out", default=str(labvm.REPO / "build"))
    args = ap.parse_args(argv)
    rates = [int(r) for r in args.rates.split(",")]
    reason = labvm.missing(KERNEL)
    if reason:
        print("lab-bench: %s" % reason, file=sys.stderr)
        return 1
    results = {}
    with labvm.Guest(kernel=KERNEL, cmdline=BOOT_ARGS) as g:
        h = Host7(g)
        h.install_project()
        h.serve_memcached_on_nic()
        cpus = queue_cpus(h)
        for case in CASES:
            set_up(h, case)
            results[case] = {}
            for rate in rates:
                results[case][str(rate)] = r = measure(h, rate, args.seconds, cpus, args.conns)
                print("%-10s %6d req/s -> %s" % (case, rate, json.dumps(r)), file=sys.stderr)
        h.off()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = {"kernel": KERNEL, "kernel_info": labvm.kernel_info(KERNEL), "queue_cpus": cpus,
              "seconds": args.seconds, "conns": args.conns, "rates": rates, "cases": CASES, "results": results}
    (out / "lab-bench.json").write_text(json.dumps(report, indent=1) + "\n")
    text = table(results, rates)
    (out / "lab-bench.txt").write_text(text + "\n")
    print(text)
    s, f = results["suspend20"], results["fullbusy"]
    for rate in rates:
        a, b = s[str(rate)], f[str(rate)]
        if a["p99_us"] and b["p99_us"] and b["cpu_pct"]:
            print("offered %d: suspend20 p99 = %.2fx fullbusy's, CPU = %.2fx (target <= 1.5x, <= 0.7x)"
                  % (rate, a["p99_us"] / b["p99_us"], a["cpu_pct"] / b["cpu_pct"]))
    if plot(results, rates, out / "lab-bench.png"):
        print("wrote %s, %s" % (out / "lab-bench.json", out / "lab-bench.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
