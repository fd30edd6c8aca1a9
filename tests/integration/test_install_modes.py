# SPDX-License-Identifier: GPL-2.0-or-later
"""Nothing irqtune installed or created is writable by another user, with
TuneD's daemon running under umask 0 (issue 35, item 1).

TuneD daemonizes with os.umask(0) (tuned/daemon/application.py), so the
first import of a module whose bytecode was not compiled at install
creates its __pycache__ 0777 - and root imports what is in it (an
unprivileged user planted a .pyc there that root's next `irqtune status`
ran).  Here the real daemon is started under umask 0 in a namespace with
veth NAPIs, applies a latency-suspend profile (the ledger goes to
/run/irqtune), and the command runs as root (status, metrics --output), as
the metrics timer's user, and from the PCP entry.  Then every path of the
installed tree - the installed copy of what `make install DESTDIR=...`
lays down, each with its parent directories, everything below irqtune's
own directories (bytecode caches included), the plugins' caches, the
state TuneD's run left and the metrics' files - is checked: none may be
group- or world-writable.

Run after `make install` of the tree under test (as `make check` does).
"""

import os
import shutil
import stat
import subprocess
import tempfile
import urllib.request

import pytest

from support.commands import run
from support.tuned_daemon import CONFINED_LATENCY_SUSPEND, TunedDaemon
from support.waiting import wait_for

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROFILE = "irqtune-umask-test"
METRICS_USER = "irqtune-metrics"
METRICS_FILE = "/var/lib/irqtune-metrics/irqtune.prom"
STATE_DIR = "/run/irqtune"
TUNED_VALUES = {"defer-hard-irqs": 100, "gro-flush-timeout": 20000,
                "irq-suspend-timeout": 20000000}


class Umask0Daemon(TunedDaemon):
    """The harness's daemon, exec'ed from a process that set umask 0 -
    what `tuned --daemon` does to itself and the harness's foreground
    daemon does not."""

    def start(self):
        assert self.proc is None
        self.proc = self.ns.popen(
            "/usr/bin/python3", "-c",
            "import os, sys; os.umask(0); os.execvp(sys.argv[1], sys.argv[1:])",
            "tuned", "--debug", "--log", self.log_path,
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        wait_for(lambda: "active profile" in self.adm("active", check=False).stdout,
                 timeout=30, what="tuned on D-Bus")
        # another daemon holding TuneD's D-Bus name would answer instead
        assert self.proc.poll() is None, "tuned exited:\n" + self.log()[-3000:]

    def umask(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            return next(int(l.split()[1], 8) for l in f if l.startswith("Umask:"))


def make_var(name):
    """A variable of the top-level Makefile as `make install` computes it."""
    out = run("make", "-s", "-C", REPO, "--no-print-directory", "-f", "Makefile",
              "-f", "-", "print-var", input="print-var:\n\t@echo $(%s)\n" % name).stdout
    return out.strip()


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """Paths `make install` lays down (relative to /), from an install of
    the same tree into a scratch DESTDIR with the same variables."""
    dest = tmp_path_factory.mktemp("destdir")
    run("make", "-s", "-C", REPO, "install", "DESTDIR=%s" % dest, timeout=600)
    paths = []
    for dirpath, dirnames, filenames in os.walk(dest):
        for name in dirnames + filenames:
            paths.append("/" + os.path.relpath(os.path.join(dirpath, name), dest))
    assert any(p.endswith("/irqtune/__init__.py") for p in paths)
    return paths


@pytest.fixture(scope="module")
def daemon(host_tuned, netns):
    netns.add_veth("va0", queues=2)
    workdir = tempfile.mkdtemp(prefix="irqtune-umask-")
    d = Umask0Daemon(netns, workdir)
    try:
        d.setup()
        d.write_profile(PROFILE, CONFINED_LATENCY_SUSPEND)
        d.write_variables("suspend_nics=va*\n")
        try:
            d.start()
            assert d.umask() == 0
            d.profile(PROFILE)
            wait_for(lambda: netns.napis_have(["va0"], TUNED_VALUES),
                     what="profile values on va0")
        except AssertionError:
            print("--- tuned.log\n" + d.log()[-4000:])
            raise
        yield d
        d.adm("off", check=False)
    finally:
        d.teardown()
        shutil.rmtree(workdir, ignore_errors=True)


def as_root_umask0(netns, *argv):
    p = subprocess.run(("ip", "netns", "exec", netns.name) + argv, umask=0,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def writable_by_others(path):
    """'path: mode owner' when group or others may write path (a symlink:
    its target), else None."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    if stat.S_IMODE(st.st_mode) & 0o022 and not (stat.S_ISDIR(st.st_mode)
                                                 and st.st_mode & stat.S_ISVTX):
        return "%s: %o uid %d" % (path, stat.S_IMODE(st.st_mode), st.st_uid)
    return None


def with_parents(path):
    yield path
    while path != "/":
        path = os.path.dirname(path)
        yield path


def below(top):
    yield top
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            yield os.path.join(dirpath, name)


def test_nothing_installed_or_created_is_writable_by_others(netns, daemon, installed, tmp_path):
    # root's command under umask 0: status and a metrics file
    status = as_root_umask0(netns, "/usr/bin/irqtune", "status", "va0")
    assert "va0" in status
    out = tmp_path / "root.prom"
    as_root_umask0(netns, "/usr/bin/irqtune", "metrics", "--output", str(out))
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o644
    # the timer's command as the timer's user, and the PCP entry as root
    as_root_umask0(netns, "setpriv", "--reuid=" + METRICS_USER, "--regid=" + METRICS_USER,
                   "--clear-groups", "/usr/bin/irqtune", "metrics", "--output", METRICS_FILE)
    assert os.stat(METRICS_FILE).st_uid != 0
    pcp = as_root_umask0(netns, make_var("PCP_PMDAS_DIR") + "/openmetrics/config.d/irqtune.sh")
    assert 'device="va0"' in pcp and pcp.endswith("# EOF\n")
    assert os.listdir(STATE_DIR), "the profile left no ledger in %s" % STATE_DIR

    sitelib = make_var("PYTHON_SITELIB")
    plugin_dir = make_var("TUNED_PLUGIN_DIR")
    stems = [os.path.basename(p)[:-3] for p in installed
             if os.path.dirname(p) == plugin_dir and p.endswith(".py")]
    assert stems
    checked = set()
    for path in installed:                       # what make install laid down
        checked.update(with_parents(path))
    own_dirs = [sitelib + "/irqtune", STATE_DIR, os.path.dirname(METRICS_FILE)]
    own_dirs += [p for p in installed if os.path.basename(p) == "irqtune" and os.path.isdir(p)]
    for top in own_dirs:                         # and what appeared in irqtune's directories
        checked.update(below(top))
    checked.update(with_parents(plugin_dir + "/__pycache__"))
    checked.update(os.path.join(plugin_dir, "__pycache__", name)
                   for name in os.listdir(plugin_dir + "/__pycache__")
                   if name.split(".")[0] in stems)
    offenders = sorted(filter(None, map(writable_by_others, checked)))
    assert not offenders, "\n".join(offenders)
    # the run had something to check: the daemon's bytecode caches exist
    assert os.path.isdir(sitelib + "/irqtune/features/napi/__pycache__")
    assert any(os.path.basename(p).startswith("plugin_napi.")
               for p in checked if "/__pycache__/" in p)


def test_node_exporter_reads_the_timers_file_through_the_installed_link(netns, daemon):
    """The timer's user writes its own directory; node_exporter's textfile
    collector, pointed at the distribution's directory, follows the link
    the install put there (issue 35, item 9)."""
    exporter = shutil.which("prometheus-node-exporter")
    if exporter is None:
        pytest.skip("prometheus-node-exporter not installed")
    textfile_dir = make_var("METRICS_TEXTFILE_DIR")
    assert os.readlink(textfile_dir + "/irqtune.prom") == METRICS_FILE
    as_root_umask0(netns, "setpriv", "--reuid=" + METRICS_USER, "--regid=" + METRICS_USER,
                   "--clear-groups", "/usr/bin/irqtune", "metrics", "--output", METRICS_FILE)
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    proc = subprocess.Popen([exporter, "--collector.disable-defaults", "--collector.textfile",
                             "--collector.textfile.directory=%s" % textfile_dir,
                             "--web.listen-address=127.0.0.1:%d" % port],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def scraped():
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
                    return r.read().decode()
            except OSError:
                return None
        text = wait_for(scraped, timeout=30, what="node_exporter")
        assert 'irqtune_napi_defer_hard_irqs{device="va0"' in text, text[-2000:]
        assert 'node_textfile_scrape_error 0' in text
    finally:
        proc.terminate()
        proc.wait(20)
