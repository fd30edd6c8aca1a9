# SPDX-License-Identifier: GPL-2.0-or-later
"""Cells, table, verdicts, plots and the before/after spread table of a
bench run (the JSON the runner writes; `irqtune-bench report` and
`irqtune-bench compare` redo them from a saved one).

A cell is one (mode, offered load); its figures are the median and the
range (min..max) over its runs.  The spread of a cell's p99 is
(max - min) / median over its runs, the measure docs/benchmarks.md uses.
"""

import json
import statistics
import sys

KEYS = ("qps", "avg_us", "p50_us", "p99_us", "cpu_pct_serving", "cpu_pct_guest", "ipr_serving",
        "ipr_guest", "irqs_per_request", "busy_share", "send_late_p99_us", "gen_cpu_pct",
        "serving_wait_pct", "serving_cpu_other_ms")
CLAIM_P99, CLAIM_COST = 1.5, 0.7
DEFERS = ("defer10", "defer20", "defer50", "defer200")


def summarise(runs, modes, loads):
    cells = {}
    for m in modes:
        for load in loads:
            mine = [r for r in runs if r["mode"] == m and r["offered"] == load]
            ok = [r for r in mine if not r.get("failed")]
            cell = {"runs": len(ok), "failed": len(mine) - len(ok)}
            for k in KEYS:
                vals = [r[k] for r in ok if r.get(k) is not None]
                if vals:
                    cell[k] = {"median": statistics.median(vals), "min": min(vals), "max": max(vals)}
            cells["%s@%d" % (m, load)] = cell
    return cells


def med(cell, key):
    return cell.get(key, {}).get("median")


def spread(cell, key="p99_us"):
    """(max - min) / median of a cell's key over its runs; None without runs."""
    v = cell.get(key)
    if not v or not v["median"]:
        return None
    return (v["max"] - v["min"]) / v["median"]


def fmt(cell, key, scale=1.0, digits=0, between=".."):
    """"median [min..max]" of a cell's key, "-" when it has none."""
    v = cell.get(key)
    if not v:
        return "-"
    f = "%%.%df" % digits
    return (f + " [" + f + between + f + "]") % (v["median"] * scale, v["min"] * scale, v["max"] * scale)


def one(c, key, scale=1.0, digits=0):
    v = med(c, key)
    return "-" if v is None else ("%%.%df" % digits) % (v * scale)


def table(cells, modes, loads):
    lines = []
    head = "%-10s %7s %7s %26s %24s %17s %15s %6s %6s %7s %6s %6s" % (
        "mode", "qps", "p50 us", "p99 us med [min..max]", "kinsn/req serving", "kinsn/req all",
        "CPU% serv/all", "irq/r", "busy%", "late99", "gen%", "wait%")
    for load in loads:
        lines.append("offered %d req/s" % load)
        lines.append(head)
        for m in modes:
            c = cells["%s@%d" % (m, load)]
            if not c["runs"]:
                lines.append("%-10s no valid run (%d failed)" % (m, c["failed"]))
                continue
            lines.append("%-10s %7s %7s %26s %24s %17s %15s %6s %6s %7s %6s %6s" % (
                m, one(c, "qps"), one(c, "p50_us"), fmt(c, "p99_us"), fmt(c, "ipr_serving", 1e-3, 1),
                one(c, "ipr_guest", 1e-3, 1),
                "%s/%s" % (one(c, "cpu_pct_serving"), one(c, "cpu_pct_guest")),
                one(c, "irqs_per_request", digits=3), one(c, "busy_share", 100), one(c, "send_late_p99_us"),
                one(c, "gen_cpu_pct", digits=1), one(c, "serving_wait_pct", digits=1)))
        lines.append("")
    return "\n".join(lines)


def markdown(cells, modes, loads):
    """The per-load tables of docs/benchmarks.md (median [min-max])."""
    lines = []
    for load in loads:
        lines += ["### Offered %d req/s" % load, "",
                  "| mode | runs | qps | p50 us | p99 us | kinsn/req serving | kinsn/req all | CPU % "
                  "| irq/req | busy % | late p99 | gen % | wait % |", "|" + "---|" * 13]
        for m in modes:
            c = cells["%s@%d" % (m, load)]
            if not c["runs"]:
                lines.append("| %s | 0 (%d failed) |%s" % (m, c["failed"], " - |" * 11))
                continue
            lines.append("| %s | %d | %s | %s | %s | %s | %s | %s/%s | %s | %s | %s | %s | %s |" % (
                m, c["runs"], one(c, "qps"), one(c, "p50_us"), fmt(c, "p99_us", between="-"),
                fmt(c, "ipr_serving", 1e-3, 1, between="-"), one(c, "ipr_guest", 1e-3, 1),
                one(c, "cpu_pct_serving"), one(c, "cpu_pct_guest"), one(c, "irqs_per_request", digits=2),
                one(c, "busy_share", 100), one(c, "send_late_p99_us"), one(c, "gen_cpu_pct", digits=1),
                one(c, "serving_wait_pct", digits=1)))
        lines.append("")
    return "\n".join(lines)


def ratio_range(a, b, key):
    """(median ratio, lowest, highest) of a's key over b's across their runs."""
    va, vb = a[key], b[key]
    return va["median"] / vb["median"], va["min"] / vb["max"], va["max"] / vb["min"]


def decided(lo, hi, target):
    """True/False when every pairing of the runs agrees on ratio <= target,
    None when the runs straddle it."""
    if hi <= target:
        return True
    if lo > target:
        return False
    return None


def noise(cells, load, modes=("suspend20", "fullbusy")):
    """The highest generator lateness and serving wait of these cells' runs."""
    late = [cells["%s@%d" % (m, load)].get("send_late_p99_us", {}).get("max") for m in modes]
    wait = [cells["%s@%d" % (m, load)].get("serving_wait_pct", {}).get("max") for m in modes]
    late, wait = [x for x in late if x is not None], [x for x in wait if x is not None]
    parts = []
    if late:
        parts.append("generator late p99 up to %.0f us" % max(late))
    if wait:
        parts.append("serving thread waited up to %.1f %% of a run for a CPU" % max(wait))
    return ", ".join(parts)


def verdicts(cells, loads):
    """The series' claim per load: suspend20's p99 within 1.5x of fullbusy's
    at no more than 0.7x its instructions per request.  A half is decided
    when every pairing of the two modes' runs gives the same answer."""
    out = []
    for load in loads:
        s, f = cells["suspend20@%d" % load], cells["fullbusy@%d" % load]
        if not all(med(c, k) for c in (s, f) for k in ("p99_us", "ipr_serving")):
            if med(s, "p99_us") and med(f, "p99_us"):
                p, plo, phi = ratio_range(s, f, "p99_us")
                out.append("offered %d: suspend20 p99 %.2fx fullbusy's (runs %.2f-%.2fx); no "
                           "instruction counts: the cost half not judged" % (load, p, plo, phi))
            else:
                out.append("offered %d: suspend20 or fullbusy has no valid run - no verdict" % load)
            continue
        p, plo, phi = ratio_range(s, f, "p99_us")
        c, clo, chi = ratio_range(s, f, "ipr_serving")
        lat, cost = decided(plo, phi, CLAIM_P99), decided(clo, chi, CLAIM_COST)
        holds = p <= CLAIM_P99 and c <= CLAIM_COST
        if lat is False or cost is False:
            verdict = "does NOT hold"
        elif lat and cost:
            verdict = "HOLDS"
        else:
            verdict = "NOT DECIDED by these runs (medians: %s; %s)" % (
                "holds" if holds else "does not hold",
                " and ".join(h for h, d in (("the latency half", lat), ("the cost half", cost))
                             if d is None) + " straddles its target")
        line = ("offered %d: suspend20 p99 %.2fx fullbusy's (target <= %.1fx; runs %.2f-%.2fx) at %.2fx "
                "its instructions per request on the serving CPUs (target <= %.1fx; runs %.2f-%.2fx; "
                "whole server %.2fx): %s"
                % (load, p, CLAIM_P99, plo, phi, c, CLAIM_COST, clo, chi,
                   med(s, "ipr_guest") / med(f, "ipr_guest") if med(f, "ipr_guest") else float("nan"),
                   verdict))
        defers = [(med(cells["%s@%d" % (d, load)], "p99_us"), d) for d in DEFERS
                  if med(cells.get("%s@%d" % (d, load), {}), "p99_us")]
        if defers:
            best_p99, best = min(defers)
            bc = cells["%s@%d" % (best, load)]
            line += "; against the best defer mode (%s): p99 %.2fx" % (best, med(s, "p99_us") / best_p99)
            if med(bc, "ipr_serving"):
                line += ", instructions/request %.2fx" % (med(s, "ipr_serving") / med(bc, "ipr_serving"))
        n = noise(cells, load)
        if n:
            line += " [%s]" % n
        out.append(line)
    return out


def split_topologies(runs):
    """{topology: runs} of a run that interleaved topologies."""
    out = {}
    for r in runs:
        out.setdefault(r.get("topology", "-"), []).append(r)
    return out


def compare(before, after, modes, loads, labels=("before", "after")):
    """Markdown: per mode and load, the p99 median [min-max] and spread of
    two sets of runs side by side; then the spread over all cells."""
    cb, ca = summarise(before, modes, loads), summarise(after, modes, loads)
    lines = ["| load | mode | %s p99 us | spread | %s p99 us | spread | %s wait %% | %s wait %% |"
             % (labels[0], labels[1], labels[0], labels[1]), "|" + "---|" * 8]
    spreads = {labels[0]: [], labels[1]: []}
    for load in loads:
        for m in modes:
            row = ["%d" % load, m]
            for label, cells in zip(labels, (cb, ca)):
                c = cells["%s@%d" % (m, load)]
                sp = spread(c)
                if sp is not None and c["runs"] > 1:
                    spreads[label].append(sp)
                row += [fmt(c, "p99_us", between="-") + " (%d)" % c["runs"],
                        "-" if sp is None or c["runs"] < 2 else "%.2f" % sp]
            row += [fmt(cb["%s@%d" % (m, load)], "serving_wait_pct", digits=1, between="-"),
                    fmt(ca["%s@%d" % (m, load)], "serving_wait_pct", digits=1, between="-")]
            lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    for label in labels:
        s = spreads[label]
        if s:
            lines.append("- %s: p99 spread (max - min) / median over %d cells with 2+ runs: median %.2f, "
                         "90th percentile %.2f, highest %.2f; %d of %d cells under 0.5"
                         % (label, len(s), statistics.median(s), sorted(s)[int(0.9 * (len(s) - 1))],
                            max(s), sum(1 for x in s if x < 0.5), len(s)))
        else:
            lines.append("- %s: no cell with 2 or more runs" % label)
    return "\n".join(lines) + "\n"


def plot(cells, modes, loads, out, name, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plots (python3-matplotlib)", file=sys.stderr)
        return []
    written = []
    styles = {"base": ("k", "o"), "defer10": ("tab:blue", "v"), "defer20": ("tab:blue", "^"),
              "defer50": ("tab:blue", "<"), "defer200": ("tab:blue", ">"), "napibusy": ("tab:orange", "s"),
              "fullbusy": ("tab:red", "D"), "suspend0": ("tab:green", "x"), "suspend10": ("tab:green", "v"),
              "suspend20": ("tab:green", "o"), "suspend50": ("tab:green", "^")}
    for key, suffix, ytitle, scale in (
            ("p99_us", "p99", "p99 latency (us), median of runs, bars min..max", 1.0),
            ("ipr_serving", "insn", "instructions per request, serving CPUs (thousands)", 1e-3)):
        if not any(med(c, key) for c in cells.values()):
            continue
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
            ax.errorbar(xs, ys, yerr=[lo, hi], label=m, color=color, marker=marker,
                        linestyle="--" if m.startswith("defer") else "-", capsize=2, alpha=0.85)
        ax.set_xlabel("offered load (req/s)")
        ax.set_title(ytitle)
        if key == "p99_us":
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        ax.legend(ncol=2, fontsize=8)
        fig.suptitle(title, fontsize=10)
        fig.tight_layout()
        path = out / ("%s-%s.png" % (name, suffix))
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written


def header(report):
    args, sat, tb = report["settings"], report.get("saturation"), report.get("testbed", {})
    return ("memcached on %s; %d run(s) per cell, %.1f s windows, %d connection(s); saturation %s req/s; "
            "full run %s s\n"
            "columns: achieved qps; p50 and p99 latency (us); instructions per request (thousands) on the "
            "serving CPUs (memcached's and its rx queues') and the whole server (%s); server CPU %% "
            "serving/all; queue interrupts per request; busy-polled share of rx packets (%%); the "
            "generator's p99 send lateness (us) and CPU %%; wait: %% of a run the serving thread (%s) "
            "was runnable but waited for a CPU"
            % (tb.get("summary", "?"), args["repeats"], args["seconds"], args["conns"],
               sat["rate"] if sat else "not searched", report.get("seconds_total", "?"),
               tb.get("insns", "not counted"), tb.get("serving_thread", "memcached's threads")))


def write_report(report, out, name):
    """Table, verdicts, plots (and, for a run that interleaved topologies,
    the before/after spread table) of a run; returns the text printed."""
    runs, loads, args = report["runs"], report["loads"], report["settings"]
    modes = args["modes"]
    by_topology = split_topologies(runs)
    main_runs = by_topology.get("pinned", runs) if len(by_topology) > 1 else runs
    cells = summarise(main_runs, modes, loads)
    report["cells"] = cells
    text = table(cells, modes, loads)
    verdict = verdicts(cells, loads) if "suspend20" in modes and "fullbusy" in modes else []
    report["verdicts"] = verdict
    parts = [header(report), ""] + ["who sets what:"] + \
        ["  %s: %s" % kv for kv in report["who_sets"].items()]
    parts += recommend_lines(report.get("recommend"))
    if report.get("placement"):
        parts += ["", "where the threads ran (%s):" % report["placement"]["what"]] + \
            ["  " + line for line in report["placement"]["lines"]]
    if len(by_topology) > 1:
        parts += ["", "table and verdicts: topology pinned; the runs of topology shared are in the JSON"]
    parts += ["", text] + verdict
    md = markdown(cells, modes, loads) + "\n".join(["Verdicts (printed by the bench):", ""] +
                                                   ["- " + v for v in verdict]) + "\n"
    if len(by_topology) > 1 and {"shared", "pinned"} <= set(by_topology):
        cmp = compare(by_topology["shared"], by_topology["pinned"], modes, loads,
                      labels=("shared", "pinned"))
        report["spread_table"] = cmp
        parts += ["", "p99 spread between the runs of each cell, topology shared (before) and pinned "
                      "(after), interleaved in one run:", "", cmp]
        md += "\n" + cmp
    (out / ("%s.json" % name)).write_text(json.dumps(report, indent=1) + "\n")
    full = "\n".join(parts)
    (out / ("%s.txt" % name)).write_text(full + "\n")
    (out / ("%s.md" % name)).write_text(md)
    print(full)
    title = tb_title(report) + (": the pinned runs" if len(by_topology) > 1 else "")
    for p in plot(cells, modes, loads, out, name, title):
        print("wrote %s" % p)
    print("wrote %s" % ", ".join(str(out / ("%s.%s" % (name, ext))) for ext in ("json", "txt", "md")))
    return full


def recommend_lines(rec):
    """What the recommend mode ran with, and the doctor's figures for it."""
    if not rec:
        return []
    if rec.get("failed"):
        return ["", "recommend: no values (%s, at %d req/s): %s" % (rec["doctor"], rec["offered"], rec["failed"])]
    v, m = rec["values"], rec["measured"]
    return ["", "recommend: `%s` at %d req/s in suspend20: defer_hard_irqs %d, gro_flush_timeout %d ns, "
                "irq_suspend_timeout %d ns" % (rec["doctor"], rec["offered"], v["defer_hard_irqs"],
                                               v["gro_flush_timeout_ns"], v["irq_suspend_timeout_ns"]),
            "  measured: %d busy periods; per event p50/p99/max %s/%s/%s ns; per batch p99/max %s/%s ns, "
            "up to %s event(s)" % (m["busy_periods"], m["event_ns"]["p50"], m["event_ns"]["p99"],
                                 m["event_ns"]["max"], m["batch_ns"]["p99"], m["batch_ns"]["max"],
                                 m["batch_events"]["max"])]


def tb_title(report):
    return "memcached on %s" % report.get("testbed", {}).get("summary", "?")
