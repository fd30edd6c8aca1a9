# SPDX-License-Identifier: GPL-2.0-or-later
"""docs/benchmarks.md's run-derived part is what `make bench-docs`
(irqtune-bench docs) makes of the committed run docs/data/lab-bench.json.xz:
regenerated here and compared, byte for byte.  A changed run or a hand
edit between the markers fails this test; so does a change to the report
code that changes what the run says (then regenerate and commit both)."""

import json
import lzma
import shutil
from pathlib import Path

from irqtune_bench import docs, saved

REPO = Path(__file__).resolve().parents[3]
RUN = REPO / "docs" / "data" / "lab-bench.json.xz"
MD = REPO / "docs" / "benchmarks.md"


def regenerate(tmp_path, run):
    (tmp_path / "docs").mkdir()
    md = tmp_path / "docs" / "benchmarks.md"
    shutil.copy(MD, md)
    assert docs.regenerate(run, md, tmp_path / "docs" / "img") == 0
    return md


def test_the_docs_are_generated_from_the_committed_run(tmp_path):
    md = regenerate(tmp_path, saved.load(RUN))
    assert md.read_text() == MD.read_text(), "docs/benchmarks.md differs from `make bench-docs`' output"
    shown = [line.split("](img/", 1)[1].rstrip(")") for line in MD.read_text().splitlines()
             if "](img/lab-bench-verdicts-" in line]
    # every plot the docs show is committed, and regenerated when
    # matplotlib is there
    for name in shown:
        assert (REPO / "docs" / "img" / name).is_file(), name
        if any((tmp_path / "docs" / "img").iterdir()):
            assert (tmp_path / "docs" / "img" / name).is_file(), name


def test_a_changed_run_changes_the_docs(tmp_path):
    run = json.loads(lzma.decompress(RUN.read_bytes()))
    kept = [r for r in run["runs"] if r["mode"] == "suspend20" and not r.get("failed")]
    kept[0]["p99_us"] *= 7
    md = regenerate(tmp_path, run)
    assert md.read_text() != MD.read_text()


def test_the_committed_run_is_small_and_keeps_histograms():
    assert RUN.stat().st_size < 4 << 20
    run = saved.load(RUN)
    kept = [r for r in run["runs"] if not r.get("failed")]
    assert kept and all(r.get("hist") and r.get("slices_p99_us") for r in kept)


def test_each_run_regenerates_its_own_region(tmp_path):
    """Issue 48: benchmarks.md holds the real-kernel run's region and the
    emulated one's; a run regenerates the region its marker names, with
    plots of its own name, and leaves the other as it was."""
    run = saved.load(RUN)
    md = tmp_path / "b.md"
    md.write_text("# B\n\n" + docs.BEGIN % "data/local-bench.json.xz" + "\nlocal\n" + docs.END + "\n\ntext\n\n"
                  + docs.BEGIN % "data/lab-bench.json.xz" + "\nlab\n" + docs.END + "\n")
    assert docs.regenerate(run, md, tmp_path / "img", run_name="lab-bench.json.xz") == 0
    text = md.read_text()
    assert "\nlocal\n" in text and "\nlab\n" not in text
    assert "](img/lab-bench-verdicts-p99.png)" in text and "local-bench-verdicts" not in text
    assert docs.regenerate(run, md, tmp_path / "img", run_name="other.json") == 1     # two regions, none named
    assert md.read_text() == text
