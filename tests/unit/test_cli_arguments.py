# SPDX-License-Identifier: GPL-2.0-or-later
"""`irqtune` refuses bad arguments in one line (the argument, the value,
what is accepted) with exit 2, and nothing leaves it as a traceback.

Argument errors are caught before the command touches the kernel, so the
command runs here as it is: main() in this process, and `python3 -m
irqtune` from the worktree where the process's own exit matters."""

import os
import subprocess
import sys

import pytest

import irqtune.__main__ as cli
from irqtune.doctor import targets
from irqtune.errors import IrqtuneError

DEBUG_ENV = "IRQTUNE_DEBUG"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def irqtune(*args, stdout=subprocess.PIPE):
    env = {k: v for k, v in os.environ.items() if k != DEBUG_ENV}
    return subprocess.run([sys.executable, "-m", "irqtune"] + list(args), cwd=REPO, env=env,
                          stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=60)


def main(capsys, args):
    """(exit status, stdout, stderr) of irqtune.__main__.main(args)."""
    try:
        code = cli.main(args)
    except SystemExit as e:     # argparse's own refusals
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def assert_refused(code, out, err, *words):
    """Exit 2, nothing on stdout, one line on stderr holding words."""
    lines = err.splitlines()
    assert code == 2, (code, out, err)
    assert out == "", out
    assert len(lines) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in lines[0], (word, lines[0])


@pytest.mark.parametrize("args,words", [
    (["status", "nosuchdev"], ["irqtune status: ", "device nosuchdev", "accepted: lo"]),
    (["status", "lo", "nosuchdev"], ["device nosuchdev", "accepted: lo"]),
    (["status", "a\nb"], ["device 'a\\nb'"]),     # still one line
    (["status", "--watch", "nosuchdev"], ["device nosuchdev", "accepted: lo"]),
    (["status", "--watch", "--interval", "-1", "lo"], ["--interval -1", "accepted 0.1 to 3600"]),
    (["status", "--watch", "--interval", "nan", "lo"], ["--interval nan", "accepted 0.1 to 3600"]),
    (["status", "--watch", "--interval", "inf", "lo"], ["--interval inf", "accepted 0.1 to 3600"]),
    (["status", "--watch", "--interval", "0", "lo"], ["--interval 0", "accepted 0.1 to 3600"]),
    (["status", "--watch", "--interval", "abc", "lo"], ["--interval", "'abc'"]),
    (["status", "--watch", "--count", "-1", "lo"], ["--count -1", "accepted 1 or more"]),
    (["status", "--watch", "--count", "0", "lo"], ["--count 0", "accepted 1 or more"]),
    (["status", "--count", "3", "lo"], ["--count", "only with --watch"]),
    (["status", "--watch"], ["--watch", "devices"]),
    (["metrics", "--output", ""], ["irqtune metrics: ", "--output ''", "accepted a file name"]),
    (["verify", "--log", "/nonexistent"],
     ["irqtune verify: ", "--log /nonexistent", "No such file", "/var/log/tuned/tuned.log"]),
    (["verify", "--log", "/"], ["--log /", "not a regular file"]),
    (["doctor", "--seconds", "nan"], ["--seconds nan", "accepted 0.5 to 60"]),
    (["doctor", "--pid", "0"], ["--pid 0", "accepted a process id"]),
    (["doctor", "--service", ""], ["--service ''", "accepted a systemd unit name"]),
    (["nosuchcommand"], ["irqtune: ", "'nosuchcommand'"]),
])
def test_bad_argument_one_line_exit_2(monkeypatch, capsys, args, words):
    monkeypatch.delenv(DEBUG_ENV, raising=False)
    assert_refused(*main(capsys, args), *words)


def test_bad_interval_refused_by_the_command_itself():
    """What an administrator types: the process exits 2 with one line."""
    result = irqtune("status", "--watch", "--interval", "nan", "lo")
    assert_refused(result.returncode, result.stdout, result.stderr, "--interval nan")


def test_verify_with_a_missing_log_does_not_run_tuned_adm():
    ran = []
    lines = []
    code = cli.verify_report.verify(log="/nonexistent", run=lambda *a, **k: ran.append(a),
                                    out=lines.append, err=lines.append)
    assert code == 2 and ran == [] and len(lines) == 1, (code, ran, lines)


def test_a_closed_stdout_ends_quietly():
    """`irqtune ... | head`: the reader has gone before the output."""
    read, write = os.pipe()
    os.close(read)
    try:
        result = irqtune("--help", stdout=write)
    finally:
        os.close(write)
    assert result.stderr == "" and result.returncode == 1, (result.returncode, result.stderr)


@pytest.mark.parametrize("command,code", [("status", 1), ("doctor", 2)])
def test_unexpected_error_is_one_line(monkeypatch, capsys, command, code):
    """The last guard: any exception becomes one line and a failed exit (for
    the doctor, its "could not tell"); IRQTUNE_DEBUG=1 lets it through."""
    def broken(args):
        raise KeyError("napi")
    monkeypatch.setattr(cli, "run", broken)
    monkeypatch.delenv(DEBUG_ENV, raising=False)
    assert cli.main([command]) == code
    err = capsys.readouterr().err.splitlines()
    assert err == ["irqtune %s: unexpected error: KeyError: 'napi' (IRQTUNE_DEBUG=1 shows where)"
                   % command], err
    monkeypatch.setenv(DEBUG_ENV, "1")
    with pytest.raises(KeyError):
        cli.main([command])


def test_watch_of_a_device_removed_meanwhile_is_an_irqtune_error():
    from irqtune.counters import sample
    with pytest.raises(IrqtuneError, match="device nosuchdev: no such device"):
        sample("nosuchdev")


class RecordingSystemctl:
    """systemctl show answers for one unit, every argv recorded."""

    def __init__(self, props):
        self.props = props
        self.calls = []

    def __call__(self, argv):
        self.calls.append(list(argv))
        prop = argv[1].split("=", 1)[1]
        return 0, self.props.get(prop, "") + "\n"


@pytest.mark.parametrize("unit", ["-H", "--user", "-.mount"])
def test_doctor_service_name_is_never_a_systemctl_option(tmp_path, unit):
    """--service=-H: the name goes after "--", so systemctl looks up a unit
    of that name instead of taking it as its option."""
    (tmp_path / "run/systemd/system").mkdir(parents=True)
    ctl = RecordingSystemctl({"LoadState": "loaded", "MainPID": "4242", "ControlGroup": ""})
    assert targets.service_pids(unit, systemctl=ctl, root=str(tmp_path)) == [4242]
    assert ctl.calls
    for argv in ctl.calls:
        assert argv[-2:] == ["--", unit], argv
