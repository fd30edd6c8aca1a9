# SPDX-License-Identifier: GPL-2.0-or-later
"""hostguard takes the host's TuneD daemon for what it is - TuneD's
program run by root in the host's network namespace, the one TuneD's
root-owned pid file names where two run - and not a process that calls
itself tuned (issue 39 item 9: a user's `exec -a tuned sleep` made the
guard stop it and start TuneD at the end on a host where no daemon ran).

Real processes (bash's exec -a, a python script), a pid file under the
test's own directory; no daemon is started or stopped: the guard's stop
and start are replaced by recorders."""

import os
import subprocess
import sys

import pytest

from support import hostguard
from support.shared import PYTHON_FOR_ALL, readable_by_all

FAKE_TUNED = "exec -a tuned sleep 600"
# Stands in for /usr/sbin/tuned: what Debian's and Fedora's tuned is, a
# python script the kernel runs as "python3 -Es /usr/sbin/tuned ...".
PROGRAM = "import time\ntime.sleep(600)\n"


@pytest.fixture
def guard(tmp_path, monkeypatch):
    """hostguard with its pid file, program, snapshot and trees under
    tmp_path, outside systemd, its daemon stop/start recorded."""
    if os.geteuid() != 0:
        pytest.skip("the pid file must be root's")
    calls = []
    monkeypatch.setattr(hostguard, "PID_FILE", str(tmp_path / "tuned.pid"))
    monkeypatch.setattr(hostguard, "TUNED_PROGRAM", str(tmp_path / "sbin" / "tuned"),
                        raising=False)
    monkeypatch.setattr(hostguard, "SNAPSHOT_DIR", str(tmp_path / "state" / "host"))
    monkeypatch.setattr(hostguard, "TUNED_ETC", str(tmp_path / "etc-tuned"))
    monkeypatch.setattr(hostguard, "LEDGER_DIR", str(tmp_path / "run-irqtune"))
    monkeypatch.setattr(hostguard, "MANAGE_DAEMON", True)
    monkeypatch.setattr(hostguard, "_under_systemd", lambda: False)
    monkeypatch.setattr(hostguard, "stop_host_daemon", lambda: calls.append("stop"))
    monkeypatch.setattr(hostguard, "start_host_daemon", lambda: calls.append("start"))
    monkeypatch.setattr(hostguard, "_run", lambda *argv, **kw: subprocess.CompletedProcess(
        argv, 0, "Current active profile: x\n", ""))
    (tmp_path / "etc-tuned").mkdir()
    (tmp_path / "sbin").mkdir()
    (tmp_path / "sbin" / "tuned").write_text(PROGRAM)
    procs = []

    def start(argv):
        proc = subprocess.Popen(argv)
        procs.append(proc)
        return proc.pid

    def pid_file(pid, uid=0, mode=0o644):
        path = tmp_path / "tuned.pid"
        path.write_text("%d\n" % pid)
        os.chown(path, uid, 0)
        os.chmod(path, mode)

    yield start, pid_file, calls, tmp_path
    for proc in procs:
        proc.kill()
        proc.wait()
    hostguard._give_up_ownership()


def wait_exec(pid, word):
    """Until pid's command line holds word (the child has exec'd: before,
    it is a copy of this python)."""
    import time
    for _ in range(500):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if word.encode() in f.read().split(b"\0"):
                    return
        except OSError:
            pass
        time.sleep(0.01)
    raise AssertionError("pid %d never ran %s" % (pid, word))


def test_a_process_named_tuned_is_not_the_daemon(guard):
    start, pid_file, calls, _ = guard
    fake = start(["bash", "-c", FAKE_TUNED])
    wait_exec(fake, "600")
    with open("/proc/%d/cmdline" % fake, "rb") as f:
        assert f.read().split(b"\0")[0] == b"tuned"      # what the old guard matched
    assert hostguard._host_daemon_pid() is None
    pid_file(fake)                                       # even named by root's pid file
    assert hostguard._host_daemon_pid() is None
    assert not hostguard.host_daemon_running()


def test_a_fake_daemon_is_neither_stopped_nor_started_for(guard):
    """save() and restore() around a run, with the fake about: the host had
    no daemon, so none is stopped and none started at the end."""
    start, pid_file, calls, _ = guard
    fake = start(["bash", "-c", FAKE_TUNED])
    wait_exec(fake, "600")
    pid_file(fake)
    meta = hostguard.save()
    assert meta["daemon_running"] is False
    hostguard.restore()
    assert calls == []
    os.kill(fake, 0)                                     # the user's process lives on


def test_the_daemon_is_known_by_program_owner_and_pid_file(guard):
    """Positive control: TuneD's program run by python as the kernel runs
    it, by root, in this network namespace; it is stopped and, as it ran,
    started again at the end."""
    start, pid_file, calls, tmp_path = guard
    daemon = start([sys.executable, "-Es", hostguard.TUNED_PROGRAM, "-l", "-P"])
    wait_exec(daemon, hostguard.TUNED_PROGRAM)
    assert hostguard._host_daemon_pid() == daemon
    pid_file(daemon)
    assert hostguard._host_daemon_pid() == daemon
    assert hostguard.host_daemon_running()
    meta = hostguard.save()
    assert meta["daemon_running"] is True and calls == ["stop"]
    hostguard.restore()
    assert calls == ["stop", "stop", "start"]            # it ran: it is started again


def test_the_pid_file_tells_two_daemons_apart_only_when_root_wrote_it(guard):
    """Two processes run TuneD's program: the root-owned pid file names the
    daemon; without one that only root could have written, neither is
    taken."""
    start, pid_file, calls, tmp_path = guard
    first = start([sys.executable, "-Es", hostguard.TUNED_PROGRAM])
    second = start([sys.executable, "-Es", hostguard.TUNED_PROGRAM, "--daemon"])
    wait_exec(first, hostguard.TUNED_PROGRAM)
    wait_exec(second, hostguard.TUNED_PROGRAM)
    assert hostguard._host_daemon_pid() is None          # no pid file
    pid_file(second)
    assert hostguard._host_daemon_pid() == second
    pid_file(second, uid=65534)                          # a pid file a user could write
    assert hostguard._host_daemon_pid() is None
    pid_file(second, mode=0o666)
    assert hostguard._host_daemon_pid() is None
    pid_file(second)
    os.rename(tmp_path / "tuned.pid", tmp_path / "real.pid")
    os.symlink(tmp_path / "real.pid", tmp_path / "tuned.pid")     # a link to it
    assert hostguard._host_daemon_pid() is None
    os.unlink(tmp_path / "tuned.pid")
    pid_file(os.getpid())                                # names another (root) process
    assert hostguard._host_daemon_pid() is None


def test_a_users_copy_of_the_program_is_not_the_daemon(guard, tmp_path_factory):
    """TuneD's program run by another user (its pid file, even, naming it)."""
    start, pid_file, calls, _ = guard
    with readable_by_all("tuned", PROGRAM) as program:
        hostguard.TUNED_PROGRAM = program            # undone by the fixture's monkeypatch
        proc = subprocess.Popen([PYTHON_FOR_ALL, "-Es", program], user=65534, group=65534,
                                cwd="/")
        try:
            wait_exec(proc.pid, program)
            pid_file(proc.pid)
            assert hostguard._host_daemon_pid() is None
        finally:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("text", ["\u0663\u0664", "+12", " ", "", "12abc", "9" * 30])
def test_pid_file_text_other_than_a_pid_names_nothing(guard, text):
    _, pid_file, _, tmp_path = guard
    path = tmp_path / "tuned.pid"
    path.write_text(text)
    os.chmod(path, 0o644)
    assert hostguard._pid_file_pid() is None
