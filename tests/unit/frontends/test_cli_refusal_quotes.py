# SPDX-License-Identifier: GPL-2.0-or-later
"""`irqtune`'s refusals quote at most about 80 characters of a value
(issue 47 item 10): argparse quotes a value whole in its own refusals - an
invalid --format choice, an unknown command, an unrecognized argument -
so a 100 KB value was a 100 KB line.  Now each is shown() escaped and cut."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
QUOTED_AT_MOST = 90         # "about 80 characters of a value"


def irqtune(*argv):
    return subprocess.run([sys.executable, "-m", "irqtune", *argv], capture_output=True, text=True,
                          cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, timeout=60)


def longest_run(text):
    """The longest run of one character: how much of a value was quoted."""
    return max((len(m.group()) for m in re.finditer(r"(.)\1*", text)), default=0)


@pytest.mark.parametrize("argv,words", [
    (["metrics", "--format", "x" * 4000], ["--format", "invalid choice", "openmetrics"]),
    (["metrics", "--format", "x" * 100000], ["--format"]),
    (["metrics", "--output", "x" * 4000, "--format", "y" * 4000], ["--format"]),
    (["x" * 4000], ["invalid choice"]),
    (["status", "--bogus=" + "x" * 4000], ["unrecognized arguments"]),
])
def test_irqtune_refusals_quote_at_most_about_80_characters(argv, words):
    res = irqtune(*argv)
    assert res.returncode == 2 and res.stdout == "", (res.returncode, res.stderr[:500])
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr[-2000:]
    assert longest_run(res.stderr) <= QUOTED_AT_MOST and len(res.stderr) < 600, res.stderr[:700]
    for word in words:
        assert word in res.stderr, (word, res.stderr)


def test_a_control_character_in_an_unrecognized_argument_is_escaped():
    res = irqtune("status", "--x=\x1b]0;owned\x07")
    assert res.returncode == 2 and "\x1b" not in res.stderr and "\\x1b" in res.stderr, res.stderr
