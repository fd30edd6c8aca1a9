# SPDX-License-Identifier: GPL-2.0-or-later
"""irqtune-bench's report (bench/irqtune_bench/report.py): cells, the p99
spread, the verdict lines and when they are decided, the before/after
spread table.

The runs are made up: p99 and instruction counts chosen so that each case
lands on a known side of the series' targets (p99 within 1.5x of
fullbusy's, at most 0.7x its instructions per request)."""

import json
from pathlib import Path

import pytest

from irqtune_bench import report


def run(mode, load, p99, ipr=None, topology="-", late=200.0, wait=1.0, failed=None):
    r = {"mode": mode, "offered": load, "topology": topology, "qps": load, "avg_us": p99 / 3,
         "p50_us": p99 / 4, "p99_us": p99, "cpu_pct_serving": 50.0, "cpu_pct_guest": 25.0,
         "ipr_serving": ipr, "ipr_guest": ipr and ipr * 1.05, "irqs_per_request": 0.5,
         "busy_share": 0.1, "send_late_p99_us": late, "gen_cpu_pct": 5.0, "serving_wait_pct": wait}
    if failed:
        r = {"mode": mode, "offered": load, "topology": topology, "failed": failed}
    return r


def cells_of(runs, loads=(1000,)):
    return report.summarise(runs, ["suspend20", "fullbusy", "defer50"], list(loads))


def test_cell_median_range_and_spread():
    runs = [run("suspend20", 1000, p) for p in (100, 300, 200)] + [run("suspend20", 1000, 1, failed="x")]
    c = report.summarise(runs, ["suspend20"], [1000])["suspend20@1000"]
    assert (c["runs"], c["failed"]) == (3, 1)
    assert c["p99_us"] == {"median": 200, "min": 100, "max": 300}
    assert report.spread(c) == pytest.approx(1.0)          # (300 - 100) / 200
    assert report.spread(report.summarise([], ["base"], [1])["base@1"]) is None


@pytest.mark.parametrize("s_p99,f_p99,s_ipr,f_ipr,verdict", [
    # every pairing within both targets
    ([100, 110], [100, 105], [60, 62], [100, 101], "HOLDS"),
    # p99 2x in every pairing
    ([200, 210], [100, 105], [60, 62], [100, 101], "does NOT hold"),
    # cost above 0.7x in every pairing, whatever the p99 does
    ([100, 300], [100, 105], [80, 82], [100, 101], "does NOT hold"),
    # medians hold, but one pairing of the runs puts p99 over 1.5x
    ([100, 200], [100, 110], [60, 62], [100, 101], "NOT DECIDED"),
])
def test_verdict_is_decided_only_when_every_pairing_agrees(s_p99, f_p99, s_ipr, f_ipr, verdict):
    runs = [run("suspend20", 1000, p, i) for p, i in zip(s_p99, s_ipr)] + \
        [run("fullbusy", 1000, p, i) for p, i in zip(f_p99, f_ipr)]
    line, = report.verdicts(cells_of(runs), [1000])
    assert line.startswith("offered 1000: suspend20 p99 ")
    assert ": " + verdict in line, line
    for other in {"HOLDS", "does NOT hold", "NOT DECIDED"} - {verdict}:
        assert ": " + other not in line, line


def test_undecided_verdict_names_the_straddling_half_and_the_noise():
    runs = [run("suspend20", 1000, p, 60, late=900, wait=12.5) for p in (100, 200)] + \
        [run("fullbusy", 1000, p, 100) for p in (100, 110)]
    line, = report.verdicts(cells_of(runs), [1000])
    assert "the latency half straddles its target" in line and "cost half" not in line, line
    assert "runs 0.91-2.00x" in line, line
    assert "generator late p99 up to 900 us" in line and "waited up to 12.5 %" in line, line


def test_verdict_without_instruction_counts_judges_latency_only():
    runs = [run("suspend20", 1000, 100), run("fullbusy", 1000, 100)]
    line, = report.verdicts(cells_of(runs), [1000])
    assert "no instruction counts: the cost half not judged" in line, line


def test_verdict_compares_with_the_best_defer_mode():
    runs = [run("suspend20", 1000, 100, 60), run("fullbusy", 1000, 100, 100), run("defer50", 1000, 400, 50)]
    line, = report.verdicts(cells_of(runs), [1000])
    assert "against the best defer mode (defer50): p99 0.25x, instructions/request 1.20x" in line, line


def test_no_valid_run_no_verdict():
    runs = [run("suspend20", 1000, 100, 60), run("fullbusy", 1000, 1, failed="mode not in effect")]
    assert report.verdicts(cells_of(runs), [1000]) == \
        ["offered 1000: suspend20 or fullbusy has no valid run - no verdict"]


def test_compare_puts_both_topologies_side_by_side():
    runs = [run("base", 1000, p, topology="shared", wait=30) for p in (100, 2100, 600)] + \
        [run("base", 1000, p, topology="pinned", wait=0.5) for p in (100, 120, 110)]
    split = report.split_topologies(runs)
    text = report.compare(split["shared"], split["pinned"], ["base"], [1000], labels=("shared", "pinned"))
    row = [line for line in text.splitlines() if line.startswith("| 1000 | base |")]
    assert row == ["| 1000 | base | 600 [100-2100] (3) | 3.33 | 110 [100-120] (3) | 0.18 "
                   "| 30.0 [30.0-30.0] | 0.5 [0.5-0.5] |"], text
    assert "- shared: p99 spread (max - min) / median over 1 cells with 2+ runs: median 3.33" in text
    assert "- pinned: p99 spread (max - min) / median over 1 cells with 2+ runs: median 0.18" in text


def test_table_and_markdown_show_every_mode_and_a_failed_cell():
    runs = [run("suspend20", 1000, 100, 60), run("fullbusy", 1000, 1, failed="x")]
    cells = cells_of(runs)
    text = report.table(cells, ["suspend20", "fullbusy"], [1000])
    assert "fullbusy   no valid run (1 failed)" in text
    assert text.splitlines()[2].split()[:2] == ["suspend20", "1000"]
    md = report.markdown(cells, ["suspend20", "fullbusy"], [1000])
    assert "| suspend20 | 1 | 1000 | 25 | 100 [100-100] | 0.1 [0.1-0.1] |" in md, md
    assert "| fullbusy | 0 (1 failed) |" in md


def test_compare_gives_no_spread_for_a_single_run():
    before, after = [run("base", 1000, 100)], [run("base", 1000, 100), run("base", 1000, 300)]
    text = report.compare(before, after, ["base"], [1000])
    assert "| 1000 | base | 100 [100-100] (1) | - | 200 [100-300] (2) | 1.00 |" in text, text
    assert "- before: no cell with 2 or more runs" in text


def test_the_report_names_the_recommended_values_and_their_figures():
    doc = json.loads((Path(__file__).resolve().parent / "bench_fixtures" / "doctor-memcached.json").read_text())
    rec = {"offered": 5600, "doctor": "irqtune doctor --service memcached --json --seconds 5",
           "values": doc["recommend"], "measured": doc["measured"]}
    lines = report.recommend_lines(rec)
    assert "gro_flush_timeout 1000000 ns, irq_suspend_timeout 22310000 ns" in lines[1], lines
    assert "at 5600 req/s" in lines[1] and "2287 busy periods" in lines[2], lines
    assert "up to 1 event(s)" in lines[2], lines
    failed = report.recommend_lines(dict(rec, failed="too little traffic to judge"))
    assert failed[1].endswith(": too little traffic to judge"), failed
    assert report.recommend_lines(None) == []
