# SPDX-License-Identifier: GPL-2.0-or-later
"""The path to a pid file root measures (auto_services, read through
irqtune.kernel.files.read_root_only_stat): every directory from / to it
root's and not writable by group or others (a sticky one such as /tmp
only to an entry of root's), no symbolic link on the way - magic links
of /proc included - and the file on a filesystem that holds what was
written to it, never procfs, sysfs or the like (issue 47, item 1).

The directories and files are real ones (temporary directories); the
attack is the issue's, end to end, as user nobody: the pid file's
directory, which they own, swapped for a link through /proc/A/root into
their own mount namespace, where /proc/B/comm of their own non-dumpable
process - a file of root's, mode 0644, whose text they set - is
bind-mounted on the name root reads."""

import ctypes
import logging
import os
import shutil
import subprocess
import tempfile

import pytest
from support.shared import PYTHON_FOR_ALL

from irqtune.kernel import files
from irqtune.kernel.errors import IrqtuneError
from irqtune.kernel.kfs import KernelFs
from irqtune.shared.measure import follow

NOBODY = 65534


def needs_root():
    if os.geteuid() != 0:
        pytest.skip("giving a directory to another user needs root")


@pytest.fixture
def top():
    """A root-owned 0755 directory under /tmp (sticky, world-writable: its
    entry is root's), which user nobody can traverse."""
    path = tempfile.mkdtemp(prefix="irqtune-pidpath-", dir="/tmp")
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path)


def root_file(path, text="42\n", mode=0o644):
    """A pid file as a service that runs as root writes it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    os.fchmod(fd, mode)
    os.write(fd, text.encode())
    os.close(fd)
    return path


def directory(path, mode=0o755, uid=None):
    os.mkdir(path)
    os.chmod(path, mode)
    if uid is not None:
        os.chown(path, uid, uid)
    return path


def refused(path):
    with pytest.raises(files.NotRootOnly) as err:
        files.read_root_only_stat(path)
    return str(err.value)


def test_a_pid_file_below_root_owned_directories_is_read(top):
    path = root_file(os.path.join(directory(os.path.join(top, "run")), "srv.pid"))
    text, st = files.read_root_only_stat(path)
    assert text == "42\n" and st.st_uid == os.geteuid()


def test_a_pid_file_under_run_is_read():
    """A service's own directory under /run (tmpfs, or the disk here and
    there), mode 0755 - where pid files live."""
    try:
        where = tempfile.mkdtemp(prefix="irqtune-pidpath-", dir="/run")
    except OSError as err:
        pytest.skip("cannot make a directory under /run: %s" % err)
    try:
        os.chmod(where, 0o755)
        text, _ = files.read_root_only_stat(root_file(os.path.join(where, "srv.pid")))
        assert text == "42\n"
    finally:
        shutil.rmtree(where)


def test_a_directory_of_another_user_on_the_path_is_refused(top):
    needs_root()
    home = directory(os.path.join(top, "home"), uid=NOBODY)
    run = directory(os.path.join(home, "run"))              # root's, in nobody's directory
    assert refused(root_file(os.path.join(run, "srv.pid"))) == \
        "directory %s is owned by uid %d" % (home, NOBODY)


@pytest.mark.parametrize("mode", [0o775, 0o757, 0o777], ids=oct)
def test_a_directory_group_or_others_may_write_is_refused(top, mode):
    shared = directory(os.path.join(top, "shared"), mode)
    assert refused(root_file(os.path.join(shared, "srv.pid"))) == \
        "group or others may write directory %s (mode %04o)" % (shared, mode)


def test_a_symbolic_link_to_a_directory_on_the_path_is_refused(top):
    real = directory(os.path.join(top, "real"))
    root_file(os.path.join(real, "srv.pid"))
    os.symlink(real, os.path.join(top, "link"))
    assert refused(os.path.join(top, "link", "srv.pid")) == \
        "%s is a symbolic link" % os.path.join(top, "link")
    # the last component, as before
    os.symlink(os.path.join(real, "srv.pid"), os.path.join(real, "alias.pid"))
    assert refused(os.path.join(real, "alias.pid")) == "it is a symbolic link"


def test_a_sticky_directory_passes_only_to_an_entry_of_roots(top):
    """As /tmp: anyone may create in it, only an entry's owner may remove
    or rename it - an entry of root's stays root's."""
    needs_root()
    sticky = directory(os.path.join(top, "tmp"), 0o1777)
    assert files.read_root_only_stat(root_file(os.path.join(sticky, "srv.pid")))[0] == "42\n"
    theirs = directory(os.path.join(sticky, "theirs"), uid=NOBODY)
    assert refused(root_file(os.path.join(theirs, "srv.pid"))) == \
        "directory %s is owned by uid %d" % (theirs, NOBODY)
    os.chown(root_file(os.path.join(sticky, "their.pid")), NOBODY, NOBODY)
    assert refused(os.path.join(sticky, "their.pid")) == "it is owned by uid %d" % NOBODY
    os.chmod(sticky, 0o777)                 # not sticky: root's entry can be swapped
    assert refused(os.path.join(sticky, "srv.pid")) == \
        "group or others may write directory %s (mode 0777)" % sticky


def test_a_path_through_proc_magic_links_is_refused(top):
    """/proc/self and /proc/PID/root lead elsewhere (another mount
    namespace, another root): links, refused as every link is."""
    path = root_file(os.path.join(top, "srv.pid"))
    assert refused("/proc/self/root" + path) == "/proc/self is a symbolic link"
    mine = "/proc/%d" % os.getpid()
    assert refused(mine + "/root" + path) == "%s/root is a symbolic link" % mine
    assert refused(mine + "/cwd/x.pid") == "%s/cwd is a symbolic link" % mine


def test_a_file_of_procfs_or_sysfs_is_refused():
    """Root's, mode 0644, regular - and its text is the kernel's, some of
    it set by any user (comm)."""
    assert refused("/proc/%d/comm" % os.getpid()) == \
        "it is on a proc filesystem (type 0x9fa0)"
    if not os.path.exists("/sys/kernel/uevent_seqnum"):
        pytest.skip("no /sys/kernel/uevent_seqnum")
    assert refused("/sys/kernel/uevent_seqnum") == "it is on a sysfs filesystem (type 0x62656572)"


CLONE_NEWNS, MS_BIND, MS_REC, MS_PRIVATE = 0x00020000, 0x1000, 0x4000, 0x40000


def in_own_mount_namespace(work):
    """work()'s str, run in a child in a mount namespace of its own (what
    it mounts stays there); "skip: ..." where one cannot be made."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                    # pragma: no cover - the child
        os.close(r)
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.unshare(CLONE_NEWNS) or libc.mount(b"none", b"/", None,
                                                       MS_REC | MS_PRIVATE, None):
                out = "skip: " + os.strerror(ctypes.get_errno())
            else:
                out = work(libc)
        except BaseException as err:    # noqa: BLE001 - back to the test, whatever it is
            out = "raised %r" % err
        os.write(w, out.encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        out = f.read().decode()
    os.waitpid(pid, 0)
    if out.startswith("skip: "):
        pytest.skip("no mount namespace: " + out[6:])
    return out


def test_a_procfs_file_bind_mounted_on_a_pid_file_is_refused(top):
    needs_root()
    path = root_file(os.path.join(top, "srv.pid"))

    def mounted_and_read(libc):
        if libc.mount(b"/proc/self/comm", path.encode(), None, MS_BIND, None):
            return "skip: bind mount: " + os.strerror(ctypes.get_errno())
        try:
            files.read_root_only_stat(path)
        except files.NotRootOnly as err:
            return "refused: %s" % err
        return "read"
    assert in_own_mount_namespace(mounted_and_read) == \
        "refused: it is on a proc filesystem (type 0x9fa0)"


# -- the attack, end to end ---------------------------------------------------

# User nobody's process B: not dumpable (its /proc/B files become root's),
# named by its own pid (its comm, which is /proc/B/comm's text).
NAMED_BY_ITS_PID = """
import ctypes, os, sys
libc = ctypes.CDLL(None)
libc.prctl(4, 0, 0, 0, 0)                           # PR_SET_DUMPABLE 0
libc.prctl(15, str(os.getpid()).encode(), 0, 0, 0)  # PR_SET_NAME
print(os.getpid(), flush=True)
sys.stdin.read()
"""


def as_nobody(*argv):
    """argv run as nobody from /, nothing of the repository read (it may be
    a clone only root can read)."""
    return subprocess.Popen(argv, user=NOBODY, group=NOBODY, extra_groups=[], cwd="/",
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def stop(proc):
    proc.kill()
    proc.communicate(timeout=10)


@pytest.fixture
def swapped(top):
    """(pid file path, nobody's pid B): root's service writes
    top/home/run/srv.pid, home being nobody's; nobody moves run away, links
    it to /proc/A/root/top/home/decoy, A being their process in a user and
    mount namespace of their own where /proc/B/comm is bind-mounted on
    decoy/srv.pid."""
    needs_root()
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare (util-linux) is needed")
    home = directory(os.path.join(top, "home"), uid=NOBODY)
    run = directory(os.path.join(home, "run"))
    path = root_file(os.path.join(run, "srv.pid"), "1\n")
    decoy = os.path.join(home, "decoy")
    b = as_nobody(PYTHON_FOR_ALL, "-Esc", NAMED_BY_ITS_PID)
    a = None
    try:
        pid = int(b.stdout.readline())
        subprocess.run(["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY,
                        "--clear-groups", "sh", "-c", 'mkdir "$1" && : > "$1/srv.pid"', "-",
                        decoy], check=True, cwd="/")
        a = as_nobody(unshare, "--user", "--map-root-user", "--mount", "sh", "-c",
                      'mount --bind /proc/%d/comm "$1/srv.pid" && echo ready && exec cat'
                      % pid, "-", decoy)
        if a.stdout.readline().strip() != "ready":
            pytest.skip("nobody cannot bind-mount in a user namespace: %s"
                        % a.communicate(timeout=10)[1].strip())
        subprocess.run(["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY,
                        "--clear-groups", "sh", "-c", 'mv "$1" "$1.old" && ln -s "$2" "$1"',
                        "-", os.path.join(home, "run"), "/proc/%d/root%s" % (a.pid, decoy)],
                        check=True, cwd="/")
        yield path, pid
    finally:
        for proc in (a, b):
            if proc is not None:
                stop(proc)


def test_the_issues_swap_through_another_mount_namespace_is_refused_once(swapped, caplog):
    """Before: read_root_only_stat returned nobody's pid from /proc/B/comm
    (root's, 0644, not a link), started before the "file" was written, so
    root measured nobody's process."""
    path, pid = swapped
    with open(path) as f:                           # what a plain open sees
        assert f.read().strip() == str(pid)
    services = follow.Services([path], KernelFs())
    caplog.set_level(logging.DEBUG, logger="irqtune")
    for _ in range(3):
        with pytest.raises(IrqtuneError, match="srv.pid: pid file refused"):
            services.pids()
    home = os.path.dirname(os.path.dirname(path))
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert said == ["auto_services: pid file %s refused: directory %s is owned by uid %d "
                    "(accepted: %s)" % (path, home, NOBODY, files.ROOT_ONLY)]
