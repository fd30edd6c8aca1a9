# SPDX-License-Identifier: GPL-2.0-or-later
"""The realtime lab's reading of cyclictest (tests/support/rtlab.py).

Fixture: lab_fixtures/cyclictest-2.40-host.json is what rt-tests 2.40
(Debian 12) wrote on this project's build host for
`cyclictest -m -q -p 95 -i 1000 -t 2 -a 0,1 -D 3s -h 100000 --json=...`;
the histogram holds only non-empty buckets, keyed by microseconds as
strings, and "cpu" is an int.
"""

import copy
import json
import math
from pathlib import Path

from support import rtlab

HERE = Path(__file__).resolve().parent

FIXTURE = json.loads((HERE / "lab_fixtures" / "cyclictest-2.40-host.json").read_text())


def p99_by_expansion(thread):
    """Every sample listed once, sorted: the 99th percentile by rank."""
    samples = sorted(int(us) for us, n in thread["histogram"].items() for _ in range(n))
    return samples[math.ceil(0.99 * len(samples)) - 1]


def test_max_p99_and_cycles_per_cpu():
    got = rtlab.cyclictest_summary(FIXTURE)
    assert set(got) == {0, 1}
    for thread in FIXTURE["thread"].values():
        cpu = got[thread["cpu"]]
        assert cpu["max"] == thread["max"]
        assert cpu["cycles"] == thread["cycles"]
        assert cpu["p99"] == p99_by_expansion(thread)
    # the fixture's tail is long: p99 lies far below the maximum
    assert got[0]["p99"] < got[0]["max"] / 10


def test_samples_beyond_the_histogram_give_no_p99():
    """Overflows (latencies above -h) are counted in cycles but not in the
    histogram: when they reach the top 1 %, the p99 is not known."""
    data = copy.deepcopy(FIXTURE)
    thread = data["thread"]["0"]
    thread["cycles"] += int(0.02 * thread["cycles"]) + 1
    assert rtlab.cyclictest_summary(data)[0]["p99"] is None
