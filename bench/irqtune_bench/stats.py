# SPDX-License-Identifier: GPL-2.0-or-later
"""The statistics the verdicts rest on.

Histograms.  mcload (bench/mcload.c) counts every request scheduled in
the window in a log-bucketed histogram: values in ns, exact below 2^S
(S = sub_bits, 7), then 2^S buckets per power of two, so a bucket is at
most 1/2^S (0.78 %) of its lower bound wide and its midpoint is within
0.4 % of any value in it.  Requests never answered count at the maximum
(max_ns): a run that leaves more than 1 % unanswered has that maximum as
its p99.  bucket_mid() and quantile_us() read them the way mcload does.

Verdicts.  A compared mode and fullbusy run once each per round, so
their runs pair by round: the ratio of one round's two p99s (or
instructions per request) is free of whatever made that round slow or
fast for both.  The verdict's figure is the median of the per-round
ratios; its 90 % interval is the percentile bootstrap of that median,
resampling the paired rounds (BOOTSTRAP resamples, a fixed seed, so the
same run gives the same interval every time).  A half holds when the
whole interval is at or below its target, fails when the whole interval
is above it, and is undecided otherwise - also with fewer than
MIN_PAIRS paired rounds.
"""

import math
import random
import statistics

BOOTSTRAP = 10000
LEVEL = 0.90
MIN_PAIRS = 5
SEED = 40


def bucket_mid(idx, sub_bits):
    """The midpoint (ns) of histogram bucket idx (mcload's hist_mid)."""
    sub = 1 << sub_bits
    k, s = divmod(idx, sub)
    if not k:
        return float(idx)
    width = 1 << (k - 1)
    return float((sub + s) * width) + (width - 1) / 2.0


def bucket_index(ns, sub_bits, max_ns):
    """The bucket of a value in ns (mcload's hist_index)."""
    sub = 1 << sub_bits
    if ns >= max_ns:
        return bucket_index(max_ns - 1, sub_bits, max_ns)
    if ns < sub:
        return int(ns)
    shift = int(ns).bit_length() - 1 - sub_bits
    return (shift + 1) * sub + ((int(ns) >> shift) - sub)


def quantile_us(hist, p):
    """The p-th percentile (nearest rank) of a run's histogram in us,
    unanswered requests counted at its maximum; None for an empty one."""
    n = sum(c for _, c in hist["counts"]) + hist["unanswered"]
    if not n:
        return None
    rank = max(1, math.ceil(p / 100.0 * n - 1e-9))
    seen = 0
    for idx, count in sorted(hist["counts"]):
        seen += count
        if seen >= rank:
            return bucket_mid(idx, hist["sub_bits"]) / 1e3
    return hist["max_ns"] / 1e3


def merge(hists):
    """One histogram of several (the same sub_bits and max_ns)."""
    counts = {}
    for h in hists:
        for idx, c in h["counts"]:
            counts[idx] = counts.get(idx, 0) + c
    first = hists[0]
    return {"sub_bits": first["sub_bits"], "max_ns": first["max_ns"],
            "unanswered": sum(h["unanswered"] for h in hists), "counts": sorted([i, c] for i, c in counts.items())}


def paired_ratios(mine, theirs, key):
    """{round: mine's key / theirs' key} for the rounds where both have a
    value (runs given as {round: run})."""
    out = {}
    for rnd in sorted(set(mine) & set(theirs)):
        a, b = mine[rnd].get(key), theirs[rnd].get(key)
        if a is not None and b:
            out[rnd] = a / b
    return out


def interval(values, level=LEVEL, resamples=BOOTSTRAP, seed=SEED):
    """[lo, median, hi]: the median of values and the percentile bootstrap
    interval of it at level; None for no values."""
    if not values:
        return None
    values = list(values)
    rng = random.Random(seed)
    n = len(values)
    boot = sorted(statistics.median(rng.choices(values, k=n)) for _ in range(resamples))
    tail = (1.0 - level) / 2.0
    lo = boot[int(math.floor(tail * resamples))]
    hi = boot[int(math.ceil((1.0 - tail) * resamples)) - 1]
    return [lo, statistics.median(values), hi]


def judge(iv, target, pairs):
    """holds / fails / undecided of an interval against "ratio <= target"."""
    if iv is None or pairs < MIN_PAIRS:
        return "undecided"
    if iv[2] <= target:
        return "holds"
    if iv[0] > target:
        return "fails"
    return "undecided"


def spread(values):
    """(max - min) / median of a cell's run values; None for fewer than 2."""
    values = [v for v in values if v is not None]
    if len(values) < 2 or not statistics.median(values):
        return None
    return (max(values) - min(values)) / statistics.median(values)


SUMMED = ("offered", "conns", "sent", "answered", "lost", "errors", "measured", "unanswered", "qps",
          "send_late_over_100us", "send_late_over_1ms")


def combine(results):
    """One run's figures from the JSON of several generator processes that
    loaded the server at once: counts summed, percentiles from the merged
    histograms (and each 1 s slice's), the send lateness and CPU share of
    the latest and busiest generator (a generator's lateness is its own;
    the worst one bounds the run's; the busiest one says whether the
    client limited the load, runner.derive's client_bound)."""
    if len(results) == 1:
        return results[0]
    cpu = [r["gen_cpu_pct"] for r in results]
    out = dict(results[0], generators=len(results), gen_cpu_pcts=cpu, gen_cpu_pct=max(cpu))
    for key in SUMMED:
        out[key] = sum(r[key] for r in results)
    for key in ("send_late_p50_us", "send_late_p99_us", "send_late_max_us", "window_s"):
        out[key] = max(r[key] for r in results)
    hist = out["hist"] = merge([r["hist"] for r in results])
    answered = [r["measured"] - r["unanswered"] for r in results]
    out["avg_us"] = (sum(r["avg_us"] * a for r, a in zip(results, answered) if a) / sum(answered)
                     if sum(answered) else None)
    for key, p in (("p50_us", 50), ("p90_us", 90), ("p99_us", 99), ("p999_us", 99.9)):
        out[key] = quantile_us(hist, p)
    out["max_us"] = max((r["max_us"] for r in results if r["max_us"] is not None), default=None)
    slices = [merge([dict(hist, **s) for s in group]) for group in zip(*(r["slices_hist"] for r in results))]
    out["slices_hist"] = [{"unanswered": s["unanswered"], "counts": s["counts"]} for s in slices]
    out["slices_p99_us"] = [quantile_us(s, 99) for s in slices]
    return out
