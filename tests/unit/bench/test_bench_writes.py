# SPDX-License-Identifier: GPL-2.0-or-later
"""irqtune-bench writes its results, plots and the docs' markdown through
its one writer (files.write_file; tests/unit/kernel/test_root_writes.py holds it to
the library's replace_file): in an --out directory another user can write
(or the default `.` in a shared one), their symlink to a root-only file is
refused in one line, exit non-zero, and the file stays as it was.

Reproduced before (issue 47 item 2): `report`, `run` (each run's save and
the final report) and `docs` wrote with Path.write_text, through the
symlink: the root 0600 file was replaced by the report's text."""

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from irqtune_bench import orchestrator, runner

REPO = Path(__file__).resolve().parents[3]
SAVED = {"settings": {"modes": ["suspend20", "fullbusy"], "repeats": 2, "seconds": 2.0, "conns": 1,
                      "warmup": 0.5},
         "loads": [100], "who_sets": {}, "testbed": {"summary": "a saved run"}, "saturation": None,
         "runs": [{"mode": m, "offered": 100, "round": rnd, "topology": "-", "qps": 100, "p50_us": 50,
                   "p99_us": 90 + rnd, "ipr_serving": 10000.0 + rnd}
                  for m in ("suspend20", "fullbusy") for rnd in (1, 2)]}


def bench(*argv, umask=0o022):
    return subprocess.run([sys.executable, "-m", "irqtune_bench", *argv], capture_output=True, text=True,
                          cwd=REPO, env={"PYTHONPATH": str(REPO / "bench"), "PATH": "/usr/bin:/bin"},
                          timeout=120, preexec_fn=lambda: os.umask(umask))


@pytest.fixture
def victim(tmp_path):
    """A root-only file another user would like overwritten."""
    path = tmp_path / "victim"
    path.write_text("root's own\n")
    path.chmod(0o600)
    return path


def untouched(victim):
    st = victim.lstat()
    return victim.read_text() == "root's own\n" and st.st_mode & 0o7777 == 0o600 and st.st_nlink == 1


def one_line_refusal(res, path):
    assert res.returncode not in (0, None), res
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    assert str(path) in res.stderr and "not a regular file" in res.stderr, res.stderr


@pytest.mark.parametrize("suffix", [".json", ".txt", ".md", "-p99.png", "-insn.png"])
def test_report_refuses_a_symlink_among_its_results(tmp_path, victim, suffix):
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps(SAVED))
    out = tmp_path / "shared"
    out.mkdir()
    os.symlink(victim, out / ("run" + suffix))
    res = bench("report", str(saved), "--out", str(out))
    one_line_refusal(res, out / ("run" + suffix))
    assert untouched(victim)


@pytest.mark.parametrize("umask", [0o077, 0o000])
def test_report_writes_each_result_with_its_mode(tmp_path, umask):
    """Results are for reading (and committing): 0644 whatever the umask."""
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps(SAVED))
    res = bench("report", str(saved), "--out", str(tmp_path / "out"), umask=umask)
    assert res.returncode == 0, res.stderr
    written = set(os.listdir(tmp_path / "out"))
    plots = {"run-p99.png", "run-insn.png"} if "run-p99.png" in written else set()
    assert written == {"run.json", "run.txt", "run.md"} | plots
    for name in written:
        assert (tmp_path / "out" / name).stat().st_mode & 0o7777 == 0o644, name
    assert json.loads((tmp_path / "out" / "run.json").read_text()) == SAVED


def never_run(*args, **kwargs):
    raise AssertionError("the run started although its results could not be written")


@pytest.mark.parametrize("suffix", [".json", ".txt", ".md"])
def test_run_refuses_a_symlink_among_its_results_before_it_starts(tmp_path, victim, monkeypatch, capsys, suffix):
    monkeypatch.setattr(runner, "run_bench", never_run)
    os.symlink(victim, tmp_path / ("bench" + suffix))
    tb = types.SimpleNamespace(finish=lambda: None)
    args = types.SimpleNamespace(out=str(tmp_path))
    assert orchestrator.execute(tb, args, "bench", "irqtune-bench run") == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a regular file" in err and "bench" + suffix in err, err
    assert untouched(victim)


def test_a_symlink_placed_during_the_run_stops_its_save(tmp_path, victim, monkeypatch, capsys):
    """Another user swaps the results file for a symlink while the bench
    runs: the next save is refused, the run stops (the runner's finally
    blocks put the server back) and the file stays."""
    def one_run(tb, args, log, report, save):
        report.update(loads=[100], runs=[])
        save()
        os.unlink(tmp_path / "bench.json")
        os.symlink(victim, tmp_path / "bench.json")
        save()
        raise AssertionError("saved through the symlink")
    monkeypatch.setattr(runner, "run_bench", one_run)
    finished = []
    tb = types.SimpleNamespace(finish=lambda: finished.append(True))
    assert orchestrator.execute(tb, types.SimpleNamespace(out=str(tmp_path)), "bench", "irqtune-bench run") == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a regular file" in err, err
    assert untouched(victim) and finished == [True]


DOCS = "# Benchmarks\n\n<!-- irqtune-bench docs: generated from run.json - edit the run, not this -->\n" \
       "<!-- irqtune-bench docs: end -->\n\nThe docs' own text.\n"


def test_docs_refuses_a_symlink_for_its_markdown(tmp_path, victim):
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps(SAVED))
    victim.write_text(DOCS)         # a root-only markdown file with the markers
    link = tmp_path / "benchmarks.md"
    os.symlink(victim, link)
    res = bench("docs", str(saved), str(link), "--images", str(tmp_path / "img"))
    assert res.returncode not in (0, None) and res.stderr.count("\n") == 1, res
    assert "Traceback" not in res.stderr and str(link) in res.stderr, res.stderr
    assert victim.read_text() == DOCS and victim.stat().st_mode & 0o777 == 0o600


def test_docs_refuses_a_symlink_among_its_plots(tmp_path, victim):
    pytest.importorskip("matplotlib")
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps(SAVED))
    md = tmp_path / "benchmarks.md"
    md.write_text(DOCS)
    (tmp_path / "img").mkdir()
    os.symlink(victim, tmp_path / "img" / "run-verdicts-p99.png")
    res = bench("docs", str(saved), str(md), "--images", str(tmp_path / "img"))
    one_line_refusal(res, tmp_path / "img" / "run-verdicts-p99.png")
    assert untouched(victim)


def test_docs_rewrites_its_markdown_as_a_new_file_with_its_mode(tmp_path):
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps(SAVED))
    md = tmp_path / "benchmarks.md"
    md.write_text(DOCS)
    inode = md.stat().st_ino
    res = bench("docs", str(saved), str(md), "--images", str(tmp_path / "img"))
    assert res.returncode == 0, res.stderr
    assert md.stat().st_ino != inode and md.stat().st_mode & 0o7777 == 0o644
    assert md.read_text().endswith("<!-- irqtune-bench docs: end -->\n\nThe docs' own text.\n")
    assert sorted(os.listdir(tmp_path)) == ["benchmarks.md", "img", "run.json"]
