# SPDX-License-Identifier: GPL-2.0-or-later
"""The bench's one output guard (issue 47 item 6): every string from a run
file, an argument or a remote host goes through guard.shown() before a
terminal, a log or a generated document - and, where it lands in
markdown, through guard.md() too, so that a '|' cannot add a table cell
and a backtick, '<' or '[' cannot start a code span, HTML or a link.

Reproduced before: a run file whose mode names and testbed strings held a
terminal title (ESC ] 0; ... BEL) and a clear screen (ESC [2J) sent both
to the terminal through `report`, `compare` and `docs`, and into the
.txt and .md files; a newline in a mode name forged a table row."""

import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from irqtune_bench import guard, orchestrator, preflight

REPO = Path(__file__).resolve().parents[3]
TITLE = "\x1b]0;owned\x07"
CLEAR = "\x1b[2J"
# and a "$" pair, which matplotlib would read as (malformed) mathtext
EVIL = "m%s|`<b>[x](y)\n| forged |%s $\\frac$" % (TITLE, CLEAR)
# what a terminal acts on, and the line structure: none of it may be
# written raw (a newline only where the bench itself ends a line)
RAW = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def crafted_run(topology="-"):
    """A run file with a string of the attacker's in every string field the
    report, compare and docs read."""
    modes = ["suspend20", "fullbusy", "auto", "base"]     # a crafted mode name: the schema refuses it
    runs = []
    for m in modes:
        for rnd in (1, 2):
            for topo in ([topology] if topology != "both" else ["shared", "pinned"]):
                r = {"mode": m, "offered": 100, "round": rnd, "topology": topo, "qps": 100, "p50_us": 50,
                     "p99_us": 90 + rnd, "ipr_serving": 1000.0 + rnd, "serving_wait_pct": 1.0,
                     "attempts": [{"reasons": [EVIL + " 300 > 250"]}], "reruns": 1,
                     "held": {"after": [[100, 1000000, 2000000]]}}
                runs.append(r)
    return {"settings": {"modes": modes, "repeats": 8, "seconds": 20.0, "conns": 1, "warmup": 2.0},
            "loads": [100], "profile": EVIL, "command": EVIL, "started": EVIL,
            "who_sets": {EVIL: EVIL}, "rule": {EVIL: 250.0},
            "testbed": {"summary": EVIL, "insns": EVIL, "serving_thread": EVIL, "kernel": EVIL,
                        "machine": {"host_cpu": EVIL, "host_cpus": 2, "host_mem_gib": 1.0,
                                    "host_kernel": EVIL, "qemu": EVIL},
                        "guest": {"vcpus": 4, "cpu_model": EVIL, "nic_queues": 4, "cmdline_extra": EVIL}},
            "saturation": {"rate": 1000, "side": EVIL, "probes": [{"offered": 100, "kept_up": True}]},
            "recommend": {"doctor": EVIL, "offered": 100, "failed": EVIL},
            "placement": {"what": EVIL, "lines": [EVIL, EVIL]},
            "auto_settles": [{"round": 1, "failed": EVIL}, {"round": 2, "seconds": 20, "offered": 100,
                                                           "held": [[100, 1000000, 2000000]]}],
            "runs": runs}


def bench(*argv):
    return subprocess.run([sys.executable, "-m", "irqtune_bench", *argv], capture_output=True, text=True,
                          cwd=REPO, env={"PYTHONPATH": str(REPO / "bench"), "PATH": "/usr/bin:/bin"},
                          timeout=120)


def assert_clean(text, where):
    raw = RAW.findall(text)
    assert not raw, (where, sorted(set(raw)), text[:2000])
    # a newline in a run file's string ends no line: no line begins with
    # what followed it
    assert not any(line.startswith("| forged") for line in text.splitlines()), (where, text[:2000])


def assert_tables_intact(markdown, where):
    """Every row of each table has its header's cells: no '|' of the run
    file's split one; no raw HTML or link made by one.  A fenced block
    (the controls, slice outliers, auto's values, the step test) is text
    markdown does not act on - only its fence may end it, and no line in
    it begins with the run file's text: each is a heading of the bench's
    own or indented."""
    columns = None
    fenced = re.findall(r"^```\n(.*?)^```$", markdown, re.S | re.M)
    for block in fenced:
        assert all(line.startswith(("auto (", "busy-polling controls", "1 s slices", "step test", "  "))
                   for line in block.splitlines()), (where, block)
    outside = re.sub(r"^```\n.*?^```$", "", markdown, flags=re.S | re.M)
    for line in outside.splitlines():
        if not line.startswith("|"):
            columns = None
            continue
        cells = len(re.findall(r"(?<!\\)\|", line))
        columns = columns or cells
        assert cells == columns, (where, line)
    assert "<b>" not in outside.replace("\\<b\\>", ""), where
    assert "[x](y)" not in outside.replace("\\[x\\](y)", ""), where


@pytest.mark.parametrize("topology", ["-", "both"])
def test_report_of_a_crafted_run_writes_and_prints_nothing_raw(tmp_path, topology):
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps(crafted_run(topology)))
    res = bench("report", str(saved), "--out", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    assert_clean(res.stdout, "report stdout")
    assert_clean(res.stderr, "report stderr")
    assert "\\x1b]0;owned\\x07" in res.stdout         # shown escaped, not dropped
    assert_clean((tmp_path / "out" / "run.txt").read_text(), "run.txt")
    md = (tmp_path / "out" / "run.md").read_text()
    assert_clean(md, "run.md")
    assert_tables_intact(md, "run.md")
    # the JSON is the run as it was (json.dumps escapes control characters)
    assert json.loads((tmp_path / "out" / "run.json").read_text()) == crafted_run(topology)


def test_compare_of_crafted_runs_and_file_names_prints_nothing_raw(tmp_path):
    names = []
    for i, label in enumerate(("a%s|" % TITLE, "b%s`<i>" % CLEAR)):
        path = tmp_path / ("%d%s.json" % (i, label))
        path.write_text(json.dumps(crafted_run()))
        names.append(str(path))
    res = bench("compare", *names)
    assert res.returncode == 0, res.stderr
    assert_clean(res.stdout, "compare stdout")
    assert_tables_intact(res.stdout, "compare stdout")
    one = tmp_path / "both.json"
    one.write_text(json.dumps(crafted_run("both")))
    res = bench("compare", str(one))
    assert res.returncode == 0, res.stderr
    assert_clean(res.stdout, "compare of one file")
    assert_tables_intact(res.stdout, "compare of one file")


def test_docs_of_a_crafted_run_generate_nothing_raw(tmp_path):
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps(crafted_run("both")))
    md = tmp_path / "benchmarks.md"
    md.write_text("# Benchmarks\n\n<!-- irqtune-bench docs: generated from run.json - edit the run, not this"
                  " -->\n<!-- irqtune-bench docs: end -->\n")
    res = bench("docs", str(saved), str(md), "--images", str(tmp_path / "img"))
    assert res.returncode == 0, res.stderr
    assert_clean(res.stdout + res.stderr, "docs output")
    text = md.read_text()
    assert_clean(text, "the docs' markdown")
    assert_tables_intact(text, "the docs' markdown")


def test_check_shows_what_the_hosts_said_escaped(monkeypatch, capsys):
    """A remote host's answers (and the destinations named) reach the
    terminal escaped, one line each."""
    from irqtune_bench import ssh

    class Testbed:
        def __init__(self, settings):
            pass

        def check(self):
            return [preflight.Finding(preflight.FAIL, "ssh root@s (server): " + EVIL, "fix " + EVIL),
                    preflight.Finding(preflight.OK, "kernel " + EVIL, None)]

        def finish(self):
            pass
    monkeypatch.setattr(ssh, "SshTestbed", Testbed)
    assert orchestrator.check(types.SimpleNamespace()) == 1
    out = capsys.readouterr().out
    assert_clean(out, "check")
    assert len(out.splitlines()) == 3, out       # two findings, one fix line


def test_a_failed_check_and_the_log_show_remote_text_escaped(monkeypatch, capsys):
    from irqtune_bench import ssh
    from irqtune_bench.guard import BenchError

    class Testbed:
        def __init__(self, settings):
            pass

        def check(self):
            raise BenchError("ssh root@s: " + EVIL)

        def finish(self):
            pass
    monkeypatch.setattr(ssh, "SshTestbed", Testbed)
    assert orchestrator.check(types.SimpleNamespace()) == 1
    log = orchestrator.logger()
    log("round 1: mode %s could not be set: %s" % (EVIL, EVIL))
    err = capsys.readouterr().err
    assert_clean(err, "check and log")
    assert len(err.splitlines()) == 2, err


@pytest.mark.parametrize("server,client", [("root@s" + TITLE, "root@c"), ("root@s", "c\nd"),
                                           ("root@s", "c" + CLEAR)])
def test_check_refuses_a_destination_holding_control_characters(server, client):
    res = bench("check", "--server", server, "--client", client, "--server-addr", "192.0.2.1")
    assert res.returncode == 2 and res.stdout == "", res
    assert res.stderr.count("\n") == 1 and "--server/--client" in res.stderr, res.stderr
    assert_clean(res.stderr, "refusal")


def test_wrote_lines_show_out_and_name_escaped(tmp_path):
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps(crafted_run()))
    out = tmp_path / ("out" + TITLE + CLEAR)
    res = bench("report", str(saved), "--out", str(out))
    assert res.returncode == 0, res.stderr
    wrote = [line for line in res.stdout.splitlines() if line.startswith("wrote ")]
    assert wrote and all("\\x1b]0;owned\\x07\\x1b[2J" in line for line in wrote), wrote
    assert_clean(res.stdout, "wrote lines")
    assert sorted(os.listdir(out))[:1] == ["run-insn.png"] or "run.json" in os.listdir(out)


def test_md_escapes_what_markdown_acts_on_and_leaves_plain_text():
    assert guard.md("suspend20") == "suspend20"
    assert guard.md("skew_tick=1 -cpu max,-erms (Debian 1:7.2+dfsg)") == "skew_tick=1 -cpu max,-erms (Debian 1:7.2+dfsg)"
    assert guard.md("a|b`c<d>[e]\\f") == "a\\|b\\`c\\<d\\>\\[e\\]\\\\f"
    assert guard.md("x" + TITLE) == "x\\\\x1b\\]0;owned\\\\x07"
