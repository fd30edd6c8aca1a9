# SPDX-License-Identifier: GPL-2.0-or-later
"""The host's TuneD state, kept out of the tests' way and put back.

The integration suites start TuneD daemons of their own (in network
namespaces) and write profiles and variables files into /etc/tuned.  On a
host where irqtune is deployed the system's daemon holds the D-Bus name
those daemons need, and its profile's files are the ones the tests
rewrite.  So before the first test that needs a daemon:

- the host's state is saved once, outside the files it describes: a copy
  of /etc/tuned and of /run/irqtune (the ledgers), and whether the system
  daemon ran - in SNAPSHOT_DIR;
- the system daemon is stopped (TuneD rolls its profile back).

At the end of the session (also after SIGINT or SIGTERM) everything is put
back and the daemon started again with its profile.  A run that was killed
outright leaves the snapshot behind: the next run finds it and puts the
host back before it starts (recover()), so nothing a killed run wrote is
ever taken for the host's own state.
"""

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import tarfile
import time

SNAPSHOT_DIR = os.environ.get("IRQTUNE_TEST_SNAPSHOT", "/var/lib/irqtune-tests/host")
TUNED_ETC = os.environ.get("IRQTUNE_TEST_TUNED_ETC", "/etc/tuned")
LEDGER_DIR = os.environ.get("IRQTUNE_TEST_LEDGER_DIR", "/run/irqtune")
# The guard's own tests run it against copies, without a daemon to stop.
MANAGE_DAEMON = os.environ.get("IRQTUNE_TEST_MANAGE_DAEMON", "1") == "1"
PID_FILE = "/run/tuned/tuned.pid"
# TuneD's program (Debian and Fedora): a python script the kernel runs as
# "/usr/bin/python3 -Es /usr/sbin/tuned ...".
TUNED_PROGRAM = "/usr/sbin/tuned"
# The namespaces in which the suites start TuneD daemons (and udevd for
# them): what a killed run leaves running.  Nothing else is touched - lab
# guests, other runs' namespaces.
DAEMON_NETNS = ("irqtune-it", "irqtune-crash-d")


def _run(*argv, check=True, timeout=120):
    return subprocess.run(argv, check=check, capture_output=True, text=True, timeout=timeout)


def _under_systemd():
    return os.path.isdir("/run/systemd/system")


def _pid_from_file():
    try:
        with open(PID_FILE) as f:
            pid = int(f.read().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def _in_init_netns(pid):
    """In the runner's own network namespace, the host's (PID 1's may not
    be readable in a container)."""
    try:
        return os.readlink("/proc/%d/ns/net" % pid) == os.readlink("/proc/self/ns/net")
    except OSError:
        return False


def _pid_file_pid():
    """The pid TuneD's pid file names, when the file is one only root could
    have written (a regular file, not a link, owned by root, writable by
    no one else) and holds a pid in ASCII digits; else None."""
    try:
        fd = os.open(PID_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o022:
            return None
        text = os.read(fd, 64).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    return int(text) if re.fullmatch(r"[0-9]{1,10}", text) else None


def _runs_tuned(pid):
    """Whether pid is a root process running TuneD's program: its
    executable a python interpreter whose script is TUNED_PROGRAM (by real
    path), or the program itself.  A name (argv[0], comm) is anyone's to
    choose: `exec -a tuned sleep` calls itself tuned."""
    program = os.path.realpath(TUNED_PROGRAM)
    try:
        if os.stat("/proc/%d" % pid).st_uid != 0:
            return False
        exe = os.readlink("/proc/%d/exe" % pid)
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return False
    if os.path.realpath(exe) == program:
        return True
    if not os.path.basename(exe).startswith("python"):
        return False
    script = next((a for a in argv[1:] if not a.startswith("-")), None)
    return script is not None and os.path.isabs(script) and os.path.realpath(script) == program


def _tuned_daemons():
    """Pids of root's processes running TuneD's program in the initial
    network namespace (a test's daemon runs in one of its own)."""
    pids = []
    for entry in os.listdir("/proc"):
        if re.fullmatch(r"[0-9]+", entry) and _runs_tuned(int(entry)) \
                and _in_init_netns(int(entry)):
            pids.append(int(entry))
    return pids


def _host_daemon_pid():
    """The host's daemon, or None: a root process running TuneD's program
    in the initial network namespace - the one TuneD's root-owned pid file
    names, else the only such process.  The file alone does not do: TuneD
    always writes it, a test's daemon too, and deletes it when it exits,
    so a host daemon left running beside a test's daemon loses it."""
    daemons = _tuned_daemons()
    named = _pid_file_pid()
    if named in daemons:
        return named
    return daemons[0] if len(daemons) == 1 else None


def _wait_gone(pid, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


def host_daemon_running():
    """The system's daemon: the systemd service, or the pid-file daemon of
    _host_daemon_pid().  Only a daemon found running is stopped, and
    started again at the end."""
    if _under_systemd():
        return _run("systemctl", "is-active", "--quiet", "tuned", check=False).returncode == 0
    return _host_daemon_pid() is not None


def stop_host_daemon():
    if _under_systemd():
        _run("systemctl", "stop", "tuned", timeout=180)
        return
    pid = _host_daemon_pid()
    if pid is None:
        return
    os.kill(pid, signal.SIGTERM)      # TuneD rolls its profile back on SIGTERM
    if not _wait_gone(pid, 180):
        raise RuntimeError("the host's TuneD daemon (pid %d) did not stop in 180 s" % pid)


def start_host_daemon():
    """As `make start-tuned` does, then wait until it answers on D-Bus."""
    if _under_systemd():
        _run("systemctl", "start", "tuned", timeout=180)
    else:
        _run("tuned", "--daemon")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        out = _run("tuned-adm", "active", check=False)
        if "Cannot talk to TuneD daemon" not in out.stdout + out.stderr:
            return
        time.sleep(0.5)
    raise RuntimeError("the host's TuneD daemon did not answer on D-Bus within 60 s")


def kill_test_leftovers():
    """The daemons and udevd a killed run left in its namespaces."""
    if not MANAGE_DAEMON:
        return
    for name in DAEMON_NETNS:
        if not os.path.exists(os.path.join("/run/netns", name)):
            continue
        for pid in _run("ip", "netns", "pids", name, check=False).stdout.split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
            _wait_gone(int(pid), 10)
        _run("ip", "netns", "del", name, check=False)
    if _pid_from_file() is None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(PID_FILE)


# -- the snapshot -----------------------------------------------------------

def _meta_path():
    return os.path.join(SNAPSHOT_DIR, "host.json")


def _archive(name):
    return os.path.join(SNAPSHOT_DIR, name + ".tar")


def _save_tree(directory, archive):
    with tarfile.open(archive, "w") as tar:
        if os.path.isdir(directory):
            tar.add(directory, arcname=".")


def _restore_tree(directory, archive):
    """directory holds exactly what the archive holds (or is gone if it
    did not exist): files the tests added are removed, not only overwritten."""
    if os.path.isdir(directory):
        shutil.rmtree(directory)
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
        if not members:
            return
        os.makedirs(directory, mode=0o700, exist_ok=True)
        for member in members:
            tar.extract(member, directory, set_attrs=True)


def snapshot_exists():
    return os.path.exists(_meta_path())


# The run that owns the snapshot holds an exclusive lock on this file while
# it lives, so that another run (a unit suite started meanwhile, a second
# worktree) never takes a live run's snapshot for a killed one.  The
# descriptor is not inherited: a daemon a test starts must not keep it.
_owner_fd = None


def _lock_path():
    return os.path.join(os.path.dirname(SNAPSHOT_DIR.rstrip("/")) or "/", ".owner.lock")


def _take_ownership(block):
    global _owner_fd
    if _owner_fd is not None:
        return True
    os.makedirs(os.path.dirname(_lock_path()), mode=0o700, exist_ok=True)
    fd = os.open(_lock_path(), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB))
    except BlockingIOError:
        os.close(fd)
        return False
    _owner_fd = fd
    return True


def _give_up_ownership():
    global _owner_fd
    if _owner_fd is not None:
        os.close(_owner_fd)
        _owner_fd = None


def save():
    """Save the host's state and stop its daemon; the snapshot is complete
    (host.json written last) before anything is changed.  Waits while
    another live run owns the host."""
    _take_ownership(block=True)
    recover()
    os.makedirs(SNAPSHOT_DIR, mode=0o700, exist_ok=True)
    os.chmod(SNAPSHOT_DIR, 0o700)
    running = MANAGE_DAEMON and host_daemon_running()
    active = None
    if running:
        active = _run("tuned-adm", "active", check=False).stdout.strip()
        stop_host_daemon()
    _save_tree(TUNED_ETC, _archive("etc-tuned"))
    _save_tree(LEDGER_DIR, _archive("run-irqtune"))
    meta = {"daemon_running": running, "active": active, "time": time.time()}
    tmp = _meta_path() + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(meta, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, _meta_path())
    return meta


def _put_back():
    with open(_meta_path()) as f:
        meta = json.load(f)
    if MANAGE_DAEMON and host_daemon_running():
        stop_host_daemon()
    _restore_tree(TUNED_ETC, _archive("etc-tuned"))
    _restore_tree(LEDGER_DIR, _archive("run-irqtune"))
    if meta["daemon_running"]:
        start_host_daemon()
    # removed only once the host is as it was: a restore that is itself
    # interrupted is done again by the next run
    shutil.rmtree(SNAPSHOT_DIR)
    return meta


def restore():
    """The end of the owning run: put the saved state back."""
    try:
        return _put_back()
    finally:
        _give_up_ownership()


def recover():
    """At the start of a run: a snapshot left behind by a run that is gone
    means it was killed; put the host back first.  A snapshot whose run
    still lives (it holds the owner lock) is left alone.  Returns the
    snapshot's metadata or None."""
    taken_here = _owner_fd is None
    if taken_here and not _take_ownership(block=False):
        return None
    try:
        if not snapshot_exists():
            # a save() killed before host.json was written changed nothing yet
            shutil.rmtree(SNAPSHOT_DIR, ignore_errors=True)
            return None
        kill_test_leftovers()
        return _put_back()
    finally:
        if taken_here:
            _give_up_ownership()


# -- SIGTERM ends a run the way Ctrl-C does ---------------------------------

def _sigterm(signum, frame):
    raise KeyboardInterrupt("SIGTERM")


def terminate_as_interrupt():
    """pytest tears fixtures down after KeyboardInterrupt, not after SIGTERM;
    SIGINT raises it also in a run started in the background, where the
    shell left SIGINT ignored."""
    signal.signal(signal.SIGTERM, _sigterm)
    signal.signal(signal.SIGINT, signal.default_int_handler)
