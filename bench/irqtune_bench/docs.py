# SPDX-License-Identifier: GPL-2.0-or-later
"""`irqtune-bench docs RUN.json[.xz] FILE.md --images DIR`: the
run-derived part of docs/benchmarks.md, regenerated from the committed
run.  Everything between the BEGIN and END markers is replaced by what
the run's JSON gives - its facts, the per-load tables, the verdicts with
their intervals, the spread and re-runs, auto's values - and the plots
it shows are written into DIR.  Text outside the markers is the docs'
own; `make bench-docs` runs this, and tests/unit/bench/test_bench_docs.py
regenerates and compares.
"""

import statistics
import sys

from . import report as rep
from .files import read_regular, refuse_unless_regular, results_dir, write_file
from .guard import BadArgument, md, shown

BEGIN = "<!-- irqtune-bench docs: generated from %s - edit the run, not this -->"
END = "<!-- irqtune-bench docs: end -->"


def _median_max(runs, key):
    values = [r[key] for r in runs if r.get(key) is not None]
    if not values:
        return None
    return statistics.median(values), max(values)


VERDICT_RUN = {"repeats": 8, "seconds": 20, "warmup": 2}


def kind(report):
    """"a verdict run" when the run meets the rule's minimum rounds, window
    and warm-up (issue 40), else what it is short of."""
    short = ["%s %s < %s" % (k, md(report["settings"].get(k)), v) for k, v in VERDICT_RUN.items()
             if not report["settings"].get(k, 0) >= v]
    if not short:
        return "a verdict run"
    return ("a validation run, not a verdict run (%s: its verdicts cannot decide; it shows the machinery "
            "on the real guest and what disturbs it)" % ", ".join(short))


def facts(report):
    """The run's circumstances, as bullet lines."""
    s, tb = report["settings"], report.get("testbed", {})
    runs = report["runs"]
    kept = [r for r in runs if not r.get("failed")]
    lines = ["- Run: %s, started %s; `%s`." % (kind(report), md(report.get("started", "?")),
                                                md(report.get("command", "command not recorded")))]
    machine = tb.get("machine")
    if machine:
        lines.append("- Host: %s, %s CPUs, %s GiB, kernel %s, %s." % tuple(md(machine.get(key, "?")) for key in (
            "host_cpu", "host_cpus", "host_mem_gib", "host_kernel", "qemu")))
    local = tb.get("facts", {})
    if local.get("serving_cpu") is not None:
        lines.append("- Host: this machine's own kernel %s, CPUs %s: memcached and the server NAPI's thread on "
                     "CPU %s, the generator and the client NAPI's thread on CPU %s (no emulation)."
                     % (md(local.get("kernel", "?")), md(",".join(str(c) for c in local.get("cpus", []))),
                        md(local["serving_cpu"]), md(local.get("generator_cpu", "?"))))
    guest = tb.get("guest")
    if guest:
        lines.append("- Guest: Linux %s, %d vCPUs, `-cpu %s`, %d-queue virtio-net, boot arguments `%s`." % (
            md(tb.get("kernel", "?")), guest["vcpus"], md(guest["cpu_model"]), guest["nic_queues"],
            md(guest["cmdline_extra"])))
    lines.append("- %d runs counted (%s; %d round(s), %.0f s windows after %.1f s of warm-up, %d connection(s)), "
                 "%d failed; %d of those counted still disturbed at the re-run bound (only the sensitivity check "
                 "leaves them out), %d re-runs in all; the whole bench %s s."
                 % (len(kept), " x ".join(
                     ["%d modes" % len(s["modes"]), "%d loads" % len(report["loads"])]), s["repeats"], s["seconds"],
                    s["warmup"], s["conns"], len(runs) - len(kept), sum(1 for r in kept if r.get("disturbed")),
                    sum(r.get("reruns", 0) for r in runs), report.get("seconds_total", "?")))
    sat = report.get("saturation")
    if sat:
        lines.append("- Saturation search (base): %s -> **%d req/s**; loads %s req/s." % (
            ", ".join("%d %s" % (p["offered"], "kept up" if p["kept_up"] else "saturated") for p in sat["probes"]),
            sat["rate"], ", ".join(str(x) for x in report["loads"])))
    for key, what in (("send_late_p99_us", "generator p99 send lateness (us)"),
                      ("serving_wait_pct", "serving vCPU's wait for a host core (% of a run)"),
                      ("main_loop_wait_pct", "QEMU main loop's wait for a host core (% of a run)"),
                      ("generator_core_other_pct", "generator CPU's other work (% of a run)"),
                      ("serving_core_other_pct", "serving CPU's other work (% of a run)")):
        mm = _median_max(kept, key)
        if mm:
            lines.append("- Runs' %s (disturbed ones included): median %.1f, at most %.1f." % (what, mm[0], mm[1]))
    return lines


def generated(report, source, images_rel):
    """The markdown between the markers."""
    lines = [BEGIN % md(source), ""] + facts(report) + [""]
    for rec in rep.recommends(report):
        lines += rep.recommend_lines(rec, escape=md)[1:]
    lines += ["", rep.markdown_report(report)]
    cells, _, _ = rep.derived(report)
    plots = rep.plotted(cells)
    for suffix, what in (("p99", "p99 latency against offered load"),
                         ("insn", "instructions per request on the serving vCPU against offered load"),
                         ("cpu", "CPU time of the server's work per request against offered load")):
        if suffix in plots:
            lines += ["![%s, per mode (median of runs, bars min-max)](%s/%s-%s.png)" % (
                what, md(images_rel), plot_name(source), suffix), ""]
    if not plots:
        lines += ["No plot: no cell has a run that counts.", ""]
    return "\n".join(lines) + "\n" + END


def plot_name(source):
    """The plots' base name of the run a region is generated from:
    data/lab-bench.json.xz -> lab-bench-verdicts."""
    return "%s-verdicts" % source.rsplit("/", 1)[-1].split(".", 1)[0]


def find_region(text, run_name):
    """(head, source, tail) around the generated region of the run named
    run_name (its marker names it: data/NAME); the only region when no
    marker names it and there is one.  None when there is no such region."""
    opening = "<!-- irqtune-bench docs: generated from "
    starts = [i for i in range(len(text)) if text.startswith(opening, i)]
    regions = []
    for i in starts:
        source = text[i + len(opening):].split(" ", 1)[0]
        end = text.find(END, i)
        if end >= 0:
            regions.append((i, source, end + len(END)))
    named = [r for r in regions if run_name and r[1].rsplit("/", 1)[-1] == run_name]
    chosen = named or (regions if len(regions) == 1 else [])
    if len(chosen) != 1:
        return None
    i, source, end = chosen[0]
    return text[:i], source, text[end:]


def regenerate(report, markdown, images, source=None, run_name=None):
    """Rewrite the generated part of markdown that run_name's marker names
    (the only one when none does) from report, and write its plots; exit
    code (1 when there is no such part).  BadArgument when markdown is not
    UTF-8 text; files.NotRegularFile, before anything is written, when
    markdown or a plot's path is not a regular file."""
    try:
        text = read_regular(markdown).decode()
    except UnicodeDecodeError as err:
        raise BadArgument("%s: not UTF-8 text (byte %d)" % (shown(markdown, 300), err.start)) from None
    found = find_region(text, run_name)
    if found is None:
        print("irqtune-bench docs: %s has no generated part for %s (markers %r ... %r)"
              % (shown(markdown, 300), shown(run_name or "the run", 300), BEGIN, END), file=sys.stderr)
        return 1
    head, marked, tail = found
    source = source or marked
    name = plot_name(source)
    rel = images.resolve().relative_to(markdown.resolve().parent) if images.resolve().is_relative_to(
        markdown.resolve().parent) else images
    for path in [markdown] + [images / ("%s-%s.png" % (name, suffix)) for _, suffix, _, _ in rep.PLOTS]:
        refuse_unless_regular(path)
    write_file(markdown, head + generated(report, source, rel) + tail)
    cells, _, _ = rep.derived(report)
    rep.plot(cells, report["settings"]["modes"], report["loads"], results_dir(images), name,
             rep.tb_title(report))
    return 0
