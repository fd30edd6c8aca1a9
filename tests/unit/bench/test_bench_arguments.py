# SPDX-License-Identifier: GPL-2.0-or-later
"""irqtune-bench's arguments, as a careless operator or a script gives
them (issue 47 item 10): each refusal is one line, exit 2, quoting at most
about 80 characters of the value - also argparse's own refusals and
--modes (`irqtune`'s own: test_cli_refusal_quotes.py) - and nothing ends
in a traceback.

Reproduced before: a 100,000-digit number on any integer option ended in
int()'s ValueError (Python's 4300-digit limit) as a traceback; too long
--name / --out, a non-UTF-8 markdown file, `report --out` naming a file,
`hold` port -1 or 65536 and Ctrl-C were tracebacks; `--server ''` was
taken; the internal commands' ports took other scripts' digits, "_" and
"+"; refusals echoed a 100 KB value whole."""

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from irqtune_bench import cli, guard

REPO = Path(__file__).resolve().parents[3]
CHECK = ["check", "--server", "root@server.invalid", "--client", "root@client.invalid",
         "--server-addr", "192.0.2.1"]
HUGE = "1" * 100000
LONG = "x" * 5000
QUOTED_AT_MOST = 90         # "about 80 characters of a value"


def bench(*argv, **kwargs):
    return subprocess.run([sys.executable, "-m", "irqtune_bench", *argv], capture_output=True, text=True,
                          cwd=REPO, env={"PYTHONPATH": str(REPO / "bench"), "PATH": "/usr/bin:/bin"},
                          timeout=60, **kwargs)


def longest_run(text):
    """The longest run of one character: how much of a value was quoted."""
    return max((len(m.group()) for m in re.finditer(r"(.)\1*", text)), default=0)


def assert_refused(res, *words, code=2):
    assert res.returncode == code, (res.returncode, res.stderr[-500:])
    assert res.stdout == "", res.stdout[:500]
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr[-2000:]
    assert longest_run(res.stderr) <= QUOTED_AT_MOST and len(res.stderr) < 600, res.stderr[:700]
    for word in words:
        assert word in res.stderr, (word, res.stderr)


INTEGER_OPTIONS = ("--loads", "--repeats", "--conns", "--memcached-cpu", "--port", "--probe-start",
                   "--probe-max", "--seed", "--reruns", "--generators")
DECIMAL_OPTIONS = ("--fractions", "--seconds", "--warmup", "--probe-seconds", "--recommend-seconds")


@pytest.mark.parametrize("option", INTEGER_OPTIONS + DECIMAL_OPTIONS)
@pytest.mark.parametrize("value", [HUGE, "9" * 4400, "1" * 25])
def test_a_number_of_many_digits_is_one_refusal(option, value):
    assert_refused(bench(*CHECK, option, value), option)


@pytest.mark.parametrize("whole", [True, False])
def test_the_number_parser_bounds_digits_before_converting(whole):
    for text in (HUGE, "0" * 4400 + "1", "1" * 21, "1." + "1" * 4400):
        with pytest.raises(guard.BadArgument) as err:
            cli.number("--x", text, 0, 10 ** 30, whole=whole)
        assert len(str(err.value)) < 200 and longest_run(str(err.value)) <= QUOTED_AT_MOST


BAD_PORTS = ["-1", "0", "65536", "\u0661\u0662", "1_0", "+80", " 80", "80 ", "\uff18\uff10", HUGE, "", "0x50"]


@pytest.mark.parametrize("value", BAD_PORTS)
def test_hold_port_takes_ascii_digits_in_range(value):
    assert_refused(bench("hold", "127.0.0.1", value, "--source-ports", "40000"),
                   "longer than" if len(value) > 4096 else "port")


@pytest.mark.parametrize("value", ["40000,-1", "40000,\u0662", "1_0", "+1", "70000", "", "1,,2", HUGE])
def test_hold_source_ports_take_ascii_digits_in_range(value):
    assert_refused(bench("hold", "127.0.0.1", "11211", "--source-ports", value), "--source-ports")


@pytest.mark.parametrize("command", [["incoming"], ["server-facts", "eth9"]])
@pytest.mark.parametrize("value", ["-1", "65536", "\u0661\u0662", "1_0", "+80", HUGE])
def test_server_side_ports_take_ascii_digits_in_range(command, value):
    assert_refused(bench(*command, "--port", value), "--port")


@pytest.mark.parametrize("value", ["-1", "8192", "\u0662", "1_0", "+2", HUGE])
def test_server_facts_cpu_takes_ascii_digits_in_range(value):
    assert_refused(bench("server-facts", "eth9", "--cpu", value), "--cpu")


@pytest.mark.parametrize("option", ["--nic", "--ssh-option", "--remote-command", "--mcload", "--shim",
                                    "--service", "--server-addr", "--name", "--out", "--modes", "--server",
                                    "--client"])
def test_every_argument_is_bounded_in_length(option):
    assert_refused(bench(*CHECK, option, "a" * 100000), "longer than")


@pytest.mark.parametrize("argv", [["report", "a" * 100000], ["compare", "a" * 100000, "b"],
                                  ["docs", "a", "b" * 100000, "--images", "i"], ["hold", "a" * 100000, "1"]])
def test_positional_arguments_are_bounded_in_length_too(argv):
    assert_refused(bench(*argv), "longer than")


@pytest.mark.parametrize("option", ["--server", "--client"])
def test_an_empty_destination_is_refused(option):
    argv = list(CHECK)
    argv[argv.index(option) + 1] = ""
    assert_refused(bench(*argv), "--server/--client", "''")
    argv[0] = "run"
    assert_refused(bench(*argv), "--server/--client")


@pytest.fixture
def saved_run(tmp_path):
    path = tmp_path / "run.json"
    path.write_text('{"settings": {"modes": ["base"], "repeats": 1, "seconds": 2, "warmup": 0.5, "conns": 1}, '
                    '"loads": [100], "runs": [{"mode": "base", "offered": 100, "p99_us": 9}]}')
    return path


@pytest.mark.parametrize("name", ["n" * 250, "a/b", "", ".", ".."])
def test_report_name_is_a_file_name_of_bounded_length(saved_run, tmp_path, name):
    assert_refused(bench("report", str(saved_run), "--out", str(tmp_path / "o"), "--name", name), "--name")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("name", ["n" * 250, "a/b", ""])
def test_run_name_is_a_file_name_of_bounded_length(name):
    assert_refused(bench("run", *CHECK[1:], "--name", name), "--name")


def test_report_out_with_a_too_long_component_is_one_line(saved_run, tmp_path):
    out = tmp_path / ("d" * 300)
    assert_refused(bench("report", str(saved_run), "--out", str(out)), "--out")
    assert_refused(bench("run", *CHECK[1:], "--out", str(out)), "--out")


def test_report_out_naming_a_file_is_one_line(saved_run, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("mine\n")
    assert_refused(bench("report", str(saved_run), "--out", str(afile)), "--out", "not a directory")
    assert afile.read_text() == "mine\n"


def test_docs_of_a_markdown_file_that_is_not_utf8_is_one_line(saved_run, tmp_path):
    md = tmp_path / "benchmarks.md"
    md.write_bytes(b"# \xff\xfe\n<!-- irqtune-bench docs: generated from x - edit the run, not this -->\n"
                   b"<!-- irqtune-bench docs: end -->\n")
    before = md.read_bytes()
    assert_refused(bench("docs", str(saved_run), str(md), "--images", str(tmp_path / "img")),
                   str(md), "UTF-8")
    assert md.read_bytes() == before


@pytest.mark.parametrize("argv,words", [
    (["x" * 4000], ["invalid choice"]),
    ([*CHECK, "--bogus=" + "x" * 4000], ["unrecognized arguments"]),
    ([*CHECK, "x" * 4000], ["unrecognized arguments"]),
    ([*CHECK, "--modes", "x" * 4000], ["--modes", "accepted"]),
    ([*CHECK, "--modes", "base," + "x" * 2000 + "," + "y" * 1500], ["--modes", "accepted"]),
    ([*CHECK, "--modes", ",".join(["z%d" % i for i in range(700)])], ["--modes", "accepted"]),
    ([*CHECK, "--repeats", "x" * 4000], ["--repeats", "accepted"]),
    ([*CHECK, "--server-addr", "x" * 4000], ["--server-addr", "accepted"]),
    (["hold", "127.0.0.1", "1", "--source-ports"], ["--source-ports", "expected one argument"]),
])
def test_refusals_quote_at_most_about_80_characters(argv, words):
    assert_refused(bench(*argv), *words)


def test_ctrl_c_is_one_line_and_exit_130():
    """Ctrl-C while `hold` keeps its connections: one line, exit 130."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "irqtune_bench", "hold", "127.0.0.1", str(port),
                             "--source-ports", str(free)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO,
                            env={"PYTHONPATH": str(REPO / "bench"), "PATH": "/usr/bin:/bin"})
    try:
        conn, _ = server.accept()       # hold asks for memcached's version
        with conn:
            conn.recv(64)
            conn.sendall(b"VERSION 1.6.0\r\n")
            assert proc.stdout.readline().startswith("held")
            time.sleep(0.2)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
    finally:
        server.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, (proc.returncode, err)
    assert err == "irqtune-bench: interrupted\n", err
