# SPDX-License-Identifier: GPL-2.0-or-later
"""What a run's report says beside its table and verdicts, each derived
from the saved runs alone:

  control_lines    the busy-polling controls at each load: the share of
                   received packets the poller took (BusyPollRxPackets,
                   and where traced the poller's share of every poll's
                   packets), p50 and p99 against
                   base (paired by round), and how often their latency
                   lay past 1 ms - packets that waited for the flush timer
  slice_outliers   1 s slices whose p99 lies far above both neighbours'
  auto_lines       the values auto held after each run's warm-up and run
  step_lines       the step test: auto's values and the p99 and CPU per
                   request of every slice as the load steps
"""

import statistics

from . import stats
from .guard import TEXT_MAX, shown
from .modes import AUTO, CONTROLS

# a slice is an outlier when its p99 is above this times both neighbours'
OUTLIER_FACTOR = 4.0


def shown_text(value):
    """guard.shown() of a string from a run file, for the report's text."""
    return shown(value, TEXT_MAX)


def cell_runs(runs, mode, load):
    return [r for r in runs if r["mode"] == mode and r["offered"] == load and not r.get("failed")]


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _f(x, fmt="%.0f"):
    return "-" if x is None else fmt % x


def control_lines(runs, modes, loads):
    """Per control in the run and load: busy-poll share, p50 and p99 with
    their paired ratios to base, the share of requests slower than 1 ms."""
    lines = []
    for c in (c for c in CONTROLS if c in modes):
        for load in loads:
            mine = cell_runs(runs, c, load)
            if not mine:
                continue
            base = {r.get("round"): r for r in cell_runs(runs, "base", load)}
            ours = {r.get("round"): r for r in mine}
            traced = median((r.get("poller_share") or {}).get("share") for r in mine)
            parts = ["%s @ %d: busy-polled share of received packets %s%s" % (
                c, load, _f(median(r.get("busy_share") for r in mine), "%.3f"),
                "" if traced is None else " (traced, the poller's: %.4f)" % traced)]
            for key in ("p50_us", "p99_us"):
                ratio = stats.interval(stats.paired_ratios(ours, base, key).values()) if base else None
                parts.append("%s %s us%s" % (key[:3], _f(median(r.get(key) for r in mine)),
                                             "" if ratio is None else " (%.2fx base [%.2f-%.2f])"
                                             % (ratio[1], ratio[0], ratio[2])))
            slow = median(over_ms(r) for r in mine)
            parts.append("requests over 1 ms %s %%" % _f(None if slow is None else 100 * slow, "%.2f"))
            where = [(what, median(r.get(key) for r in mine)) for key, what in WHERE]
            if any(x is not None for _, x in where):
                parts.append("per 1000 requests: " + ", ".join("%s %s" % (what, _f(x, "%.1f")) for what, x in where))
            lines.append("  " + ", ".join(parts))
    return ["busy-polling controls, median of the runs (ratios paired by round, 90 % interval):"] + lines \
        if lines else []


# where the poller was (netns.py counts them): asleep in epoll_wait, preempted,
# or not polling while the NAPI's own thread took the packets
WHERE = (("worker_sleeps_per_kreq", "the worker slept"), ("worker_preempted_per_kreq", "was preempted"),
         ("napi_thread_runs_per_kreq", "the NAPI thread ran"))


def over_ms(run, ms=1.0):
    """The share of a run's requests slower than ms (unanswered count)."""
    hist = run.get("hist")
    if not hist:
        return None
    n = sum(c for _, c in hist["counts"]) + hist["unanswered"]
    if not n:
        return None
    slow = sum(c for i, c in hist["counts"] if stats.bucket_mid(i, hist["sub_bits"]) > ms * 1e6)
    return (slow + hist["unanswered"]) / n


def slice_outliers(runs):
    """Lines naming each 1 s slice whose p99 is above OUTLIER_FACTOR times
    both its neighbours' (first and last slices: their one neighbour)."""
    lines = []
    for r in runs:
        sl = r.get("slices_p99_us") or []
        for i, y in enumerate(sl):
            near = [sl[j] for j in (i - 1, i + 1) if 0 <= j < len(sl) and sl[j] is not None]
            if y is None or not near or y <= OUTLIER_FACTOR * max(near):
                continue
            lines.append("%s @ %d round %s: second %d of %d p99 %.0f us, its neighbours %s us; the run's p99 %s us"
                         % (shown_text(r["mode"]), r["offered"], r.get("round", "?"), i + 1, len(sl), y,
                            "/".join("%.0f" % x for x in near), _f(r.get("p99_us"))))
    return lines


def auto_lines(report, runs):
    """The values auto held: after each run's warm-up and after its run
    (older runs: after each round's settle load)."""
    mine = [r for r in runs if r["mode"] == AUTO and not r.get("failed")]
    settles = report.get("auto_settles") or []
    if not mine and not settles:
        return []
    lines = ["auto (gro_flush_timeout=auto, irq_suspend_timeout=auto; defer, gro ns, suspend ns):"]
    for st in settles:
        lines.append("  round %d: %s" % (st["round"], "settle load failed: %s" % shown_text(st["failed"])
                                        if st.get("failed") else "after %d s at %d req/s held %s"
                                        % (st["seconds"], st["offered"], shown_text(st["held"]))))
    seen = {}
    for r in sorted(mine, key=lambda r: (r["offered"], r.get("round", 0))):
        warm, after = r.get("auto_warmup"), (r.get("held") or {}).get("after")
        if warm:
            lines.append("  %d req/s round %s: after a %s s warm-up at it %s, after the run %s" % (
                r["offered"], r.get("round", "?"), warm["seconds"], shown_text(warm.get("held")), shown_text(after)))
        else:
            for v in after or []:
                seen[tuple(v)] = seen.get(tuple(v), 0) + 1
    if seen:
        lines.append("  held after its runs: " + "; ".join("%s in %d run(s)" % (shown_text(list(k)), n)
                                                          for k, n in sorted(seen.items())))
    return lines


def step_lines(step):
    """The step test, one line per slice, and the values at each step's end."""
    if not step:
        return []
    if step.get("failed"):
        return ["step test: %s" % shown_text(step["failed"])]
    lines = ["step test (auto): %s of saturation, %s s each, %s s slices:"
             % (" -> ".join("%g" % f for f in step["fractions"]), step["step_seconds"], step["slice_seconds"])]
    previous = None
    for sl in step["slices"]:
        if sl.get("failed"):
            lines.append("  step %d %d req/s slice %d: failed: %s" % (sl["step"] + 1, sl["offered"], sl["slice"] + 1,
                                                                    shown_text(sl["failed"])))
            continue
        # auto changes a value only when a measurement leaves its band
        change = "" if previous is None else " (changed)" if sl["held"] != previous else " (held)"
        previous = sl["held"]
        lines.append("  step %d %6d req/s slice %2d: p99 %6s us, CPU %s us/req, auto's values %s%s" % (
            sl["step"] + 1, sl["offered"], sl["slice"] + 1, _f(sl["p99_us"]),
            _f(sl.get("cpu_us_per_request"), "%.1f"), shown_text(sl["held"]), change))
    return lines
