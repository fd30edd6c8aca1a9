# SPDX-License-Identifier: GPL-2.0-or-later
"""irqtune-bench's command line: every bad argument is refused in one line
naming the argument, the value and what is accepted, exit 2, before any
host is contacted; the lab's script takes the same run options."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from support.bench import RUN, bench

REPO = Path(__file__).resolve().parents[3]
# what every saved run's settings hold (the report's header and the docs read them)
SETTINGS = {"repeats": 1, "seconds": 1.0, "warmup": 0.0, "conns": 1}


@pytest.mark.parametrize("extra,words", [
    (["--modes", "base,nosuch"], ["--modes base,nosuch", "'nosuch'", "accepted", "suspend20"]),
    (["--modes", "base,base"], ["--modes base,base", "a mode named twice"]),
    (["--loads", "1000,x"], ["--loads 1000,x", "accepted"]),
    (["--loads", "0"], ["--loads 0", "1 to 2000000 requests/s each"]),
    (["--fractions", "0.5,nan"], ["--fractions 0.5,nan", "accepted"]),
    (["--repeats", "0"], ["--repeats 0", "accepted 1 to 100"]),
    (["--seconds", "inf"], ["--seconds inf", "accepted 0.5 to 120"]),
    (["--conns", "65"], ["--conns 65", "accepted 1 to 64"]),
    (["--port", "0"], ["--port 0", "accepted 1 to 65535"]),
    (["--service=-x"], ["--service", "accepted a systemd unit name"]),
    (["--probe-start", "5000", "--probe-max", "1000"], ["--probe-start 5000", "--probe-max 1000"]),
])
def test_bad_run_argument_is_one_line(extra, words):
    res = bench(*RUN, *extra)
    assert res.returncode == 2, res
    assert res.stdout == "" and res.stderr.count("\n") == 1, res.stderr
    assert res.stderr.startswith("irqtune-bench run: ")
    for w in words:
        assert w in res.stderr, (w, res.stderr)


def test_server_addr_and_destinations_checked():
    res = bench("run", "--server", "root@s", "--client", "root@c", "--server-addr", "server.example")
    assert res.returncode == 2 and "--server-addr server.example: accepted an IPv4 address" in res.stderr
    res = bench("run", "--server=-oProxyCommand=x", "--client", "root@c", "--server-addr", "192.0.2.1")
    assert res.returncode == 2 and "accepted an ssh destination" in res.stderr, res.stderr


# issue 39 item 6: what int() and float() take beyond ASCII digits -
# other scripts' digits, "_" between digits, a sign, exponents, nan/inf
@pytest.mark.parametrize("option,value", [
    ("--loads", "\u0661\u0663\u0660\u0660"), ("--loads", "1_000"), ("--loads", "+1000"),
    ("--repeats", "\u0663"), ("--repeats", "+3"), ("--repeats", "1_0"),
    ("--fractions", "0.5,\u0660.\u0665"), ("--fractions", "+0.5"), ("--fractions", "5e-1"),
    ("--fractions", "0_.5"), ("--seconds", "\u0662"), ("--seconds", "2_0"), ("--warmup", "+1"),
    ("--conns", "\uff11"), ("--memcached-cpu", "\u0662"), ("--port", "1_1211"), ("--seed", "+1"),
    ("--probe-start", "\u0661000"), ("--probe-max", "2_000"), ("--probe-seconds", "1e0"),
    ("--recommend-seconds", "\u0665"),
])
def test_numbers_take_ascii_digits_only(option, value):
    res = bench(*RUN, option, value)
    assert res.returncode == 2, res
    assert res.stdout == "" and res.stderr.count("\n") == 1, res.stderr
    line = res.stderr
    assert line.startswith("irqtune-bench run: %s " % option), line
    assert "accepted" in line and "ASCII digits" in line, line
    # the value is named as given (escaped where it is not ASCII)
    assert value.encode("ascii", "backslashreplace").decode() in line, line


def test_the_run_settings_are_parsed_once_and_the_arguments_left_alone():
    from irqtune_bench import cli
    ap = cli.Parser(prog="t")
    cli.add_run_options(ap, out_default=".")
    args = ap.parse_args(["--quick", "--loads", "300,100", "--modes", "base,suspend20"])
    before = dict(vars(args))
    s = cli.run_settings(args)
    assert vars(args) == before          # the validator changes nothing
    assert (s.repeats, s.seconds, s.loads, s.modes) == (1, 2.0, [100, 300], ["base", "suspend20"])
    assert s.fractions == [0.2, 0.6, 0.9]       # judged loads stay at or below 90 %


def test_argparse_refusals_are_one_line_too():
    res = bench("run", "--server", "root@s")
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "required" in res.stderr, res.stderr
    res = bench(*RUN, "--repeats", "three")
    assert res.returncode == 2 and "--repeats" in res.stderr and "three" in res.stderr, res.stderr


def test_compare_refuses_a_run_of_one_topology(tmp_path):
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"settings": dict(SETTINGS, modes=["base"]), "loads": [100],
                                "runs": [{"mode": "base", "offered": 100, "topology": "-", "p99_us": 1}]}))
    res = bench("compare", str(path))
    assert res.returncode == 2 and "holds one topology (-)" in res.stderr, res.stderr
    res = bench("compare", str(tmp_path / "missing.json"))
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "missing.json" in res.stderr


@pytest.mark.parametrize("content,words", [
    ("[]", ["a JSON object"]),
    ('{"settings": {"modes": ["base"]}, "loads": [100]}', ["runs"]),
    ('{"settings": {"modes": "base"}, "loads": [100], "runs": []}', ["settings.modes"]),
    ('{"settings": {"modes": ["base"]}, "loads": [100], "runs": 3}', ["runs"]),
    ('{"settings": {"modes": ["base"]}, "loads": ["x"], "runs": []}', ["loads"]),
    ('{"settings": {"modes": ["base"]}, "loads": [100], "runs": [{"mode": "base"}]}', ["runs[0].offered: missing"]),
    ('{"settings": {"modes": ["base"]}, "loads": [100], "runs": [{"mode": "base", "offered": 100, '
     '"p99_us": "fast"}]}', ['runs[0].p99_us: "fast"']),
    ('{"settings": 5, "loads": [100], "runs": []}', ["settings"]),
    ("{\"settings\": ", ["not JSON"]),
])
@pytest.mark.parametrize("command", ["report", "compare"])
def test_report_and_compare_refuse_a_file_of_the_wrong_shape(tmp_path, command, content, words):
    path = tmp_path / "wrong.json"
    path.write_text(content)
    res = bench(command, str(path), "--out", str(tmp_path)) if command == "report" else bench(command, str(path))
    assert res.returncode == 2, res
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.startswith("irqtune-bench %s: %s: " % (command, path)), res.stderr
    for w in words:
        assert w in res.stderr, (w, res.stderr)


@pytest.mark.parametrize("command", ["report", "compare"])
def test_report_and_compare_refuse_a_fifo_without_waiting(tmp_path, command):
    fifo = tmp_path / "run.json"
    os.mkfifo(fifo)
    res = bench(command, str(fifo))         # a writer never comes: a read would hang
    assert res.returncode == 2, res
    assert res.stderr == "irqtune-bench %s: %s: not a regular file\n" % (command, fifo), res.stderr
    res = bench(command, str(tmp_path))
    assert res.returncode == 2 and res.stderr.endswith(": not a regular file\n"), res.stderr


def test_report_redoes_the_files_of_a_saved_run(tmp_path):
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps({
        "settings": dict(SETTINGS, modes=["base", "suspend20"], seconds=2.0), "loads": [100],
        "who_sets": {}, "testbed": {"summary": "a saved run"}, "saturation": None,
        "runs": [{"mode": m, "offered": 100, "topology": "-", "qps": 100, "p50_us": 50, "p99_us": 90}
                 for m in ("base", "suspend20")]}))
    res = bench("report", str(saved), "--out", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    assert "memcached on a saved run" in (tmp_path / "out" / "run.txt").read_text()
    assert "| suspend20 | 1 |" in (tmp_path / "out" / "run.md").read_text()


def test_lab_script_takes_the_same_run_options():
    env = {"PYTHONPATH": "%s:%s" % (REPO / "tests", REPO / "bench"), "PATH": "/usr/bin:/bin"}
    script = str(REPO / "tests/lab/bench/memcached_modes.py")
    res = subprocess.run([sys.executable, script, "--repeats", "0"], capture_output=True, text=True,
                         timeout=60, env=env)
    assert res.returncode == 2 and res.stderr == "lab-bench: --repeats 0: accepted 1 to 100 (ASCII digits)\n", res.stderr
    res = subprocess.run([sys.executable, script, "--vcpus", "2"], capture_output=True, text=True,
                         timeout=60, env=env)
    assert res.returncode == 2 and "--memcached-cpu 2: accepted a vCPU of the guest, 0 to 1" in res.stderr


def test_each_installation_names_its_own_generator_and_shim(capsys):
    """The administrator's machine asks the client and the server where
    their irqtune-bench keeps mcload and the shim (lib or lib64)."""
    from irqtune_bench import cli
    assert cli.main(["paths"], mcload="/opt/x/mcload", shim="/usr/lib/irqtune-bench/epoll_slice.so") == 0
    assert json.loads(capsys.readouterr().out) == {"mcload": "/opt/x/mcload",
                                                   "shim": "/usr/lib/irqtune-bench/epoll_slice.so"}


@pytest.mark.parametrize("command", ["run", "check", "local", "report", "compare", "docs"])
def test_every_option_is_in_the_man_page(command):
    """Issue 41 item 6: irqtune-bench(1) names every option --help lists."""
    man = (REPO / "bench" / "irqtune-bench.1").read_text().replace("\\-", "-")
    res = bench(command, "--help")
    assert res.returncode == 0, res.stderr
    options = set(re.findall(r"(--[a-z][a-z-]*)", res.stdout)) - {"--help"}
    assert command not in ("run", "check", "local") or len(options) > 20
    missing = sorted(o for o in options if not re.search(re.escape(o) + r"\b", man))
    assert missing == [], missing


def test_docs_refuses_a_fifo_for_its_markdown(tmp_path):
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"settings": dict(SETTINGS, modes=["base"]), "loads": [100], "runs": []}))
    fifo = tmp_path / "benchmarks.md"
    os.mkfifo(fifo)
    res = bench("docs", str(run), str(fifo), "--images", str(tmp_path / "img"))
    assert res.returncode == 2 and res.stderr == "irqtune-bench docs: %s: not a regular file\n" % fifo, res.stderr
