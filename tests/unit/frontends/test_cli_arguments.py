# SPDX-License-Identifier: GPL-2.0-or-later
"""`irqtune` refuses bad arguments in one line (the argument, the value,
what is accepted) with exit 2, and nothing leaves it as a traceback.

Argument errors are caught before the command touches the kernel, so the
command runs here as it is: main() in this process, and `python3 -m
irqtune` from the worktree where the process's own exit matters."""

import os
import subprocess
import sys
import time

import pytest

import irqtune.cli as cli
from irqtune.frontends.doctor import targets
from irqtune.kernel.errors import IrqtuneError
from irqtune.kernel.kfs import KernelFs
from support.fakes.systemd import FakeSystemd

DEBUG_ENV = "IRQTUNE_DEBUG"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def irqtune(*args, stdout=subprocess.PIPE):
    env = {k: v for k, v in os.environ.items() if k != DEBUG_ENV}
    return subprocess.run([sys.executable, "-m", "irqtune"] + list(args), cwd=REPO, env=env,
                          stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=60)


def main(capsys, args):
    """(exit status, stdout, stderr) of irqtune.cli.main(args)."""
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
    (["status", "a\nb"], ["device $'a\\nb'"]),     # still one line
    (["status", "--watch", "nosuchdev"], ["device nosuchdev", "accepted: lo"]),
    (["status", "--watch", "--interval", "-1", "lo"], ["--interval -1", "accepted 0.1 to 3600"]),
    (["status", "--watch", "--interval", "nan", "lo"], ["--interval nan", "accepted 0.1 to 3600"]),
    (["status", "--watch", "--interval", "inf", "lo"], ["--interval inf", "accepted 0.1 to 3600"]),
    (["status", "--watch", "--interval", "0", "lo"], ["--interval 0", "accepted 0.1 to 3600"]),
    (["status", "--watch", "--interval", "abc", "lo"], ["--interval abc", "accepted 0.1 to 3600"]),
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
    from irqtune.shared.counters import sample
    with pytest.raises(IrqtuneError, match="device nosuchdev: no such device"):
        sample("nosuchdev")


@pytest.mark.parametrize("unit,loaded", [("-H", "-H.service"), ("--user", "--user.service"),
                                         ("-.mount", "-.mount")])
def test_doctor_service_name_is_never_a_systemctl_option(tmp_path, unit, loaded):
    """--service=-H: the name is one D-Bus argument (LoadUnit's), so
    systemd looks up a unit of that name; no command line to take it as
    an option."""
    (tmp_path / "run/systemd/system").mkdir(parents=True)
    group = tmp_path / "sys/fs/cgroup/system.slice/x.service"
    group.mkdir(parents=True)
    (group / "cgroup.procs").write_text("4242\n")
    ctl = FakeSystemd(defaults={"LoadState": "loaded", "ControlGroup": "/system.slice/x.service"})
    kfs = KernelFs(proc=str(tmp_path / "proc"), sys=str(tmp_path / "sys"))
    assert targets.service_pids(unit, ctl, kfs, str(tmp_path)) == [4242]
    assert ctl.calls
    assert ("LoadUnit", loaded) in ctl.calls
    assert {c[1] for c in ctl.calls if c[0] == "Get"} == {loaded}


# -- numbers: ASCII digits only (issue 39 item 6) ---------------------------

# What Python's int() and float() take and nobody types on purpose: digits
# of other scripts (the probe's "doctor --pid ١٣١٠٢" inspected pid 13102),
# "_" separators, a "+" sign, a Unicode minus, exponents.
NOT_ASCII_NUMBERS = ["\u0661\u0663\u0661\u0660\u0662", "\u0663", "\uff11", "1_000", "+5",
                     "\u22121", "1e3", "0x10", "", " ", "\n"]
NUMERIC_OPTIONS = [
    (["doctor", "--pid", "{}"], "--pid", "accepted a process id"),
    (["doctor", "--seconds", "{}"], "--seconds", "accepted 0.5 to 60"),
    (["status", "--watch", "--interval", "{}", "lo"], "--interval", "accepted 0.1 to 3600"),
    (["status", "--watch", "--count", "{}", "lo"], "--count", "accepted 1 or more"),
]


@pytest.fixture
def never_run(monkeypatch):
    """The command must not run: a refused argument stops before it."""
    def run(args):
        raise AssertionError("ran with %r" % (vars(args),))
    monkeypatch.setattr(cli, "run", run)
    monkeypatch.delenv(DEBUG_ENV, raising=False)


@pytest.mark.parametrize("template,option,accepted", NUMERIC_OPTIONS,
                         ids=[o[1] for o in NUMERIC_OPTIONS])
@pytest.mark.parametrize("value", NOT_ASCII_NUMBERS, ids=ascii)
def test_numbers_take_ascii_digits_only(never_run, capsys, template, option, accepted, value):
    args = [a.format(value) for a in template]
    code, out, err = main(capsys, args)
    assert_refused(code, out, err, "irqtune %s: " % args[0], option, accepted)
    assert "'%s'" % value.encode("unicode_escape").decode() in err or \
        "%s %s:" % (option, value) in err, err       # the value, escaped where it must be


@pytest.mark.parametrize("value", [" 5", "5 ", "5\n"], ids=ascii)
@pytest.mark.parametrize("template,option,accepted", NUMERIC_OPTIONS,
                         ids=[o[1] for o in NUMERIC_OPTIONS])
def test_numbers_follow_the_profiles_rules(monkeypatch, capsys, template, option, accepted, value):
    """issue 50 item 6: one number parser, values.parse_number (parse_int's
    rules): blanks around a number are dropped, as in a profile's value."""
    ran = []
    monkeypatch.setattr(cli, "run", lambda a: ran.append(a) or 0)
    code, out, err = main(capsys, [a.format(value) for a in template])
    assert (code, err) == (0, ""), err
    assert getattr(ran[0], option[2:]) == 5


def test_the_cli_leaves_numbers_to_values():
    """No int() or float() in the command's modules: the one number parser
    is irqtune.kernel.values.parse_number."""
    import ast
    for path in ("irqtune/__main__.py", "irqtune/cli.py", "irqtune/frontends/status.py"):
        path = os.path.join(REPO, path)
        if not os.path.exists(path):
            continue
        calls = [node.func.id for node in ast.walk(ast.parse(open(path).read()))
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)]
        assert not {"int", "float"} & set(calls), path


@pytest.mark.parametrize("args,attr,value", [
    (["status", "--watch", "--interval", "3600", "lo"], "interval", 3600.0),
    (["status", "--watch", "--interval", "0.1", "lo"], "interval", 0.1),
    (["status", "--watch", "--interval", "2.", "lo"], "interval", 2.0),
    (["status", "--watch", "--count", "3", "lo"], "count", 3),
    (["doctor", "--seconds", "60"], "seconds", 60.0),
    (["doctor", "--seconds", "0.5"], "seconds", 0.5),
    (["doctor", "--pid", "-1"], None, None),      # refused: see below
])
def test_ranges_include_their_ends(monkeypatch, capsys, args, attr, value):
    """issue 39 item 10: --interval 3600 and doctor --seconds 60 are what
    the help says is accepted."""
    ran = []
    monkeypatch.setattr(cli, "run", lambda a: ran.append(a) or 0)
    code, out, err = main(capsys, args)
    if attr is None:
        assert_refused(code, out, err, "--pid -1", "accepted a process id")
        return
    assert (code, err) == (0, ""), err
    assert getattr(ran[0], attr) == value and type(getattr(ran[0], attr)) is type(value)


def test_metrics_of_an_empty_device_name_exits_2_naming_the_devices(capsys, monkeypatch):
    monkeypatch.setattr(cli, "interfaces", lambda: {"lo": 1, "eth0": 2})
    code, out, err = main(capsys, ["metrics", ""])
    assert_refused(code, out, err, "irqtune metrics: ", "device ''",
                   "no such device in this network namespace", "accepted: lo, eth0")


def test_metrics_without_output_prints_to_standard_output(capsys, monkeypatch, tmp_path):
    """issue 39 item 10: no --output, no file: the text goes to stdout."""
    from irqtune.frontends import metrics
    family = metrics.Family("irqtune_napi_defer_hard_irqs", "gauge", "help")
    family.add(2, device="lo", napi="1", netns="init")
    monkeypatch.setattr(metrics, "collect", lambda devices: [family])
    monkeypatch.setattr(cli, "interfaces", lambda: {"lo": 1})
    monkeypatch.chdir(tmp_path)
    code, out, err = main(capsys, ["metrics"])
    assert (code, err) == (0, "")
    assert out == metrics.render([family])
    assert 'irqtune_napi_defer_hard_irqs{device="lo",napi="1",netns="init"} 2' in out
    assert os.listdir(tmp_path) == []
    code, out, err = main(capsys, ["metrics", "--format", "prometheus", "lo"])
    assert (code, err) == (0, "") and out == metrics.render([family], openmetrics=False)


@pytest.mark.parametrize("kind", ["fifo", "device", "socket"])
def test_verify_log_refuses_what_is_not_a_regular_file(capsys, monkeypatch, tmp_path, kind):
    """issue 39 item 10: a FIFO would block the read, a device reads
    nothing or for ever (/dev/zero: not tried here, it would fill the
    memory when the check is broken): refused like a directory, before
    tuned-adm runs."""
    import socket
    import threading
    path = str(tmp_path / kind)
    if kind == "fifo":
        os.mkfifo(path)
        # Were it opened, the read would wait for a writer for ever: one
        # comes after a while, so that a wrong answer fails, not hangs.
        unblock = threading.Timer(5, lambda: os.close(os.open(path, os.O_WRONLY)))
        unblock.daemon = True
        unblock.start()
    elif kind == "device":
        path = "/dev/null"
    else:
        s = socket.socket(socket.AF_UNIX)
        s.bind(path)
    monkeypatch.setattr(cli.verify_report.subprocess, "run",
                        lambda *a, **k: (_ for _ in ()).throw(AssertionError("ran tuned-adm")))
    code, out, err = main(capsys, ["verify", "--log", path])
    assert_refused(code, out, err, "--log %s" % path, "not a regular file",
                   "accepted: the log file TuneD writes")


# -- doctor --pid: a running user process only -------------------------------

def test_doctor_pid_of_a_zombie_is_not_a_running_user_process():
    child = subprocess.Popen(["true"])
    try:
        deadline = time.monotonic() + 10
        while open("/proc/%d/stat" % child.pid).read().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline, "the child did not exit"
            time.sleep(0.01)
        with pytest.raises(IrqtuneError) as err:
            targets.check_pid(child.pid)
        assert str(err.value) == ("--pid %d: not a running user process (a zombie: it has "
                                  "exited and its parent has not reaped it)" % child.pid)
    finally:
        child.wait()


def kernel_thread():
    """A kernel thread this process can see (kthreadd is pid 2 where the
    host's pid namespace is ours), or None."""
    for entry in sorted(os.listdir("/proc"), key=lambda e: (len(e), e)):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    flags = int(f.read().rsplit(")", 1)[1].split()[6])
            except (OSError, IndexError, ValueError):
                continue
            if flags & 0x00200000:          # PF_KTHREAD
                return int(entry)
    return None


def test_doctor_pid_of_a_kernel_thread_is_not_a_running_user_process():
    pid = kernel_thread()
    if pid is None:
        pytest.skip("no kernel thread visible in this pid namespace")
    with pytest.raises(IrqtuneError, match=r"^--pid %d: not a running user process \(a kernel "
                                           r"thread\)$" % pid):
        targets.check_pid(pid)


def test_doctor_pid_of_fixture_stats(tmp_path):
    """/proc/PID/stat as Linux 6.18 printed it on the team's host for a
    zombie (sh after exit 0), kthreadd and cat - fs/proc/array.c: the state
    is the field after the comm's last ")", the flags the seventh after it -
    and a comm holding ") Z" that must not be misread."""
    from irqtune.kernel.kfs import KernelFs
    stats = {
        3048: "3048 (sh) Z 3007 3003 3710 0 -1 4227084 62 0 0 0 0 0 0 0 20 0 1 0 70501 0 0 "
              "18446744073709551615 0 0 0 0 0 0 0 0 65538 1 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0",
        2: "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 24 0 0 "
           "18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0",
        3110: "3110 (cat) R 3003 3003 3710 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 70533 "
              "3133440 393 18446744073709551615 94087740104704 94087740124585 "
              "140730644923840 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 94087740140592 "
              "94087740142208 94088428417024 140730644929219 140730644929239 "
              "140730644929239 140730644930539 0",
        30: "30 (x) Z (y) S 3003 3003 3710 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 70533 "
            "3133440 393 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0",
    }
    for pid, text in stats.items():
        (tmp_path / "proc" / str(pid)).mkdir(parents=True)
        (tmp_path / "proc" / str(pid) / "stat").write_text(text + "\n")
    kfs = KernelFs(proc=str(tmp_path / "proc"), sys=str(tmp_path / "sys"))
    with pytest.raises(IrqtuneError, match="a zombie"):
        targets.check_pid(3048, kfs)
    with pytest.raises(IrqtuneError, match="a kernel thread"):
        targets.check_pid(2, kfs)
    assert targets.check_pid(3110, kfs) == [3110]
    assert targets.check_pid(30, kfs) == [30]
    with pytest.raises(IrqtuneError, match="no such process"):
        targets.check_pid(99, kfs)


# -- the command split like the bench's (issue 50 item 6) ---------------------

def imported(path):
    """The modules a file imports, relative imports made absolute."""
    import ast
    package = os.path.dirname(path).replace(os.sep, ".")
    names = set()
    for node in ast.walk(ast.parse(open(os.path.join(REPO, path)).read())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            names.add(".".join(p for p in (base, node.module) if p))
    return names


def test_the_command_parses_in_one_module_and_works_in_front_ends():
    """irqtune.cli parses the arguments and dispatches; each command's work
    is a front end (irqtune.frontends); `python3 -m irqtune` and the
    installed command only call irqtune.cli.main."""
    assert imported("irqtune/__main__.py") == {"sys", "irqtune.cli"}
    assert not [m for m in imported("irqtune/cli.py") if m.startswith(
        ("irqtune.shared", "irqtune.features", "irqtune.kernel.netlink", "irqtune.kernel.caps"))]
    with open(os.path.join(REPO, "pyproject.toml")) as f:
        assert 'irqtune = "irqtune.cli:main"' in f.read()
    with open(os.path.join(REPO, "Makefile")) as f:
        assert "cat irqtune/__main__.py; } > build/irqtune.cmd" in f.read()
    from irqtune.frontends import doctor, metrics, status
    assert callable(status.table) and callable(status.watch)
    assert callable(status.command) and callable(doctor.command) and callable(metrics.command)
