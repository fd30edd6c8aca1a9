# SPDX-License-Identifier: GPL-2.0-or-later
"""Cells, table, verdicts, plots and the before/after spread table of a
bench run (the JSON the runner writes; `irqtune-bench report` and
`irqtune-bench compare` redo them from a saved one).

A cell is one (mode, offered load); its figures are the median and the
range (min..max) over its runs that did not fail - disturbed ones count
too (counts()).  The spread of a cell's p99 is (max - min) / median
over those runs, the measure docs/benchmarks.md uses.

The verdicts (verdict_records) judge each compared mode against the
busy polling that keeps polling (keepbusy; fullbusy in runs saved before
it) at each load up to 90 % of saturation: the series' claim is a p99
within 1.5x of busy polling's at no more than 0.7x its instructions (or
CPU time) per request, each half judged by the 90 % interval of its
paired per-round ratios (stats.py).  fullbusy, the series' configuration,
is judged against beside it.  Every run that did not fail counts; the
verdict with the disturbed runs left out is the sensitivity check, and a
half that differs between the two is undecided.  A 1 s slice whose p99
is far above both its neighbours' is named (slice_outliers).
"""

import io
import json
import statistics
import sys

from . import stats
from .findings import OUTLIER_FACTOR, auto_lines, control_lines, shown_text, slice_outliers, step_lines
from .files import refuse_unless_regular, write_file
from .guard import md
from .modes import CONTROLS, VERDICT_MODES

KEYS = ("qps", "avg_us", "p50_us", "p99_us", "cpu_pct_serving", "cpu_pct_guest", "ipr_serving",
        "ipr_guest", "irqs_per_request", "busy_share", "send_late_p99_us", "gen_cpu_pct",
        "serving_wait_pct", "serving_cpu_other_ms", "serving_core_other_pct", "main_loop_wait_pct",
        "cpu_us_per_request", "serving_cpu_us_per_request", "server_task_ms", "serving_core_busy_pct",
        "generator_core_other_pct", "worker_sleeps_per_kreq", "worker_preempted_per_kreq",
        "napi_thread_runs_per_kreq")
CLAIM_P99, CLAIM_COST = 1.5, 0.7
# the control of runs saved before keepbusy, whose records name none
BASELINE = "fullbusy"
JUDGED_SHARE = 0.9          # judged loads: at most this share of saturation
SPREAD_BOUND = 1.5          # issue 40: p99 spread at most this in 80 % of verdict cells


def summarise(runs, modes, loads):
    cells = {}
    for m in modes:
        for load in loads:
            mine = [r for r in runs if r["mode"] == m and r["offered"] == load]
            ok = [r for r in mine if counts(r)]
            cell = {"runs": len(ok), "failed": sum(1 for r in mine if r.get("failed")),
                    "disturbed": sum(1 for r in mine if r.get("disturbed") and not r.get("failed")),
                    "reruns": sum(r.get("reruns", 0) for r in mine)}
            for k in KEYS:
                vals = [r[k] for r in ok if r.get(k) is not None]
                if vals:
                    cell[k] = {"median": statistics.median(vals), "min": min(vals), "max": max(vals)}
            cells["%s@%d" % (m, load)] = cell
    return cells


def med(cell, key):
    return cell.get(key, {}).get("median")


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


# The tables' columns: (heading, key, scale, digits, what it is); a column
# no cell of the run has is left out (the lab counts instructions, the
# netns testbed the server's tasks' CPU time).
COLUMNS = (
    ("qps", "qps", 1, 0, "achieved requests/s"),
    ("p50 us", "p50_us", 1, 0, "median latency"),
    ("p99 us", "p99_us", 1, 0, "p99 latency, median [min..max] of the runs"),
    ("kinsn/req serv", "ipr_serving", 1e-3, 1, "instructions per request (thousands) on the serving CPUs"),
    ("kinsn/req all", "ipr_guest", 1e-3, 1, "the same on every CPU of the server"),
    ("CPU us/req", "cpu_us_per_request", 1, 1, "CPU time per answered request of the server's work "
                                               "(memcached and its NAPI thread), else of the serving CPUs"),
    ("serv CPU %", "cpu_pct_serving", 1, 0, "serving CPUs' busy time"),
    ("irq/req", "irqs_per_request", 1, 3, "queue interrupts per request"),
    ("busy %", "busy_share", 100, 0, "busy-polled share of the NIC's received packets"),
    ("late99", "send_late_p99_us", 1, 0, "the generator's p99 send lateness (us)"),
    ("gen %", "gen_cpu_pct", 1, 1, "the generator's CPU %"),
    ("wait %", "serving_wait_pct", 1, 1, "share of a run the serving threads were runnable but waited for a CPU"),
    ("loop %", "main_loop_wait_pct", 1, 1, "the same for QEMU's main loop (the lab)"),
    ("gen other %", "generator_core_other_pct", 1, 1, "the generator CPU's busy time not the generator's "
                                                    "nor the client NAPI's"),
)


def columns(cells):
    """The COLUMNS some cell of the run has a figure for."""
    return [c for c in COLUMNS if any(med(cell, c[1]) is not None for cell in cells.values())]


# the columns shown with their range: what the verdicts judge
RANGED = ("p99_us", "ipr_serving", "cpu_us_per_request")


def cell_figure(c, col, between):
    _, key, scale, digits, _ = col
    return fmt(c, key, scale, digits, between) if key in RANGED else one(c, key, scale, digits)


def table(cells, modes, loads):
    cols = columns(cells)
    widths = [max(len(h), 22 if k in RANGED else 7) for h, k, _, _, _ in cols]
    lines = []
    for load in loads:
        lines.append("offered %d req/s" % load)
        lines.append("%-10s " % "mode" + " ".join("%*s" % (w, c[0]) for w, c in zip(widths, cols)))
        for m in modes:
            c = cells["%s@%d" % (m, load)]
            if not c["runs"]:
                lines.append("%-10s no valid run (%d failed)" % (shown_text(m), c["failed"]))
                continue
            lines.append("%-10s " % shown_text(m) + " ".join("%*s" % (w, cell_figure(c, col, ".."))
                                                             for w, col in zip(widths, cols)))
        lines.append("")
    return "\n".join(lines)


def markdown(cells, modes, loads):
    """The per-load tables of docs/benchmarks.md (median [min-max])."""
    cols = columns(cells)
    lines = []
    for load in loads:
        lines += ["### Offered %d req/s" % load, "",
                  "| mode | runs | " + " | ".join(c[0] for c in cols) + " |", "|" + "---|" * (len(cols) + 2)]
        for m in modes:
            c = cells["%s@%d" % (m, load)]
            if not c["runs"]:
                lines.append("| %s | 0 (%d failed) |%s" % (md(m), c["failed"], " - |" * len(cols)))
                continue
            lines.append("| %s | %d | " % (md(m), c["runs"]) + " | ".join(cell_figure(c, col, "-") for col in cols)
                         + " |")
        lines.append("")
    return "\n".join(lines)


def judged_runs(report):
    """The runs verdicts and tables use: the pinned ones of a run that
    interleaved topologies, else all."""
    by_topology = split_topologies(report["runs"])
    return by_topology.get("pinned", report["runs"]) if len(by_topology) > 1 else report["runs"]


def counts(run):
    """Every run that did not fail counts, disturbed or not: a rule that
    leaves runs out can select by mode (issue 48: 11 of 24 suspend20 runs
    left out against none of fullbusy's)."""
    return not run.get("failed")


def undisturbed(run):
    """The sensitivity check's runs: those the disturbed rule keeps."""
    return not run.get("failed") and not run.get("disturbed")


def by_round(runs, mode, load, keep=counts):
    """{round: run} of a cell's runs that keep takes (default: that count)."""
    return {r.get("round", i): r for i, r in enumerate(runs)
            if r["mode"] == mode and r["offered"] == load and keep(r)}


def client_bound(report):
    """{load: highest generator CPU %} of loads where a run was client-bound."""
    out = {}
    for r in report["runs"]:
        if r.get("client_bound"):
            out[r["offered"]] = max(out.get(r["offered"], 0), r.get("gen_cpu_pct", 0))
    return out


def judged_loads(report):
    """The loads at or below JUDGED_SHARE of the saturation found (all of
    them when the loads were given, not searched) where no run was
    client-bound."""
    sat = (report.get("saturation") or {}).get("rate")
    bound = client_bound(report)
    return [x for x in report["loads"] if (not sat or x <= JUDGED_SHARE * sat) and x not in bound]


def _rounded(iv, digits=3):
    return None if iv is None else [round(x, digits) for x in iv]


def _round(x, digits=2):
    return None if x is None else round(x, digits)


def control(report):
    """The mode the claim is judged against: keepbusy, else fullbusy."""
    modes = report["settings"]["modes"]
    return next((c for c in CONTROLS if c in modes), None)


def verdict_records(report):
    """Per control (keepbusy, whose verdicts judge the claim, then fullbusy,
    the series' configuration, beside it), judged load and compared mode:
    {"against", "judged" (whether this control judges the claim), "load",
    "mode", "p99_ratio": [lo, median, hi], "insn_ratio" / "cpu_ratio",
    "cost_basis", "latency", "cost" (holds / fails / undecided), "why"
    {half: reason it is undecided}, "without_disturbed" (the same halves
    and ratios with the disturbed runs left out), "spread", "reruns",
    "pairs", "cost_pairs"}.  Every run counts; a half whose verdict
    changes when the disturbed runs are left out is undecided, naming
    that - unless too few pairs are left to judge without them.
    Without instruction counts the cost half is judged on CPU time per
    request ("cost_basis": "cpu_time")."""
    modes = report["settings"]["modes"]
    judged_against = control(report)
    runs = judged_runs(report)
    out = []
    for against in (c for c in CONTROLS if c in modes):
        for load in judged_loads(report):
            for m in (m for m in VERDICT_MODES if m in modes and m not in CONTROLS):
                rec = judge_cell(runs, m, against, load, counts)
                alone = judge_cell(runs, m, against, load, undisturbed)
                rec.update(against=against, judged=against == judged_against, why={},
                           without_disturbed={k: alone[k] for k in ("latency", "cost", "p99_ratio", "insn_ratio",
                                                                    "cpu_ratio", "pairs", "cost_pairs")})
                for half, pairs in (("latency", "pairs"), ("cost", "cost_pairs")):
                    # too few pairs left to judge is no evidence either way
                    # (stats.MIN_PAIRS): the check speaks when it could decide
                    if rec[half] not in (alone[half], "undecided") and alone[pairs] >= stats.MIN_PAIRS:
                        rec["why"][half] = "%s with every run, %s without the disturbed ones" % (rec[half],
                                                                                              alone[half])
                        rec[half] = "undecided"
                out.append(rec)
    return out


def judge_cell(runs, m, against, load, keep):
    """One verdict record of mode m against a control at load, over the
    runs keep takes."""
    mine, base = by_round(runs, m, load, keep), by_round(runs, against, load, keep)
    p99 = stats.paired_ratios(mine, base, "p99_us")
    cells = {x: [r for r in runs if r["mode"] == x and r["offered"] == load and keep(r)] for x in (m, against)}
    # without instruction counts (a server without a PMU, the netns
    # testbed) the cost half is judged on CPU time per request
    counted = any(r.get("ipr_serving") is not None for x in cells for r in cells[x])
    basis = "instructions" if counted else "cpu_time"
    cost = stats.paired_ratios(mine, base, "ipr_serving" if counted else "cpu_us_per_request")
    p_iv, c_iv = stats.interval(p99.values()), stats.interval(cost.values())
    return {
        "load": load, "mode": m, "p99_ratio": _rounded(p_iv),
        "insn_ratio": _rounded(c_iv) if basis == "instructions" else None,
        "cpu_ratio": _rounded(c_iv) if basis == "cpu_time" else None, "cost_basis": basis,
        "latency": stats.judge(p_iv, CLAIM_P99, len(p99)), "cost": stats.judge(c_iv, CLAIM_COST, len(cost)),
        "spread": {x: _round(stats.spread([r["p99_us"] for r in by_round(runs, x, load, keep).values()]), 2)
                   for x in (m, against)},
        "reruns": sum(r.get("reruns", 0) for x in cells for r in cells[x]),
        "pairs": len(p99), "cost_pairs": len(cost)}


def _iv(iv):
    return "no pair" if iv is None else "%.2fx [%.2f-%.2f]" % (iv[1], iv[0], iv[2])


def verdict_lines(report, records):
    """One line per record, and a line per load left unjudged."""
    lines = []
    sat = (report.get("saturation") or {}).get("rate")
    bound = client_bound(report)
    for load in report["loads"]:
        if load in bound:
            lines.append("offered %d: not judged (client-bound: a generator used %.0f %% of a client CPU; "
                         "more --generators)" % (load, bound[load]))
        elif load not in judged_loads(report):
            lines.append("offered %d: not judged (above %d %% of the saturation point, %d req/s)"
                         % (load, JUDGED_SHARE * 100, sat))
    for v in records:
        against = v.get("against", BASELINE)
        lines.append(
            "offered %d: %s against %s%s (%d paired rounds): p99 %s -> latency %s (target <= %.1fx); "
            "%s %s -> cost %s (target <= %.1fx); p99 spread %s; re-runs %d"
            % (v["load"], v["mode"], against, "" if v.get("judged", True) else " (the series' configuration)",
               v["pairs"], _iv(v["p99_ratio"]), v["latency"].upper(), CLAIM_P99,
               "instructions/request" if v["cost_basis"] == "instructions" else
               "instructions not counted; CPU time/request",
               _iv(v["insn_ratio"] if v["cost_basis"] == "instructions" else v["cpu_ratio"]), v["cost"].upper(),
               CLAIM_COST,
               ", ".join("%s %s" % (m, "-" if x is None else "%.2f" % x) for m, x in v["spread"].items()),
               v["reruns"]))
        alone = v.get("without_disturbed")
        if alone and alone["pairs"] != v["pairs"]:
            lines.append("    without the disturbed runs (%d pairs): p99 %s -> %s; cost %s -> %s%s"
                         % (alone["pairs"], _iv(alone["p99_ratio"]), alone["latency"],
                            _iv(alone["insn_ratio"] if v["cost_basis"] == "instructions" else alone["cpu_ratio"]),
                            alone["cost"], "".join("; %s undecided: %s" % kv for kv in sorted(v["why"].items()))))
    return lines


def spread_summary(records):
    """The verdict cells' p99 spread against SPREAD_BOUND: one line."""
    cells = {}
    for v in records:
        for m, x in v["spread"].items():
            cells[(m, v["load"])] = x
    values = [x for x in cells.values() if x is not None]
    if not values:
        return "p99 spread: no verdict cell with 2 or more runs"
    within = sum(1 for x in values if x <= SPREAD_BOUND)
    return ("p99 spread (max - min) / median over the %d verdict cells with 2+ runs: median %.2f, highest %.2f; "
            "%d of %d (%.0f %%) at most %.1f (the aim: 80 %%)"
            % (len(values), statistics.median(values), max(values), within, len(values),
               100.0 * within / len(values), SPREAD_BOUND))


WAITS = (("serving_wait_pct", "serving vCPU waited %.1f %%"), ("main_loop_wait_pct", "main loop waited %.1f %%"),
         ("serving_core_other_pct", "other work on the serving core %.1f %%"),
         ("send_late_p99_us", "generator late %.0f us at p99"))


def spread_causes(report, records):
    """For each verdict cell whose p99 spread exceeds SPREAD_BOUND: its
    slowest and fastest runs side by side - the round, the p99, the worst
    1 s slice of the window and what waited in that run - the measurement
    of what limits the spread."""
    runs = judged_runs(report)
    lines, seen = [], set()
    for v in records:
        for m, x in v["spread"].items():
            if x is None or x <= SPREAD_BOUND or (m, v["load"]) in seen:
                continue
            seen.add((m, v["load"]))
            cell = sorted(by_round(runs, m, v["load"]).values(), key=lambda r: r["p99_us"])
            parts = []
            for what, r in (("slowest", cell[-1]), ("fastest", cell[0])):
                sl = [y for y in r.get("slices_p99_us", []) if y is not None]
                worst = "worst 1 s slice %.0f us (second %d of %d)" % (
                    max(sl), r["slices_p99_us"].index(max(sl)) + 1, len(r["slices_p99_us"])) if sl else "no slices"
                waits = ", ".join(f % r[k] for k, f in WAITS if r.get(k) is not None)
                parts.append("%s round %s p99 %.0f us, %s; %s" % (what, r.get("round", "?"), r["p99_us"], worst,
                                                                 waits or "no waits measured"))
            lines.append("%s @ %d, spread %.2f: %s" % (m, v["load"], x, " | ".join(parts)))
    return lines


def reruns_table(report):
    """Markdown: per cell of the verdict modes, runs kept, re-runs, runs
    still disturbed, and what disturbed the re-run ones."""
    runs = judged_runs(report)
    modes = [m for m in report["settings"]["modes"] if m in VERDICT_MODES]
    lines = ["| load | mode | runs | re-runs | still disturbed | why re-run |", "|---|---|---|---|---|---|"]
    for load in report["loads"]:
        for m in modes:
            mine = [r for r in runs if r["mode"] == m and r["offered"] == load]
            why = {}
            for r in mine:
                for a in r.get("attempts", []):
                    for reason in a["reasons"]:
                        key = reason.split(" ", 1)[0]
                        why[key] = why.get(key, 0) + 1
            lines.append("| %d | %s | %d | %d | %d | %s |" % (
                load, m, sum(1 for r in mine if not r.get("failed") and not r.get("disturbed")),
                sum(r.get("reruns", 0) for r in mine), sum(1 for r in mine if r.get("disturbed")),
                ", ".join("%s x%d" % (md(k), n) for k, n in sorted(why.items())) or "-"))
    return "\n".join(lines) + "\n"


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
    shown_labels = [md(label) for label in labels]      # file names, in `compare A B`
    lines = ["| load | mode | %s p99 us | spread | %s p99 us | spread | %s wait %% | %s wait %% |"
             % (shown_labels[0], shown_labels[1], shown_labels[0], shown_labels[1]), "|" + "---|" * 8]
    spreads = {labels[0]: [], labels[1]: []}
    for load in loads:
        for m in modes:
            row = ["%d" % load, md(m)]
            for label, cells, runs in zip(labels, (cb, ca), (before, after)):
                c = cells["%s@%d" % (m, load)]
                sp = stats.spread([r.get("p99_us") for r in by_round(runs, m, load).values()])
                if sp is not None:
                    spreads[label].append(sp)
                row += [fmt(c, "p99_us", between="-") + " (%d)" % c["runs"], "-" if sp is None else "%.2f" % sp]
            row += [fmt(cb["%s@%d" % (m, load)], "serving_wait_pct", digits=1, between="-"),
                    fmt(ca["%s@%d" % (m, load)], "serving_wait_pct", digits=1, between="-")]
            lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    for label, shown_label in zip(labels, shown_labels):
        s = spreads[label]
        if s:
            lines.append("- %s: p99 spread (max - min) / median over %d cells with 2+ runs: median %.2f, "
                         "90th percentile %.2f, highest %.2f; %d of %d cells under 0.5"
                         % (shown_label, len(s), statistics.median(s), sorted(s)[int(0.9 * (len(s) - 1))],
                            max(s), sum(1 for x in s if x < 0.5), len(s)))
        else:
            lines.append("- %s: no cell with 2 or more runs" % shown_label)
    return "\n".join(lines) + "\n"


PLOTS = (("p99_us", "p99", "p99 latency (us), median of runs, bars min..max", 1.0),
         ("ipr_serving", "insn", "instructions per request, serving CPUs (thousands)", 1e-3),
         ("cpu_us_per_request", "cpu", "CPU time per request, serving CPUs (us)", 1.0))
STYLES = {"base": ("k", "o"), "defer10": ("tab:blue", "v"), "defer20": ("tab:blue", "^"),
          "defer50": ("tab:blue", "<"), "defer200": ("tab:blue", ">"), "napibusy": ("tab:orange", "s"),
          "fullbusy": ("tab:red", "D"), "suspend0": ("tab:green", "x"), "suspend10": ("tab:green", "v"),
          "suspend20": ("tab:green", "o"), "suspend50": ("tab:green", "^"), "suspend200": ("tab:olive", "s"),
          "recommend": ("tab:purple", "P"), "auto": ("tab:brown", "*")}


def plot_text(value):
    """shown_text() for a plot's title or legend: a "$" would start matplotlib's
    mathtext (and a malformed one stop the plot)."""
    return shown_text(value).replace("$", r"\$")


def result_paths(out, name):
    """Every file write_report may write."""
    return [out / ("%s.%s" % (name, ext)) for ext in ("json", "txt", "md")] + \
        [out / ("%s-%s.png" % (name, suffix)) for _, suffix, _, _ in PLOTS]


def check_results(out, name):
    """files.NotRegularFile when a path write_report writes holds something
    else than a regular file: refused before anything is written (or run)."""
    for path in result_paths(out, name):
        refuse_unless_regular(path)


def plotted(cells):
    """The suffixes of the plots a run has data for: p99 and the cost the
    verdicts judge - instructions where counted, else CPU time."""
    have = {suffix for key, suffix, _, _ in PLOTS if any(med(c, key) for c in cells.values())}
    if "insn" in have:
        have.discard("cpu")
    return [suffix for _, suffix, _, _ in PLOTS if suffix in have]


def plot(cells, modes, loads, out, name, title):
    """One PNG per plotted() figure."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plots (python3-matplotlib)", file=sys.stderr)
        return []
    written = []
    for key, suffix, ytitle, scale in PLOTS:
        if suffix not in plotted(cells):
            continue
        fig, ax = plt.subplots(figsize=(9, 5.5))
        for m in modes:
            color, marker = STYLES.get(m, (None, "o"))
            xs, ys, lo, hi = [], [], [], []
            for load in loads:
                c = cells["%s@%d" % (m, load)]
                if med(c, key) is None:
                    continue
                xs.append(load)
                ys.append(med(c, key) * scale)
                lo.append((c[key]["median"] - c[key]["min"]) * scale)
                hi.append((c[key]["max"] - c[key]["median"]) * scale)
            ax.errorbar(xs, ys, yerr=[lo, hi], label=plot_text(m), color=color, marker=marker,
                        linestyle="--" if m.startswith("defer") else "-", capsize=2, alpha=0.85)
        ax.set_xlabel("offered load (req/s)")
        ax.set_title(ytitle)
        if key == "p99_us":
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        ax.legend(ncol=2, fontsize=8)
        fig.suptitle(plot_text(title), fontsize=10)
        fig.tight_layout()
        path = out / ("%s-%s.png" % (name, suffix))
        png = io.BytesIO()
        try:
            fig.savefig(png, format="png", dpi=100, metadata={"Software": None})     # the same bytes for the same run
        finally:
            plt.close(fig)
        write_file(path, png.getvalue())
        written.append(path)
    return written


SATURATED_BY = {"server": "the server's limit", "client": "client-bound: the generators ran out of CPU first"}


def saturation_text(sat):
    """The saturation point and which side ran out first."""
    if not sat:
        return "not searched"
    side = SATURATED_BY.get(sat.get("side"), "not reached up to --probe-max") if "side" in sat else None
    return "%s req/s%s" % (shown_text(sat["rate"]), " (%s)" % side if side else "")


def header(report):
    args, sat, tb = report["settings"], report.get("saturation"), report.get("testbed", {})
    cols = columns(summarise(judged_runs(report), args["modes"], report["loads"]) if report.get("runs") else {})
    return ("memcached on %s; %d run(s) per cell, %.1f s windows, %d connection(s); saturation %s; "
            "full run %s s\ncolumns: %s"
            % (shown_text(tb.get("summary", "?")), args["repeats"], args["seconds"], args["conns"],
               saturation_text(sat), shown_text(report.get("seconds_total", "?")),
               "; ".join("%s: %s" % (h, what) for h, _, _, _, what in cols)))


def derived(report):
    """What a run's report shows, derived from its runs: cells, verdict
    records and lines (the same for `run`, `report` and `docs`)."""
    modes, loads = report["settings"]["modes"], report["loads"]
    cells = summarise(judged_runs(report), modes, loads)
    records = verdict_records(report)
    return cells, records, verdict_lines(report, records)


def markdown_report(report):
    """The markdown of a run: per-load tables, verdicts, spread, re-runs,
    auto's values, and (topologies interleaved) the before/after spread."""
    modes, loads = report["settings"]["modes"], report["loads"]
    cells, records, lines = derived(report)
    doc = [markdown(cells, modes, loads)]
    if lines:
        doc += ["Verdicts (`irqtune-bench report`; intervals: 90 %, paired by round):", ""]
        doc += ["- " + v for v in lines] + ["", "- " + spread_summary(records), ""]
        causes = spread_causes(report, records)
        if causes:
            doc += ["What the cells above the spread bound had in their slowest and fastest runs:", ""]
            doc += ["- " + c for c in causes] + [""]
        doc += ["Re-runs (the rule: %s):" % ", ".join("%s > %s" % (md(k), md(v))
                                                      for k, v in report.get("rule", {}).items()), "",
                reruns_table(report)]
    measured = measured_lines(report)
    if measured:
        doc += ["```", *measured, "```", ""]
    by_topology = split_topologies(report["runs"])
    if {"shared", "pinned"} <= set(by_topology):
        doc += [compare(by_topology["shared"], by_topology["pinned"], modes, loads, labels=("shared", "pinned"))]
    return "\n".join(doc)


def write_report(report, out, name):
    """Table, verdicts, plots (and, for a run that interleaved topologies,
    the before/after spread table) of a run; returns the text printed.
    files.NotRegularFile before anything is written when a result's path
    holds something else than a regular file."""
    check_results(out, name)
    modes, loads = report["settings"]["modes"], report["loads"]
    by_topology = split_topologies(report["runs"])
    cells, records, lines = derived(report)
    parts = [header(report), ""] + ["who sets what:"] + \
        ["  %s: %s" % (shown_text(k), shown_text(v)) for k, v in report.get("who_sets", {}).items()]
    for rec in recommends(report):
        parts += recommend_lines(rec)
    if report.get("placement"):
        parts += ["", "where the threads ran (%s):" % shown_text(report["placement"]["what"])] + \
            ["  " + shown_text(line) for line in report["placement"]["lines"]]
    if len(by_topology) > 1:
        parts += ["", "table and verdicts: topology pinned; the runs of topology shared are in the JSON"]
    parts += ["", table(cells, modes, loads)] + lines
    if records:
        parts += ["", spread_summary(records)] + spread_causes(report, records) + ["", reruns_table(report)]
    parts += [""] + measured_lines(report)
    if {"shared", "pinned"} <= set(by_topology):
        parts += ["", "p99 spread between the runs of each cell, topology shared (before) and pinned "
                      "(after), interleaved in one run:", "",
                  compare(by_topology["shared"], by_topology["pinned"], modes, loads, labels=("shared", "pinned"))]
    write_file(out / ("%s.json" % name), json.dumps(report, indent=1) + "\n")
    full = "\n".join(parts)
    write_file(out / ("%s.txt" % name), full + "\n")
    write_file(out / ("%s.md" % name), markdown_report(report))
    print(full)
    title = tb_title(report) + (": the pinned runs" if len(by_topology) > 1 else "")
    for p in plot(cells, modes, loads, out, name, title):
        print("wrote %s" % shown_text(p))
    print("wrote %s" % ", ".join(shown_text(out / ("%s.%s" % (name, ext))) for ext in ("json", "txt", "md")))
    return full


def measured_lines(report):
    """The controls, the slice outliers, auto's values and the step test
    (findings.py), as lines of a fenced block or of the text report."""
    runs = judged_runs(report)
    modes, loads = report["settings"]["modes"], report["loads"]
    out = control_lines(runs, modes, loads)
    outliers = slice_outliers([r for r in runs if not r.get("failed")])
    if outliers:
        out += ["1 s slices whose p99 is over %gx both neighbours':" % OUTLIER_FACTOR] + ["  " + x for x in outliers]
    return out + auto_lines(report, runs) + step_lines(report.get("step"))


def recommends(report):
    """recommend's doctor runs: one per load (a list), or one (older runs)."""
    rec = report.get("recommend")
    return rec if isinstance(rec, list) else [rec] if rec else []


def recommend_lines(rec, escape=shown_text):
    """What the recommend mode ran with, and the doctor's figures for it;
    escape: shown_text for the report's text, guard.md for markdown."""
    if not rec:
        return []
    if rec.get("failed"):
        return ["", "recommend: no values (%s, at %d req/s): %s"
                % (escape(rec["doctor"]), rec["offered"], escape(rec["failed"]))]
    v, m = rec["values"], rec["measured"]
    return ["", "recommend: `%s` at %d req/s in suspend20: defer_hard_irqs %d, gro_flush_timeout %d ns, "
                "irq_suspend_timeout %d ns" % (escape(rec["doctor"]), rec["offered"], v["defer_hard_irqs"],
                                               v["gro_flush_timeout_ns"], v["irq_suspend_timeout_ns"]),
            "  measured: %d busy periods; per event p50/p99/max %s/%s/%s ns; per batch p99/max %s/%s ns, "
            "up to %s event(s)" % (m["busy_periods"], *(escape(x) for x in (
                m["event_ns"]["p50"], m["event_ns"]["p99"], m["event_ns"]["max"], m["batch_ns"]["p99"],
                m["batch_ns"]["max"], m["batch_events"]["max"])))]


def tb_title(report):
    return "memcached on %s" % shown_text(report.get("testbed", {}).get("summary", "?"))
