# SPDX-License-Identifier: GPL-2.0-or-later
"""Saved runs as another user or a careless hand can shape them (issue 47
item 7): every crafted run file is refused by `report`, `report
--verdicts-json`, `compare` and `docs` in one line naming the file and
the first bad field, exit 2, no traceback, in bounded time and memory -
before anything is computed from it (bench/irqtune_bench/saved.py).

The base run is made up but complete: every field the report, the
verdicts, compare and the docs read, two rounds in two topologies, a
cell above the spread bound; each case changes one thing of it.  The
real runs (docs/data/lab-bench.json.xz, the lab's smoke run) pass."""

import copy
import json
import lzma
import resource
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from irqtune_bench import cli, docs, saved

REPO = Path(__file__).resolve().parents[3]
REAL_RUNS = [REPO / "docs" / "data" / "lab-bench.json.xz",
             REPO / "tests" / "unit" / "bench" / "bench_fixtures" / "lab-smoke-run.json.xz"]
MODES = ["suspend20", "fullbusy", "auto", "recommend"]
LOADS = [1000, 2000]
CASE_SECONDS = 10.0           # each refusal, each command, on this 2-core machine
HEAVY_MEMORY = 512 << 20      # RLIMIT_AS of the subprocess a heavy case runs in (refused: < 80 MiB RSS)


def a_run(mode, load, rnd, topology, p99):
    return {"mode": mode, "offered": load, "round": rnd, "topology": topology, "qps": load * 0.99,
            "avg_us": p99 / 3, "p50_us": p99 / 4, "p99_us": p99, "cpu_pct_serving": 50.0,
            "cpu_pct_guest": 25.0, "ipr_serving": 9000, "ipr_guest": 9500, "irqs_per_request": 0.5,
            "busy_share": 0.4, "send_late_p99_us": 120.0, "gen_cpu_pct": 5.0, "serving_wait_pct": 0.5,
            "serving_cpu_other_ms": 10.0, "serving_core_other_pct": 0.05, "main_loop_wait_pct": 0.3,
            "cpu_us_per_request": 80.0, "slices_p99_us": [p99 * 0.9, None, p99 * 1.1],
            "held": {"before": [[100, 20000, 20000000]], "after": [[100, 20000, 20000000]]},
            "hist": {"sub_bits": 7, "max_ns": 34359738368, "unanswered": 0, "counts": [[1500, 3], [1510, 7]]},
            "attempts": [{"reasons": ["send_late_p99_us 300.0 > 250.0"], "p99_us": p99}], "reruns": 1,
            "client_bound": False}


def base_run():
    runs = []
    for rnd in (1, 2):
        for topology in ("shared", "pinned"):
            for m in MODES:
                for load in LOADS:
                    # suspend20 at 1000 spreads 4x between its rounds: the
                    # spread bound's causes are shown
                    p99 = 1000.0 * (4 if (m, load, rnd) == ("suspend20", 1000, 2) else 1)
                    runs.append(a_run(m, load, rnd, topology, p99))
    runs[1]["failed"] = "mode not in effect: NAPI 9 gro-flush-timeout=0, mode wants 20000"
    runs[2]["disturbed"] = ["send_late_p99_us 900.0 > 250.0"]
    return {
        "settings": {"modes": MODES, "repeats": 2, "seconds": 1.0, "warmup": 0.1, "conns": 1},
        "loads": LOADS, "runs": runs, "started": "2026-11-27 07:08:02 UTC", "command": "irqtune-bench run",
        "seconds_total": 42, "rule": {"send_late_p99_us": 250.0, "serving_core_other_pct": 1.0},
        "saturation": {"rate": 10000, "side": "server", "probes": [
            {"offered": 1000, "kept_up": True}, {"offered": 15000, "kept_up": False}]},
        "recommend": {"offered": 1000, "doctor": "irqtune doctor --service memcached --json", "values": {
            "defer_hard_irqs": 100, "gro_flush_timeout_ns": 20000, "irq_suspend_timeout_ns": 2000000},
            "measured": {"busy_periods": 1770, "event_ns": {"p50": 1, "p99": 2, "max": 3},
                         "batch_ns": {"p99": 2, "max": 3}, "batch_events": {"max": 1}}},
        "placement": {"what": "threads", "lines": ["tid 1 cpu 2"]},
        "testbed": {"summary": "a made-up testbed", "insns": "counted", "serving_thread": "memcached",
                    "kernel": "7.2-lab", "machine": {"host_cpu": "x", "host_cpus": 2, "host_mem_gib": 4,
                                                     "host_kernel": "6.18", "qemu": "QEMU 10"},
                    "guest": {"vcpus": 4, "cpu_model": "max", "nic_queues": 4, "cmdline_extra": "quiet"}},
        "who_sets": {"NAPI": "the project"},
        "auto_settles": [{"round": 1, "offered": 2000, "seconds": 20, "held": [[100, 20000, 20000000]]},
                         {"round": 2, "failed": "mcload: timed out"}],
    }


def changed(path_and_value):
    """A case: the base run with the value at a path ("runs.3.p99_us")
    set (DELETE: removed)."""
    def make():
        run = base_run()
        for path, value in path_and_value:
            *parents, last = path.split(".")
            node = run
            for p in parents:
                node = node[int(p)] if isinstance(node, list) else node[p]
            key = int(last) if isinstance(node, list) else last
            if value is DELETE:
                del node[key]
            else:
                node[key] = value
        return json.dumps(run, allow_nan=True).encode()
    return make


DELETE = object()


def raw(data):
    return lambda: data


def xz(make):
    return lambda: lzma.compress(make(), preset=9)


def deep(n):
    return raw(b'{"settings": {"modes": ["fullbusy"]}, "loads": [1000], "runs": [], "command": '
               + b"[" * n + b"]" * n + b"}")


def big_runs(modes, loads, runs):
    """issue 47: 200 modes x 2000 loads x 20000 runs in 990 KB"""
    def make():
        names = ["m%d" % i for i in range(modes)]
        text = json.dumps({"settings": {"modes": names, "repeats": 1, "seconds": 1, "warmup": 0, "conns": 1},
                           "loads": list(range(1, loads + 1)),
                           "runs": [{"mode": names[i % modes], "offered": 1 + i % loads, "p99_us": 1}
                                    for i in range(runs)]})
        return text.encode()
    return make


# (case, the file's bytes, what the refusal names first, the file's suffix)
CASES = [
    ("top level a list", raw(b"[]"), "not a run", ".json"),
    ("top level a string", raw(b'"run"'), "not a run", ".json"),
    ("empty file", raw(b""), "not JSON", ".json"),
    ("not UTF-8", raw(b'{"settings": "\xff\xfe"}'), "not JSON", ".json"),
    ("truncated JSON", raw(b'{"settings": '), "not JSON", ".json"),
    ("settings missing", changed([("settings", DELETE)]), "settings", ".json"),
    ("settings a list", changed([("settings", [])]), "settings", ".json"),
    ("settings.modes missing", changed([("settings.modes", DELETE)]), "settings.modes", ".json"),
    ("settings.modes a string", changed([("settings.modes", "fullbusy")]), "settings.modes", ".json"),
    ("settings.modes holds a number", changed([("settings.modes", ["fullbusy", 7])]), "settings.modes[1]",
     ".json"),
    ("unknown mode name", changed([("settings.modes", ["fullbusy", "nosuch"])]), "settings.modes[1]", ".json"),
    ("mode name with %d and escapes", changed([("settings.modes", ["fullbusy", "%d\x1b]0;t\x07"])]),
     "settings.modes[1]", ".json"),
    ("a mode named twice", changed([("settings.modes", ["fullbusy", "fullbusy"])]), "settings.modes[1]",
     ".json"),
    ("settings.repeats missing", changed([("settings.repeats", DELETE)]), "settings.repeats", ".json"),
    ("settings.repeats a string (%d of it)", changed([("settings.repeats", "8")]), "settings.repeats", ".json"),
    ("settings.repeats negative", changed([("settings.repeats", -1)]), "settings.repeats", ".json"),
    ("settings.repeats true", changed([("settings.repeats", True)]), "settings.repeats", ".json"),
    ("settings.seconds a string", changed([("settings.seconds", "20")]), "settings.seconds", ".json"),
    ("settings.warmup null", changed([("settings.warmup", None)]), "settings.warmup", ".json"),
    ("settings.conns a string", changed([("settings.conns", "1")]), "settings.conns", ".json"),
    ("loads missing", changed([("loads", DELETE)]), "loads", ".json"),
    ("loads an object", changed([("loads", {"1000": 1})]), "loads", ".json"),
    ("a load a string", changed([("loads", [1000, "2000"])]), "loads[1]", ".json"),
    ("a load a fraction", changed([("loads", [1000, 2000.5])]), "loads[1]", ".json"),
    ("a load negative", changed([("loads", [1000, -5])]), "loads[1]", ".json"),
    ("a load NaN", changed([("loads", [1000, float("nan")])]), "loads[1]", ".json"),
    ("a load named twice", changed([("loads", [1000, 1000])]), "loads[1]", ".json"),
    ("runs missing", changed([("runs", DELETE)]), "runs", ".json"),
    ("runs an object", changed([("runs", {})]), "runs", ".json"),
    ("a run a number", changed([("runs.3", 7)]), "runs[3]", ".json"),
    ("a run without mode", changed([("runs.3.mode", DELETE)]), "runs[3].mode", ".json"),
    ("a run without offered", changed([("runs.3.offered", DELETE)]), "runs[3].offered", ".json"),
    ("a run's mode a number", changed([("runs.3.mode", 3)]), "runs[3].mode", ".json"),
    ("a run's mode not among settings.modes", changed([("runs.3.mode", "base")]), "runs[3].mode", ".json"),
    ("a run's offered a string", changed([("runs.3.offered", "1000")]), "runs[3].offered", ".json"),
    ("a run's offered Infinity", changed([("runs.3.offered", float("inf"))]), "runs[3].offered", ".json"),
    ("a run's round a list", changed([("runs.3.round", [1])]), "runs[3].round", ".json"),
    ("a run's round a string", changed([("runs.3.round", "1")]), "runs[3].round", ".json"),
    ("a run's topology a list", changed([("runs.3.topology", ["pinned"])]), "runs[3].topology", ".json"),
    ("a run's failed an object", changed([("runs.3.failed", {"why": 1})]), "runs[3].failed", ".json"),
    ("a run's disturbed a string", changed([("runs.3.disturbed", "late")]), "runs[3].disturbed", ".json"),
    ("a run's reruns a string", changed([("runs.3.reruns", "2")]), "runs[3].reruns", ".json"),
    ("a run's reruns negative", changed([("runs.3.reruns", -3)]), "runs[3].reruns", ".json"),
    ("an attempt a string", changed([("runs.3.attempts", ["late"])]), "runs[3].attempts[0]", ".json"),
    ("an attempt without reasons", changed([("runs.3.attempts", [{}])]), "runs[3].attempts[0].reasons",
     ".json"),
    ("an attempt's reason a number", changed([("runs.3.attempts", [{"reasons": [5]}])]),
     "runs[3].attempts[0].reasons[0]", ".json"),
    ("a run's p99 a string", changed([("runs.3.p99_us", "100")]), "runs[3].p99_us", ".json"),
    ("a run's p99 NaN", changed([("runs.3.p99_us", float("nan"))]), "runs[3].p99_us", ".json"),
    ("a run's p99 Infinity (1e999)", raw(json.dumps(base_run()).replace('"p99_us": 1000.0', '"p99_us": 1e999', 1)
                                        .encode()), "runs[0].p99_us", ".json"),
    ("a run's p99 negative", changed([("runs.3.p99_us", -1.0)]), "runs[3].p99_us", ".json"),
    ("a run's p99 of 400 digits", raw(json.dumps(base_run()).replace('"p99_us": 1000.0', '"p99_us": 1' + "0" * 400,
                                                                     1).encode()), "runs[0].p99_us", ".json"),
    ("a counted run without p99", changed([("runs.3.p99_us", DELETE)]), "runs[3].p99_us", ".json"),
    ("a counted run's p99 null", changed([("runs.3.p99_us", None)]), "runs[3].p99_us", ".json"),
    ("a run's ipr a list", changed([("runs.3.ipr_serving", [1])]), "runs[3].ipr_serving", ".json"),
    ("a run's gen_cpu_pct a string", changed([("runs.3.gen_cpu_pct", "97")]), "runs[3].gen_cpu_pct", ".json"),
    ("a run's slices a string", changed([("runs.3.slices_p99_us", "1,2")]), "runs[3].slices_p99_us", ".json"),
    ("100000 slices", changed([("runs.3.slices_p99_us", [1.0] * 100000)]), "runs[3].slices_p99_us", ".json"),
    ("a run's held not an object", changed([("runs.3.held", [1])]), "runs[3].held", ".json"),
    ("held values nested", changed([("runs.3.held", {"after": [[[1], 2, 3]]})]), "runs[3].held.after[0][0]",
     ".json"),
    ("held values of mixed types", changed([("runs.3.held", {"after": [[1, None, 3], [1, 2, 3]]})]),
     "runs[3].held.after[0][1]", ".json"),
    ("hist counts not pairs", changed([("runs.3.hist.counts", [[1, 2, 3]])]), "runs[3].hist.counts[0]",
     ".json"),
    ("a hist count negative", changed([("runs.3.hist.counts", [[1, -2]])]), "runs[3].hist.counts[0][1]",
     ".json"),
    ("100000 hist buckets", changed([("runs.3.hist.counts", [[i, 1] for i in range(100000)])]),
     "runs[3].hist.counts", ".json"),
    ("a run's client_bound a string", changed([("runs.3.client_bound", "yes")]), "runs[3].client_bound",
     ".json"),
    ("saturation a list", changed([("saturation", [10000])]), "saturation", ".json"),
    ("saturation without rate", changed([("saturation.rate", DELETE)]), "saturation.rate", ".json"),
    ("saturation rate a string (%d of it)", changed([("saturation.rate", "10000")]), "saturation.rate", ".json"),
    ("saturation without probes", changed([("saturation.probes", DELETE)]), "saturation.probes", ".json"),
    ("a probe without offered", changed([("saturation.probes", [{"kept_up": True}])]),
     "saturation.probes[0].offered", ".json"),
    ("recommend without values", changed([("recommend.values", DELETE)]), "recommend.values", ".json"),
    ("recommend's defer a string", changed([("recommend.values.defer_hard_irqs", "100")]),
     "recommend.values.defer_hard_irqs", ".json"),
    ("recommend measured without event_ns", changed([("recommend.measured.event_ns", DELETE)]),
     "recommend.measured.event_ns", ".json"),
    ("recommend failed, offered a string", changed([("recommend.failed", "no values"),
                                                    ("recommend.offered", "x")]), "recommend.offered", ".json"),
    ("placement without what", changed([("placement.what", DELETE)]), "placement.what", ".json"),
    ("placement lines a number", changed([("placement.lines", 3)]), "placement.lines", ".json"),
    ("testbed a string", changed([("testbed", "lab")]), "testbed", ".json"),
    ("testbed machine a string", changed([("testbed.machine", "x")]), "testbed.machine", ".json"),
    ("guest vcpus a string", changed([("testbed.guest.vcpus", "4")]), "testbed.guest.vcpus", ".json"),
    ("who_sets a list", changed([("who_sets", ["x"])]), "who_sets", ".json"),
    ("rule a list", changed([("rule", [1])]), "rule", ".json"),
    ("auto_settles an object", changed([("auto_settles", {})]), "auto_settles", ".json"),
    ("a settle without round", changed([("auto_settles.0.round", DELETE)]), "auto_settles[0].round", ".json"),
    ("a settle's round a string", changed([("auto_settles.0.round", "1")]), "auto_settles[0].round", ".json"),
    ("200,000 nested [", deep(200000), "nesting", ".json"),
    ("200,000 [ never closed", raw(b"[" * 200000), "nesting", ".json"),
    ("200,000 nested [ inside a string are text", raw(json.dumps(dict(base_run(), command="[" * 200000))
                                                     .replace('"warmup": 0.1', '"warmup": "x"').encode()),
     "settings.warmup", ".json"),
    ("xz: not xz", raw(b"not xz at all"), "not xz data", ".json.xz"),
    ("xz: truncated", lambda: lzma.compress(changed([])(), preset=9)[:-30], "xz data cut short", ".json.xz"),
]

def huge_dictionary(data):
    """data in xz whose block header asks for a 1.5 GiB dictionary (LZMA2
    dictionary code 37; the header's CRC32 made again), without the
    encoder's 1.5 GiB of memory that asking xz for one costs."""
    packed = bytearray(lzma.compress(data, format=lzma.FORMAT_XZ, preset=0))
    start = 12                                      # after the stream header
    size = (packed[start] + 1) * 4
    assert packed[start + 2:start + 4] == b"\x21\x01"  # LZMA2, one byte of properties
    packed[start + 4] = 37
    packed[start + size - 4:start + size] = zlib.crc32(packed[start:start + size - 4]).to_bytes(4, "little")
    return bytes(packed)


# what would take gigabytes or minutes without the bounds: in a subprocess
# with RLIMIT_AS and a timeout
HEAVY = [
    ("xz: 38 KB of [{},{},...]", lambda: lzma.compress(b"[" + b"{}," * (85 << 20) + b"{}]", preset=0),
     "larger than 32 MiB", ".json.xz"),
    ("xz: 30 MiB of [{},{},...]", lambda: lzma.compress(b"[" + b"{}," * (10 << 20) + b"{}]", preset=0),
     "values", ".json.xz"),
    ("200 modes x 2000 loads x 20000 runs", big_runs(200, 2000, 20000), "settings.modes", ".json"),
    ("2000 loads x 20000 runs of known modes",
     lambda: big_runs(1, 2000, 20000)().replace(b'"m0"', b'"fullbusy"'), "loads", ".json"),
    ("xz: a dictionary of 1.5 GiB", lambda: huge_dictionary(changed([])()), "not xz data", ".json.xz"),
    ("200,000 nested [ in xz", xz(deep(200000)), "nesting", ".json.xz"),
    ("100000 modes", changed([("settings.modes", ["fullbusy"] * 100000)]), "settings.modes", ".json"),
    ("100000 loads", changed([("loads", list(range(1, 100001)))]), "loads", ".json"),
]


def markdown(tmp_path):
    md = tmp_path / "benchmarks.md"
    md.write_text("# Benchmarks\n\n" + docs.BEGIN % "data/run.json" + "\nold\n" + docs.END + "\n")
    return md


def argv_of(command, path, tmp_path):
    return {"report": ["report", str(path), "--out", str(tmp_path / "out")],
            "verdicts-json": ["report", "--verdicts-json", str(path)],
            "compare": ["compare", str(path), str(path)],
            "docs": ["docs", str(path), str(markdown(tmp_path)), "--images", str(tmp_path / "img")]}[command]


COMMANDS = ["report", "verdicts-json", "compare", "docs"]


def in_process(argv, capsys):
    """(exit code, stderr) of cli.main(argv); a traceback's exception as
    the code."""
    try:
        rc = cli.main(argv)
    except SystemExit as e:
        rc = e.code
    except Exception as e:      # what would reach the user as a traceback
        rc = "%s: %s" % (type(e).__name__, str(e)[:200])
    out = capsys.readouterr()
    return rc, out.err


def refused_in_one_line(rc, err, command, path, field):
    name = "report" if command == "verdicts-json" else command
    assert rc == 2, (rc, err[:500])
    assert err.count("\n") == 1 and err.endswith("\n") and "Traceback" not in err, err[:500]
    head = "irqtune-bench %s: %s: " % (name, path)
    assert err.startswith(head), err[:500]
    assert err[len(head):].startswith(field), (field, err[:500])
    assert len(err) < 400, err[:500]


@pytest.mark.parametrize("command", COMMANDS)
def test_the_base_run_is_read_by_every_command(tmp_path, capsys, command):
    path = tmp_path / "run.json"
    path.write_bytes(changed([])())
    rc, err = in_process(argv_of(command, path, tmp_path), capsys)
    assert rc == 0, err


@pytest.mark.parametrize("path", REAL_RUNS, ids=lambda p: p.name)
def test_the_real_runs_pass(path):
    run = saved.load(path)
    assert run["runs"]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("case,make,field,suffix", CASES, ids=[c[0] for c in CASES])
def test_a_crafted_run_file_is_one_line(tmp_path, capsys, command, case, make, field, suffix):
    path = tmp_path / ("crafted" + suffix)
    path.write_bytes(make())
    t0 = time.monotonic()
    rc, err = in_process(argv_of(command, path, tmp_path), capsys)
    took = time.monotonic() - t0
    refused_in_one_line(rc, err, command, path, field)
    assert took < CASE_SECONDS, took


MADE = {}        # the heavy cases' bytes, made once for the four commands


def limited():
    resource.setrlimit(resource.RLIMIT_AS, (HEAVY_MEMORY, HEAVY_MEMORY))


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("case,make,field,suffix", HEAVY, ids=[c[0] for c in HEAVY])
def test_a_heavy_crafted_run_file_is_one_line_in_bounded_memory_and_time(tmp_path, command, case, make, field,
                                                                        suffix):
    path = tmp_path / ("crafted" + suffix)
    if case not in MADE:
        MADE[case] = make()
    path.write_bytes(MADE[case])
    t0 = time.monotonic()
    try:
        res = subprocess.run([sys.executable, "-m", "irqtune_bench", *argv_of(command, path, tmp_path)],
                             capture_output=True, text=True, timeout=3 * CASE_SECONDS, preexec_fn=limited,
                             env={"PYTHONPATH": str(REPO / "bench"), "PATH": "/usr/bin:/bin"})
    except subprocess.TimeoutExpired:
        pytest.fail("still computing after %.0f s" % (3 * CASE_SECONDS))
    took = time.monotonic() - t0
    refused_in_one_line(res.returncode, res.stderr, command, path, field)
    assert took < CASE_SECONDS, took
