# SPDX-License-Identifier: GPL-2.0-or-later
"""The bench's statistics (bench/irqtune_bench/stats.py) on synthetic data
whose answer is known: the histogram's error bound and its unanswered
requests, the bootstrap interval against its exact distribution, and the
rule that turns an interval into holds / fails / undecided."""

import math
import random
import statistics

import pytest

from irqtune_bench import stats

SUB_BITS, MAX_NS = 7, 1 << 35


def hist_of(values_ns, unanswered=0):
    counts = {}
    for v in values_ns:
        i = stats.bucket_index(v, SUB_BITS, MAX_NS)
        counts[i] = counts.get(i, 0) + 1
    return {"sub_bits": SUB_BITS, "max_ns": MAX_NS, "unanswered": unanswered,
            "counts": sorted([i, c] for i, c in counts.items())}


def nearest_rank(values, p):
    values = sorted(values)
    return values[max(1, math.ceil(p / 100.0 * len(values) - 1e-9)) - 1]


def test_every_value_reads_back_within_half_a_percent():
    rng = random.Random(1)
    values = [int(rng.lognormvariate(13, 2)) for _ in range(20000)] + list(range(0, 300)) + [MAX_NS - 1]
    worst = 0.0
    for v in values:
        mid = stats.bucket_mid(stats.bucket_index(v, SUB_BITS, MAX_NS), SUB_BITS)
        if v:
            worst = max(worst, abs(mid - v) / v)
        else:
            assert mid == 0
    # the bound is 1 %; 128 buckets per power of two give 0.4 %
    assert worst <= 0.004, worst


@pytest.mark.parametrize("p", [50, 90, 99, 99.9])
def test_quantiles_of_a_histogram_match_the_exact_ones(p):
    rng = random.Random(p)
    values = [int(rng.expovariate(1 / 300000.0)) + 20000 for _ in range(5000)]
    got = stats.quantile_us(hist_of(values), p)
    exact = nearest_rank(values, p) / 1e3
    assert abs(got - exact) <= 0.004 * exact, (got, exact)


def test_unanswered_requests_count_at_the_maximum():
    """2 % of the requests never answered: the p99 is the histogram's
    maximum, not the p99 of those answered (which dropping them gives)."""
    answered = [100000] * 98
    h = hist_of(answered, unanswered=2)
    assert stats.quantile_us(h, 99) == MAX_NS / 1e3
    assert stats.quantile_us(h, 50) == pytest.approx(100.0, rel=0.004)
    # 1 unanswered of 200: the p99 stays among the answered
    h = hist_of([100000] * 199, unanswered=1)
    assert stats.quantile_us(h, 99) == pytest.approx(100.0, rel=0.004)
    assert stats.quantile_us(hist_of([], unanswered=0), 99) is None


def test_merged_histograms_count_every_request():
    a, b = hist_of([1000, 2000, 3000], 1), hist_of([2000, 500000], 0)
    m = stats.merge([a, b])
    assert sum(c for _, c in m["counts"]) == 5 and m["unanswered"] == 1
    assert stats.quantile_us(m, 50) == pytest.approx(2.0, rel=0.004)


def exact_bootstrap_median(values):
    """The bootstrap distribution of the median, exactly: every multiset
    of len(values) draws with its multinomial probability."""
    n = len(values)

    def compositions(total, parts):
        if parts == 1:
            yield (total,)
            return
        for i in range(total + 1):
            for rest in compositions(total - i, parts - 1):
                yield (i,) + rest
    dist = {}
    for c in compositions(n, n):
        sample = [v for v, k in zip(values, c) for _ in range(k)]
        p = math.factorial(n) / math.prod(math.factorial(k) for k in c) / n ** n
        m = statistics.median(sample)
        dist[m] = dist.get(m, 0.0) + p
    return sorted(dist.items())


def exact_quantile(dist, q):
    cdf = 0.0
    for value, p in dist:
        cdf += p
        if cdf >= q:
            return value
    return dist[-1][0]


@pytest.mark.parametrize("values", [
    [1, 2, 3, 4, 5, 6, 7, 8],
    [0.31, 0.52, 0.55, 0.9, 1.2, 1.25, 2.4, 7.0],
])
def test_interval_is_the_bootstrap_of_the_median_at_90_percent(values):
    """Against the exact bootstrap distribution (enumerated): for 1..8 its
    5 % and 95 % points are 2.5 and 6.5 (cumulative 0.030 -> 0.074 and
    0.926 -> 0.970 around them, so resampling cannot miss them)."""
    dist = exact_bootstrap_median(values)
    lo, med, hi = stats.interval(values)
    assert med == statistics.median(values)
    assert (lo, hi) == (exact_quantile(dist, 0.05), exact_quantile(dist, 0.95)), (lo, hi)
    if values[0] == 1:
        assert (lo, med, hi) == (2.5, 4.5, 6.5)


def test_the_interval_is_the_same_every_time():
    values = [0.8, 1.1, 0.9, 1.6, 1.3, 0.7, 1.0, 2.0]
    assert stats.interval(values) == stats.interval(list(values))


def test_identical_rounds_give_a_point_interval():
    assert stats.interval([1.3] * 8) == [1.3, 1.3, 1.3]


@pytest.mark.parametrize("iv,target,pairs,verdict", [
    ([0.5, 0.8, 1.4], 1.5, 8, "holds"),
    ([0.5, 0.8, 1.5], 1.5, 8, "holds"),           # at the target is within it
    ([1.6, 2.0, 3.0], 1.5, 8, "fails"),
    ([1.2, 1.6, 2.0], 1.5, 8, "undecided"),
    ([0.5, 0.6, 0.65], 0.7, 4, "undecided"),      # too few paired rounds
    (None, 0.7, 0, "undecided"),
])
def test_a_half_holds_fails_or_stays_undecided(iv, target, pairs, verdict):
    assert stats.judge(iv, target, pairs) == verdict


def test_pairs_are_by_round_and_only_where_both_ran():
    mine = {1: {"p99_us": 300}, 2: {"p99_us": 50}, 3: {"p99_us": 10}, 5: {"p99_us": 7}}
    theirs = {1: {"p99_us": 100}, 2: {"p99_us": 25}, 4: {"p99_us": 3}, 5: {"p99_us": None}}
    assert stats.paired_ratios(mine, theirs, "p99_us") == {1: 3.0, 2: 2.0}


def test_spread_of_a_cell():
    assert stats.spread([100, 300, 200]) == pytest.approx(1.0)
    assert stats.spread([100]) is None and stats.spread([100, None]) is None
