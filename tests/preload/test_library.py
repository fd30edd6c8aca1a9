# SPDX-License-Identifier: GPL-2.0-or-later
"""libirqtune-busypoll.so: values applied, failures harmless and reported once.

A probe program creates epoll instances with epoll_create, epoll_create1
(with and without EPOLL_CLOEXEC), in a second thread, in a forked child and
in a child after exec, and reads each back with EPIOCGPARAMS.
"""

import os
import shutil
import socket
import subprocess

import pytest

from conftest import clean_env, parse_probe

LABELS = {"create", "create1", "create1-cloexec", "thread", "fork-child", "exec-child"}
PREFIX = "irqtune-busypoll: "


def run_probe(built, env, args=(), preload=True, wrapper=()):
    if preload:
        env = dict(env, LD_PRELOAD=built["lib"])
    proc = subprocess.run(list(wrapper) + [built["probe"]] + list(args), env=env,
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    return parse_probe(proc.stdout), proc.stderr.splitlines()


def assert_all(got, expected, labels=LABELS):
    assert set(got) == set(labels), got
    for label in labels:
        assert got[label][:3] == expected, (label, got[label])
        assert got[label][3] is True, "errno changed by a successful call: %s" % label


def test_without_preload_reads_zeros(built, kernel_params):
    got, err = run_probe(built, clean_env(), preload=False)
    assert_all(got, (0, 0, 0))
    assert err == []


def test_defaults_with_preload(built, kernel_params):
    got, err = run_probe(built, clean_env())
    assert_all(got, (0, 64, 1))
    assert err == []


def test_values_from_environment(built, kernel_params):
    env = clean_env(IRQTUNE_BUSY_POLL_USECS="50", IRQTUNE_BUSY_POLL_BUDGET="16",
                    IRQTUNE_PREFER_BUSY_POLL="0")
    got, err = run_probe(built, env)
    assert_all(got, (50, 16, 0))
    assert err == []


def test_largest_usecs_accepted(built, kernel_params):
    got, err = run_probe(built, clean_env(IRQTUNE_BUSY_POLL_USECS="2147483647",
                                          IRQTUNE_PREFER_BUSY_POLL="1"))
    assert_all(got, (2147483647, 64, 1))
    assert err == []


@pytest.mark.skipif(os.geteuid() != 0, reason="budget above 64 needs CAP_NET_ADMIN")
def test_largest_budget_accepted(built, kernel_params):
    got, err = run_probe(built, clean_env(IRQTUNE_BUSY_POLL_BUDGET="65535",
                                          IRQTUNE_PREFER_BUSY_POLL="0"))
    assert_all(got, (0, 65535, 0))
    assert err == []


@pytest.mark.parametrize("name,value,expected", [
    ("IRQTUNE_BUSY_POLL_USECS", "abc", (0, 32, 1)),
    ("IRQTUNE_BUSY_POLL_USECS", "-1", (0, 32, 1)),
    ("IRQTUNE_BUSY_POLL_USECS", "2147483648", (0, 32, 1)),
    ("IRQTUNE_BUSY_POLL_USECS", "99999999999999999999999", (0, 32, 1)),
    ("IRQTUNE_BUSY_POLL_USECS", " 5", (0, 32, 1)),
    ("IRQTUNE_BUSY_POLL_USECS", "", (0, 32, 1)),
    ("IRQTUNE_BUSY_POLL_BUDGET", "70000", (0, 64, 1)),
    ("IRQTUNE_BUSY_POLL_BUDGET", "65536", (0, 64, 1)),
    ("IRQTUNE_BUSY_POLL_BUDGET", "0x10", (0, 64, 1)),
    ("IRQTUNE_PREFER_BUSY_POLL", "2", (0, 32, 1)),
    ("IRQTUNE_PREFER_BUSY_POLL", "10", (0, 32, 1)),
    ("IRQTUNE_PREFER_BUSY_POLL", "yes", (0, 32, 1)),
])
def test_bad_value_ignored_with_one_message(built, kernel_params, name, value, expected):
    """The bad variable falls back to its default, the others still apply."""
    env = clean_env(IRQTUNE_BUSY_POLL_BUDGET="32")
    env[name] = value
    got, err = run_probe(built, env, args=["--no-exec"])
    assert_all(got, expected, LABELS - {"exec-child"})
    assert len(err) == 1, err
    assert err[0].startswith(PREFIX) and name in err[0], err


def test_all_bad_values_one_message(built, kernel_params):
    env = clean_env(IRQTUNE_BUSY_POLL_USECS="abc", IRQTUNE_BUSY_POLL_BUDGET="70000",
                    IRQTUNE_PREFER_BUSY_POLL="-1")
    got, err = run_probe(built, env, args=["--no-exec"])
    assert_all(got, (0, 64, 1), LABELS - {"exec-child"})
    assert len(err) == 1, err
    for name in ("IRQTUNE_BUSY_POLL_USECS", "IRQTUNE_BUSY_POLL_BUDGET",
                 "IRQTUNE_PREFER_BUSY_POLL"):
        assert name in err[0]


def test_bad_values_reported_once_per_process_image(built, kernel_params):
    """fork shares the parent's 'reported' state; an exec'd image reports anew."""
    got, err = run_probe(built, clean_env(IRQTUNE_BUSY_POLL_USECS="abc"))
    assert_all(got, (0, 64, 1))
    assert len(err) == 2, err


def test_kernel_without_ioctl(built, kernel_params):
    """A seccomp filter answers EPIOCSPARAMS with ENOTTY, as kernels < 6.9 do."""
    got, err = run_probe(built, clean_env(), args=["--deny-ioctl", "--no-exec"])
    assert_all(got, (0, 0, 0), LABELS - {"exec-child"})
    assert len(err) == 1, err
    assert err[0].startswith(PREFIX) and "not known to this kernel" in err[0]


RACERS = {"thread-%d" % i for i in range(32)}


def test_threads_racing(built, kernel_params):
    got, err = run_probe(built, clean_env(), args=["--threads", "32", "--no-exec"])
    assert_all(got, (0, 64, 1), (LABELS - {"exec-child"}) | RACERS)
    assert err == []


def test_threads_racing_failure_reported_once(built, kernel_params):
    for _ in range(5):
        got, err = run_probe(built, clean_env(),
                             args=["--deny-ioctl", "--threads", "32", "--no-exec"])
        assert_all(got, (0, 0, 0), (LABELS - {"exec-child"}) | RACERS)
        assert len(err) == 1, err


def test_log_none_silences(built, kernel_params):
    env = clean_env(IRQTUNE_BUSY_POLL_LOG="none", IRQTUNE_BUSY_POLL_USECS="abc")
    got, err = run_probe(built, env, args=["--deny-ioctl"])
    assert_all(got, (0, 0, 0))
    assert err == []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs CAP_NET_ADMIN")
def test_budget_above_64_with_cap_net_admin(built, kernel_params):
    got, err = run_probe(built, clean_env(IRQTUNE_BUSY_POLL_BUDGET="100"))
    assert_all(got, (0, 100, 1))
    assert err == []


def without_net_admin():
    """The wrapper under which a budget above 64 makes EPIOCSPARAMS fail
    with EPERM (none needed when the tests do not run as root)."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is needed to drop CAP_NET_ADMIN")
    return (setpriv, "--inh-caps=-net_admin", "--bounding-set=-net_admin")


def test_budget_above_64_without_cap_net_admin(built, kernel_params):
    got, err = run_probe(built, clean_env(IRQTUNE_BUSY_POLL_BUDGET="100"),
                         args=["--no-exec"], wrapper=without_net_admin())
    assert_all(got, (0, 0, 0), LABELS - {"exec-child"})
    assert len(err) == 1, err
    assert "EPERM" in err[0] and "CAP_NET_ADMIN" in err[0]


# Where the message goes when fd 2 is no longer the stderr the program got

DATA_LINE = "the program's own data\n"     # epoll_probe.c DATA_LINE
EPERM_MESSAGE = PREFIX + "EPIOCSPARAMS failed (EPERM)"
# In a private mount namespace: a tmpfs on /dev holding only "log", a link
# to the test's socket.  The host's /dev stays as it is.
OWN_DEV_LOG = 'mount -t tmpfs -o mode=0755 irqtune-test /dev && ln -s "$1" /dev/log ' \
              '&& shift && exec "$@"'


@pytest.fixture
def dev_log(tmp_path):
    """(wrapper, read): programs run under wrapper send syslog(3) to a
    datagram socket of the test; read() returns what arrived."""
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        pytest.skip("a private /dev/log needs root and unshare (util-linux)")
    path = str(tmp_path / "log")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.setblocking(False)
    wrapper = (unshare, "--mount", "--propagation", "private", "sh", "-c", OWN_DEV_LOG,
               "sh", path)

    def read():
        out = []
        while True:
            try:
                out.append(sock.recv(4096).decode(errors="replace"))
            except BlockingIOError:
                return out
    yield wrapper, read
    sock.close()


@pytest.mark.parametrize("closed_at_start", [False, True],
                         ids=["closed-by-the-program", "closed-at-exec"])
def test_eperm_message_never_lands_in_a_file_that_took_fd_2(built, kernel_params, tmp_path,
                                                             dev_log, closed_at_start):
    """A service that closed stderr (or was started without one) and whose
    next open was its data file: the message goes to syslog, the data file
    keeps only the program's data."""
    wrapper, read_log = dev_log
    data = tmp_path / "data"
    env = clean_env(IRQTUNE_BUSY_POLL_BUDGET="100", LD_PRELOAD=built["lib"])
    proc = subprocess.run(list(wrapper) + list(without_net_admin())
                          + [built["probe"], "--stderr-to-file", str(data), "--no-exec"],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          text=True, timeout=30,
                          preexec_fn=(lambda: os.close(2)) if closed_at_start else None)
    assert proc.returncode == 0, (proc.returncode, proc.stdout)
    assert_all(parse_probe(proc.stdout), (0, 0, 0), LABELS - {"exec-child"})
    assert data.read_text() == DATA_LINE
    logged = read_log()
    assert len(logged) == 1 and EPERM_MESSAGE in logged[0], logged


def test_stderr_redirected_to_a_file_still_gets_the_message(built, kernel_params, tmp_path):
    """`program 2>>file`: the file is the stderr the program started with."""
    log = tmp_path / "stderr.log"
    with open(log, "a") as f:
        proc = subprocess.run(list(without_net_admin()) + [built["probe"], "--no-exec"],
                              env=clean_env(IRQTUNE_BUSY_POLL_BUDGET="100",
                                            LD_PRELOAD=built["lib"]),
                              stdout=subprocess.PIPE, stderr=f, text=True, timeout=30)
    assert proc.returncode == 0
    lines = log.read_text().splitlines()
    assert len(lines) == 1 and lines[0].startswith(EPERM_MESSAGE), lines


def test_only_the_wrappers_are_exported(built):
    out = subprocess.run(["nm", "-D", "--defined-only", built["lib"]],
                         capture_output=True, text=True, check=True).stdout
    exported = {line.split()[-1] for line in out.splitlines() if " T " in line}
    assert exported == {"epoll_create", "epoll_create1"}


def test_no_allocator_or_lock_imports(built):
    """The wrappers must not allocate or lock: the library imports neither."""
    out = subprocess.run(["nm", "-D", "--undefined-only", built["lib"]],
                         capture_output=True, text=True, check=True).stdout
    names = {line.split()[-1].split("@")[0] for line in out.splitlines()}
    forbidden = {"malloc", "calloc", "realloc", "free", "strdup", "setenv",
                 "putenv", "pthread_mutex_lock", "pthread_once", "fopen"}
    assert not names & forbidden, names & forbidden


# irqtune-busypoll-run

def run_cmd(built, args, env=None):
    env = clean_env(IRQTUNE_BUSYPOLL_LIBRARY=built["lib"]) if env is None else env
    return subprocess.run([built["run"]] + args, env=env, capture_output=True,
                          text=True, timeout=30)


def test_run_command_sets_values(built, kernel_params):
    proc = run_cmd(built, ["--usecs", "10", "--budget=16", "--prefer", "1", "--",
                           built["probe"]])
    assert proc.returncode == 0, proc.stderr
    assert_all(parse_probe(proc.stdout), (10, 16, 1))


def test_run_command_defaults(built, kernel_params):
    proc = run_cmd(built, [built["probe"], "--no-exec"])
    assert proc.returncode == 0, proc.stderr
    assert_all(parse_probe(proc.stdout), (0, 64, 1), LABELS - {"exec-child"})


def test_run_command_appends_to_ld_preload(built):
    env = clean_env(IRQTUNE_BUSYPOLL_LIBRARY=built["lib"], LD_PRELOAD="libc.so.6")
    proc = run_cmd(built, ["/usr/bin/env"], env=env)
    assert proc.returncode == 0, proc.stderr
    assert "LD_PRELOAD=libc.so.6:%s" % built["lib"] in proc.stdout.splitlines()


def test_run_command_passes_arguments_verbatim(built):
    arg = "a b;$(false)'\"*"
    proc = run_cmd(built, ["--", "/usr/bin/printf", "%s\\n", arg, "--usecs"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [arg, "--usecs"]


@pytest.mark.parametrize("args", [
    ["--budget", "abc", "/bin/true"],
    ["--budget", "70000", "/bin/true"],
    ["--usecs", "-1", "/bin/true"],
    ["--usecs", "2147483648", "/bin/true"],
    ["--prefer", "2", "/bin/true"],
    ["--log", "mail", "/bin/true"],
    ["--bogus", "/bin/true"],
    ["--usecs"],
    [],
])
def test_run_command_rejects_bad_usage(built, args):
    proc = run_cmd(built, args)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stderr.strip()


def test_run_command_missing_library(built, tmp_path):
    env = clean_env(IRQTUNE_BUSYPOLL_LIBRARY=str(tmp_path / "nope.so"))
    proc = run_cmd(built, ["/bin/true"], env=env)
    assert proc.returncode == 2
    assert "library not found" in proc.stderr


def test_service_still_runs_when_the_preload_package_is_gone(built, kernel_params, tmp_path):
    """Erasing irqtune-preload while a drop-in still names the library: the
    dynamic loader skips the missing object with one message and the
    program runs (docs/packaging.md, "Scriptlets").  The environment is the
    one the plugin's drop-in sets."""
    from irqtune.features.service_optin import OptInValues, dropin_content
    gone = str(tmp_path / "usr/lib64/irqtune/libirqtune-busypoll.so")
    env = clean_env()
    for line in dropin_content(gone, OptInValues()).splitlines():
        if line.startswith("Environment="):
            key, _, value = line[len("Environment="):].strip('"').partition("=")
            env[key] = value
    assert env["LD_PRELOAD"] == gone
    proc = subprocess.run([built["probe"]], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "cannot be preloaded" in proc.stderr and gone in proc.stderr, proc.stderr
    assert_all(parse_probe(proc.stdout), (0, 0, 0))     # runs as if never opted in
