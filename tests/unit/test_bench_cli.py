# SPDX-License-Identifier: GPL-2.0-or-later
"""irqtune-bench's command line: every bad argument is refused in one line
naming the argument, the value and what is accepted, exit 2, before any
host is contacted; the lab's script takes the same run options."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUN = ["run", "--server", "root@server", "--client", "root@client", "--server-addr", "192.0.2.1"]


def bench(*argv, cwd=None):
    return subprocess.run([sys.executable, "-m", "irqtune_bench", *argv], capture_output=True, text=True,
                          cwd=cwd or REPO, env={"PYTHONPATH": str(REPO / "bench"), "PATH": "/usr/bin:/bin"},
                          timeout=60)


@pytest.mark.parametrize("extra,words", [
    (["--modes", "base,nosuch"], ["--modes", "'nosuch'", "accepted", "suspend20"]),
    (["--loads", "1000,x"], ["--loads 1000,x", "accepted"]),
    (["--loads", "0"], ["--loads 0", "accepted 1 to 2000000"]),
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


def test_argparse_refusals_are_one_line_too():
    res = bench("run", "--server", "root@s")
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "required" in res.stderr, res.stderr
    res = bench(*RUN, "--repeats", "three")
    assert res.returncode == 2 and "--repeats" in res.stderr and "three" in res.stderr, res.stderr


def test_compare_refuses_a_run_of_one_topology(tmp_path):
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"settings": {"modes": "base"}, "loads": [100],
                                "runs": [{"mode": "base", "offered": 100, "topology": "-", "p99_us": 1}]}))
    res = bench("compare", str(path))
    assert res.returncode == 2 and "holds one topology (-)" in res.stderr, res.stderr
    res = bench("compare", str(tmp_path / "missing.json"))
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "missing.json" in res.stderr


def test_report_redoes_the_files_of_a_saved_run(tmp_path):
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps({
        "settings": {"modes": "base,suspend20", "repeats": 1, "seconds": 2.0, "conns": 1}, "loads": [100],
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
    assert res.returncode == 2 and res.stderr == "lab-bench: --repeats 0: accepted 1 to 100\n", res.stderr
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
