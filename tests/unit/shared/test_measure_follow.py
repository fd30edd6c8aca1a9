# SPDX-License-Identifier: GPL-2.0-or-later
"""gro_flush_timeout=auto / irq_suspend_timeout=auto: the decisions of
irqtune.shared.measure.follow (when to measure, the band, the bounds) and the
services it measures, with a fake clock and fake windows; the option
"auto" and NapiTuner.tick (the tuner measures and sets what changed), on
the fake netdev family (support/fakes/netdev.py); the napi plugin's
options and its re-check, and latency-suspend with auto through TuneD's
own profile loader.

The /proc/PID/stat line is one of the development host's (Linux 6.18,
Debian 12: `cat /proc/$(pidof memcached)/stat`, utime 1234 and stime 567
ticks), and so is the head of /proc/PID/status (of polkitd's thread
gdbus: `head -16 /proc/3538/status`, its thread group 3534)."""

import logging
import os
import signal
import threading
import time

import pytest
from support.fakes.netdev import FULL, OLD_KERNEL, FakeNetdev
from support.profiles import PROFILES, check_loaded, load
from support.tuned_loader import load_plugin_module, tuned_errors

from irqtune.frontends.doctor import targets
from irqtune.kernel import files
from irqtune.kernel.errors import IrqtuneError
from irqtune.kernel.kfs import KernelFs
from irqtune.shared.ledger import Ledger
from irqtune.shared.measure import busy, follow
from irqtune.shared.measure.epolltrace import Recorded
from irqtune.features.napi import NapiConfig, NapiTuner
from irqtune.shared.tuner import DeviceTuner
from support.fakes.systemd import FakeSystemd

STAT = ("4242 (memcached) S 1 4242 4242 0 -1 4194624 2301 0 0 0 1234 567 0 0 20 0 10 0 "
        "1183394 433950720 2114 18446744073709551615 94523467264000 94523467402233 "
        "140726779683136 0 0 0 0 4096 16898 0 0 0 17 1 0 0 0 0 0\n")
STATUS = ("Name:\tgdbus\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t3534\nNgid:\t0\n"
          "Pid:\t3538\nPPid:\t1\nTracerPid:\t0\nUid:\t996\t996\t996\t996\n"
          "Gid:\t996\t996\t996\t996\nFDSize:\t256\nGroups:\t996 \nNStgid:\t3534\n"
          "NSpid:\t3538\nNSpgid:\t3326\nNSsid:\t3326\n")


# -- the services -------------------------------------------------------------

def test_auto_services_names_units_and_pid_files():
    assert follow.parse_services("memcached, nginx.service,memcached ,, /run/x.pid") == \
        ["memcached.service", "nginx.service", "/run/x.pid"]
    assert follow.parse_services(None) == [] and follow.parse_services(" , ") == []
    for bad in ("memcached.socket", "run/x.pid", "/run/../x.pid", "my unit", "/run/my x.pid"):
        with pytest.raises(IrqtuneError) as err:
            follow.parse_services("memcached, " + bad)
        assert str(err.value).startswith("auto_services: invalid value '")
        assert str(err.value).endswith("(accepted: systemd service units (name or "
                                       "name.service) or absolute paths of pid files, "
                                       "separated by commas)")


def pid_file(path, text, mode=0o644):
    """A pid file as a service that runs as root writes it."""
    path.write_text(text)
    path.chmod(mode)
    return str(path)


def running(proc, pid, ago=100.0, state="S", flags=4194624, tgid=None):
    """proc/PID/stat and status of a process (or, tgid given, a thread of
    process tgid) that started `ago` seconds before now, on this host's
    boot clock: STAT with its pid, state, flags and start time (field 22,
    clock ticks since boot) replaced, STATUS with its ids."""
    fields = STAT.split()
    ticks = int((time.clock_gettime(time.CLOCK_BOOTTIME) - ago) * os.sysconf("SC_CLK_TCK"))
    fields[0], fields[2], fields[8], fields[21] = str(pid), state, str(flags), str(ticks)
    (proc / str(pid)).mkdir(parents=True, exist_ok=True)
    (proc / str(pid) / "stat").write_text(" ".join(fields) + "\n")
    (proc / str(pid) / "status").write_text(
        STATUS.replace("3534", str(tgid or pid)).replace("3538", str(pid)))


def written_ago(path, seconds):
    """The pid file as last written seconds ago."""
    when = time.time() - seconds
    os.utime(str(path), (when, when))


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_services_from_units_and_pid_files(tmp_path):
    running(tmp_path / "proc", 42)
    pid_file(tmp_path / "srv.pid", "42\n")
    group = tmp_path / "sys" / "fs" / "cgroup" / "system.slice" / "memcached.service"
    group.mkdir(parents=True)
    (group / "cgroup.procs").write_text("8\n7\n")
    (tmp_path / "run/systemd/system").mkdir(parents=True)
    kfs = KernelFs(proc=str(tmp_path / "proc"), sys=str(tmp_path / "sys"))
    bus = FakeSystemd({"memcached.service": {"ControlGroup": "/system.slice/memcached.service"}})
    clock = Clock()
    services = follow.Services(["memcached.service", str(tmp_path / "srv.pid")], kfs, bus,
                             clock, str(tmp_path))
    assert services.pids() == [7, 8, 42]
    assert services.pids() == [7, 8, 42]            # the control group is known: systemd not asked
    assert bus.asked() == ["LoadState", "ControlGroup"]
    cpu, started = services.usage([42, 44])
    assert cpu == pytest.approx((1234 + 567) / 100) and list(started) == [42]
    (group / "cgroup.procs").write_text("")     # stopped: systemd asked again, not each time
    pid_file(tmp_path / "srv.pid", "43\n")
    with pytest.raises(IrqtuneError, match="no process runs: memcached.service: the unit runs "
                                           "no process; .*srv.pid: no running process"):
        services.pids()
    assert bus.asked().count("ControlGroup") == 1
    clock.now += follow.RETRY
    with pytest.raises(IrqtuneError, match=r"the unit runs no process \(ActiveState=inactive\)"):
        services.pids()
    with pytest.raises(IrqtuneError, match="the unit runs no process;"):
        services.pids()
    assert bus.asked().count("ControlGroup") == 2


# systemd's own hierarchy, by /proc/self/mountinfo (measure_fixtures/):
# unified - a Talos node's cgroup2 line (siderolabs/talos pull request
#   4110, `talosctl read /proc/1/mountinfo`): systemd mounts cgroup2 there too;
# hybrid - the development host (Linux 6.18, Debian 12,
#   `grep -E " /sys |cgroup" /proc/self/mountinfo`);
# legacy - a RHEL 7.8 host (containers/podman issue 7004, `grep cgroup
#   /proc/self/mountinfo`); RHEL 8 (systemd 239, legacy by default) mounts
#   the same hierarchies.
FIXTURES = os.path.join(os.path.dirname(__file__), "..", "measure_fixtures")


def mountinfo(name):
    with open(os.path.join(FIXTURES, "mountinfo-" + name)) as f:
        return f.read()


LAYOUTS = {"unified": ("unified-talos", "fs/cgroup"),
           "hybrid": ("hybrid-6.18", "fs/cgroup/unified"),
           "legacy": ("legacy-rhel7.8", "fs/cgroup/systemd"),
           "no mountinfo": (None, "fs/cgroup")}


def cgroup_tree(tmp_path, layout, pids="7\n8\n"):
    """A KernelFs whose mountinfo is layout's and whose systemd hierarchy
    holds memcached.service with pids; the other hierarchies hold a decoy."""
    name, hierarchy = LAYOUTS[layout]
    (tmp_path / "proc" / "self").mkdir(parents=True)
    if name is not None:
        (tmp_path / "proc" / "self" / "mountinfo").write_text(mountinfo(name))
    for where in {"fs/cgroup", "fs/cgroup/unified", "fs/cgroup/systemd", hierarchy}:
        group = tmp_path / "sys" / where / "system.slice" / "memcached.service"
        group.mkdir(parents=True, exist_ok=True)
        (group / "cgroup.procs").write_text(pids if where == hierarchy else "999\n")
    return KernelFs(proc=str(tmp_path / "proc"), sys=str(tmp_path / "sys")), hierarchy


@pytest.mark.parametrize("layout", LAYOUTS)
def test_systemd_hierarchy_by_what_is_mounted(tmp_path, layout):
    kfs, hierarchy = cgroup_tree(tmp_path, layout)
    assert kfs.systemd_cgroup_root() == str(tmp_path / "sys" / hierarchy)
    assert kfs.cgroup_procs("/system.slice/memcached.service") == [7, 8]
    assert kfs.cgroup_procs("/system.slice/nginx.service") == []


def test_only_systemd_own_mounts_count(tmp_path):
    """A cgroup2 mounted elsewhere (a container runtime's) or a v1 hierarchy
    at systemd's place without name=systemd is not systemd's; a mount on
    top of another at the same place is the one seen."""
    kfs = KernelFs(proc=str(tmp_path), sys="/sys")
    (tmp_path / "self").mkdir()
    legacy = mountinfo("legacy-rhel7.8")
    (tmp_path / "self" / "mountinfo").write_text(
        legacy.replace("name=systemd", "cpu") +
        "90 25 0:50 / /run/runtime/cgroup rw - cgroup2 cgroup2 rw\n")
    assert kfs.systemd_cgroup_root() == "/sys/fs/cgroup"
    (tmp_path / "self" / "mountinfo").write_text(mountinfo("unified-talos") + legacy)
    assert kfs.systemd_cgroup_root() == "/sys/fs/cgroup/systemd"


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_unit_processes_on_each_cgroup_layout(tmp_path, layout):
    """RHEL 8 runs cgroup v1: the auto values and the doctor find a unit's
    processes in /sys/fs/cgroup/systemd there, not only under v2."""
    kfs, _ = cgroup_tree(tmp_path, layout)
    (tmp_path / "run/systemd/system").mkdir(parents=True)

    bus = FakeSystemd({"memcached.service": {"MainPID": 7,
                                             "ControlGroup": "/system.slice/memcached.service"}})
    services = follow.Services(["memcached.service"], kfs, bus, root=str(tmp_path))
    assert services.pids() == [7, 8]
    assert targets.service_pids("memcached.service", bus, kfs, str(tmp_path)) == [7, 8]


@pytest.mark.parametrize("text", ["", "x\n", "\u0664\u0662\n", "-42\n", "42" * 6])
def test_a_pid_file_holds_ascii_digits(tmp_path, text):
    (tmp_path / "proc" / "42").mkdir(parents=True)
    pid_file(tmp_path / "srv.pid", text)
    services = follow.Services([str(tmp_path / "srv.pid")], KernelFs(proc=str(tmp_path / "proc")))
    with pytest.raises(IrqtuneError, match="srv.pid: no running process in the pid file"):
        services.pids()


def refused_lines(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def symlink_to_a_good_one(path):
    os.symlink(pid_file(path.with_name("real.pid"), "42\n"), str(path))


def fifo(path):
    os.mkfifo(str(path), 0o600)          # opened, it would wait for a writer


class Waited(Exception):
    """Not an OSError, which the code under test would take for a missing file."""


@pytest.fixture
def never_waits():
    """A read that waits (a FIFO without a writer) fails the test after 10 s
    instead of hanging it: the daemon's re-check must never wait."""
    def waited(signum, frame):
        raise Waited("the pid file's read waited")
    previous = signal.signal(signal.SIGALRM, waited)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def other_owner(path):
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    os.chown(pid_file(path, "42\n"), 65534, 0)


@pytest.mark.parametrize("make, why", [
    (lambda p: pid_file(p, "42\n", 0o664), "group or others may write it (mode 0664)"),
    (lambda p: pid_file(p, "42\n", 0o602), "group or others may write it (mode 0602)"),
    (symlink_to_a_good_one, "it is a symbolic link"),
    (fifo, "it is not a regular file"),
    (other_owner, "it is owned by uid 65534"),
], ids=["group-writable", "other-writable", "symlink", "fifo", "not root's"])
def test_a_pid_file_another_user_could_write_is_refused(tmp_path, caplog, never_waits, make,
                                                        why):
    """Root measures the process a pid file names: one that another user
    could have written would let them point root's perf events at any
    process.  Refused in one line, said once; the other services are
    measured; put right, it is read again."""
    running(tmp_path / "proc", 42)
    running(tmp_path / "proc", 43)
    bad = tmp_path / "srv.pid"
    make(bad)
    good = pid_file(tmp_path / "other.pid", "43\n")
    services = follow.Services([str(bad), good], KernelFs(proc=str(tmp_path / "proc")))
    caplog.set_level(logging.DEBUG, logger="irqtune")
    assert services.pids() == [43]
    assert services.pids() == [43]
    assert refused_lines(caplog) == [
        "auto_services: pid file %s refused: %s (accepted: %s)" % (bad, why, files.ROOT_ONLY)]
    alone = follow.Services([str(bad)], KernelFs(proc=str(tmp_path / "proc")))
    with pytest.raises(IrqtuneError, match="no process runs: .*srv.pid: pid file refused$"):
        alone.pids()
    os.unlink(str(bad))
    pid_file(bad, "42\n")
    assert services.pids() == [42, 43]


def test_a_pid_taken_over_after_the_file_was_written_is_refused_once(tmp_path, caplog):
    """The service that wrote the pid file ended (SIGKILL, a crash) and left
    it behind; another process - any user's, forking until it gets that
    pid - now has the pid.  It started after the file was last written, so
    it is not the process that wrote it: refused, in one line however often
    the re-check reads it, and the other services are measured.  Written
    again (the service restarted and got that pid), it is measured."""
    proc = tmp_path / "proc"
    running(proc, 42, ago=10)
    running(proc, 43, ago=100)
    taken = pid_file(tmp_path / "srv.pid", "42\n")
    written_ago(taken, 60)
    good = pid_file(tmp_path / "other.pid", "43\n")
    written_ago(good, 90)
    services = follow.Services([taken, good], KernelFs(proc=str(proc)))
    caplog.set_level(logging.DEBUG, logger="irqtune")
    for _ in range(3):
        assert services.pids() == [43]
    assert refused_lines(caplog) == [
        "auto_services: pid file %s refused: pid 42 started after the file was last written: "
        "not the process that wrote it (its pid was reused after it ended)" % taken]
    alone = follow.Services([taken], KernelFs(proc=str(proc)))
    with pytest.raises(IrqtuneError, match="no process runs: .*srv.pid: pid 42 started after "
                                           "the file was last written$"):
        alone.pids()
    written_ago(taken, 0)
    assert services.pids() == [42, 43]


@pytest.mark.parametrize("started, written, taken", [
    (60.0, 60.0, False),     # the file written in the tick the process started
    (59.9, 60.0, True),      # started 100 ms after the file was written
    (100.0, 60.0, False),
], ids=["same tick", "100 ms later", "long before"])
def test_the_start_is_compared_with_the_file_to_the_clock_tick(tmp_path, started, written,
                                                               taken):
    running(tmp_path / "proc", 42, ago=started)
    path = pid_file(tmp_path / "srv.pid", "42\n")
    written_ago(path, written)
    services = follow.Services([path], KernelFs(proc=str(tmp_path / "proc")))
    if taken:
        with pytest.raises(IrqtuneError, match="started after the file was last written"):
            services.pids()
    else:
        assert services.pids() == [42]


@pytest.mark.parametrize("state, flags", [("Z", 4194624), ("X", 4194624), ("I", 0x00208040)],
                         ids=["zombie", "dead", "kernel thread"])
def test_a_pid_file_naming_no_running_user_process_is_not_measured(tmp_path, state, flags):
    running(tmp_path / "proc", 42, state=state, flags=flags)
    path = pid_file(tmp_path / "srv.pid", "42\n")
    services = follow.Services([path], KernelFs(proc=str(tmp_path / "proc")))
    with pytest.raises(IrqtuneError, match="srv.pid: pid 42 is not a running user process"):
        services.pids()


@pytest.mark.parametrize("text, tgid, why", [
    ("1\n", None, "pid 1 is init, not a service (a pid file written inside a pid namespace "
                  "holds that namespace's pid)"),
    ("43\n", 42, "pid 43 is a thread of process 42, not a process"),
], ids=["init", "thread"])
def test_a_pid_of_init_or_of_a_thread_is_refused_once(tmp_path, caplog, text, tgid, why):
    """Root-written, but not a service's pid as this pid namespace numbers
    its processes: "1" written inside a container is the host's init, and
    a thread's id (gettid) names one thread of the process, which /proc
    answers for as if it were a process of its own (issue 47, item 12)."""
    proc = tmp_path / "proc"
    running(proc, 1)
    running(proc, 42)
    running(proc, 43, tgid=tgid)
    path = pid_file(tmp_path / "srv.pid", text)
    services = follow.Services([path, pid_file(tmp_path / "other.pid", "42\n")],
                             KernelFs(proc=str(proc)))
    caplog.set_level(logging.DEBUG, logger="irqtune")
    for _ in range(3):
        assert services.pids() == [42]
    assert refused_lines(caplog) == ["auto_services: pid file %s refused: %s" % (path, why)]
    alone = follow.Services([path], KernelFs(proc=str(proc)))
    with pytest.raises(IrqtuneError, match="no process runs: .*srv.pid: pid file refused$"):
        alone.pids()


def test_a_refusal_is_said_once_per_path_and_cause_however_the_file_alternates(
        tmp_path, caplog, never_waits):
    """A user who owns the pid file's directory can put something else
    there before every re-check - a symbolic link, a FIFO, a file of their
    own or one others may write, nothing, or the service's own file back,
    naming a pid they took over.  Each cause is said once for the path,
    not once per change of its text: the log cannot be flooded."""
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    proc = tmp_path / "proc"
    running(proc, 42, ago=10)
    path = tmp_path / "srv.pid"

    def own_file(p):
        os.chown(pid_file(p, "42\n"), 65534, 65534)

    def taken_over(p):
        written_ago(pid_file(p, "42\n"), 60)
    contents = [symlink_to_a_good_one, fifo, own_file,
                lambda p: pid_file(p, "42\n", 0o666), lambda p: pid_file(p, "42\n", 0o646),
                lambda p: None, taken_over]
    clock = Clock()
    values = follow.Follower(follow.AUTO_ATTRS, {}, follow.Services([str(path)],
                             KernelFs(proc=str(proc)), clock=clock), 600, clock, Windows())
    caplog.set_level(logging.DEBUG, logger="irqtune")
    for _ in range(3):
        for make_content in contents:
            if os.path.lexists(str(path)):
                os.unlink(str(path))
            make_content(path)
            clock.now += 5
            assert values.tick() is None
    said = refused_lines(caplog)
    assert said == [
        "auto_services: pid file %s refused: it is a symbolic link (accepted: %s)"
        % (path, files.ROOT_ONLY),
        "auto_services: no process runs: %s: pid file refused; the auto values stay "
        "gro_flush_timeout=20us, irq_suspend_timeout=20ms (auto)" % path,
        "auto_services: pid file %s refused: pid 42 started after the file was last written: "
        "not the process that wrote it (its pid was reused after it ended)" % path], said


# -- decisions ----------------------------------------------------------------

class FakeServices:
    """running: the pids; started: {pid: start time}, changed by a restart
    that kept the pid; cpu: their CPU seconds so far."""

    def __init__(self, pids=(7,)):
        self.running = list(pids)
        self.started = {pid: 100 for pid in pids}
        self.cpu = 0.0
        self.fault = None           # raised by pids(): a bug somewhere below

    def pids(self):
        if self.fault is not None:
            raise self.fault
        if not self.running:
            raise IrqtuneError("auto_services: no process runs: memcached.service: the unit "
                               "runs no process")
        return self.running

    def usage(self, pids):
        return self.cpu, {pid: self.started.get(pid, 100) for pid in pids}


class Windows:
    """record(): n busy periods of k events of per_event ns each; exited:
    the pids that ended during the window."""

    def __init__(self):
        self.per_event, self.k, self.n, self.calls, self.exited = 110000, 8, 500, 0, []
        self.at = []

    def __call__(self, pids, seconds):
        self.calls += 1
        if self.n is None:
            raise IrqtuneError("no syscall tracepoints for epoll_wait in tracefs")
        return Recorded(3.0, 1, [busy.Period(7, self.k * self.per_event, self.k)] * self.n, 64,
                        exited=list(self.exited))


def make(auto_attrs=follow.AUTO_ATTRS, fixed=None, interval=600):
    clock, services, windows = Clock(), FakeServices(), Windows()
    values = follow.Follower(auto_attrs, fixed or {}, services, interval, clock, windows)
    return values, clock, services, windows


def busy_for(values, clock, services, seconds=5, share=0.5):
    clock.now += seconds
    services.cpu += seconds * share
    return values.tick()


def test_idle_services_are_not_measured():
    values, clock, services, windows = make()
    assert values.tick() is None                        # the first re-check only takes a mark
    for _ in range(10):
        assert busy_for(values, clock, services, share=0.01) is None
    assert windows.calls == 0 and values.values == follow.START


def test_load_brings_a_window_and_values_outside_the_band_change():
    values, clock, services, windows = make()
    values.tick()
    change = busy_for(values, clock, services)
    assert windows.calls == 1
    assert change.values == {"gro-flush-timeout": (20000, 165000),
                             "irq-suspend-timeout": (20000000, 1760000)}
    assert change.targets() == {"gro-flush-timeout": 165000, "irq-suspend-timeout": 1760000}
    assert change.line() == (
        "auto: gro_flush_timeout 20us -> 165us, irq_suspend_timeout 20ms -> 1.76ms "
        "(500 busy periods in 3.0 s: per event p99 110us, per batch p99 880us, up to 8 events)")
    assert values.values == {"gro-flush-timeout": 165000, "irq-suspend-timeout": 1760000}


def test_no_window_before_the_interval_and_no_flapping_within_the_band():
    values, clock, services, windows = make(interval=600)
    values.tick()
    busy_for(values, clock, services)
    for _ in range(100):                                 # 500 s of load: not due yet
        assert busy_for(values, clock, services) is None
    assert windows.calls == 1
    windows.per_event = 130000                           # +18 %: inside the band
    clock.now += 100
    busy_for(values, clock, services)
    assert busy_for(values, clock, services) is None and windows.calls == 2
    assert values.values["gro-flush-timeout"] == 165000
    windows.per_event, windows.k = 30000, 32             # another service: leaves the band
    clock.now += 600
    busy_for(values, clock, services)
    change = busy_for(values, clock, services)
    assert windows.calls == 3 and change.values["gro-flush-timeout"] == (165000, 45000)


def test_too_little_traffic_retries_later_and_changes_nothing():
    values, clock, services, windows = make()
    windows.n = 20
    values.tick()
    assert busy_for(values, clock, services) is None and values.values == follow.START
    for _ in range(11):                                  # 55 s: before RETRY
        busy_for(values, clock, services)
    assert windows.calls == 1
    windows.n = 500
    busy_for(values, clock, services)
    assert busy_for(values, clock, services) is not None and windows.calls == 2


def test_windows_without_busy_periods_back_off_to_a_cap():
    """A service busy without busy periods (a loop spinning in
    epoll_wait(timeout 0) has load and never a batch): each window that
    finds too few waits the next twice as long, up to RETRY_MAX; one
    with enough periods ends the back-off."""
    values, clock, services, windows = make(interval=600)
    windows.n = 0
    values.tick()
    taken = []
    for _ in range(4000):                   # 20 000 s of load, a re-check every 5 s
        before = windows.calls
        busy_for(values, clock, services)
        if windows.calls > before:
            taken.append(clock.now)
    # the re-check after a window only takes the load's mark: 5 s more
    gaps = [round(b - a) - 5 for a, b in zip(taken, taken[1:])]
    assert gaps[:7] == [60, 120, 240, 480, 960, 1920, 3600], gaps
    assert set(gaps[6:]) == {follow.RETRY_MAX}
    windows.n = 500
    clock.now += follow.RETRY_MAX
    busy_for(values, clock, services)
    assert busy_for(values, clock, services) is not None
    windows.n = 0
    clock.now += 600
    busy_for(values, clock, services)
    calls = windows.calls
    busy_for(values, clock, services)       # measured: the next try after RETRY again
    for _ in range(12):
        busy_for(values, clock, services)
    assert windows.calls == calls + 1


def test_auto_interval_defaults_to_what_the_plugin_documents():
    config, _ = NapiConfig.from_options({"gro_flush_timeout": "auto"}, allow_auto=True)
    for given in ({}, {"auto_interval": ""}, {"auto_interval": " "}):
        values, errors = follow.from_options(config, dict(given, auto_services="memcached"), 5)
        assert errors == [] and values.interval == 600
    pytest.importorskip("tuned.plugins")
    plugin = load_plugin_module("napi").NapiPlugin
    doc = " ".join(plugin.__doc__.split())
    assert "[option]`auto_interval` seconds (10 to 86400, default 600)" in doc
    assert plugin.get_config_options_hints()["auto_interval"].endswith("(default 600)")


def test_a_service_at_exactly_the_minimum_load_is_measured():
    values, clock, services, windows = make()
    values.tick()
    assert busy_for(values, clock, services, share=follow.MIN_LOAD * 0.99) is None
    assert windows.calls == 0
    assert busy_for(values, clock, services, share=follow.MIN_LOAD) is not None
    assert windows.calls == 1


def test_load_is_compared_only_over_the_same_processes():
    """A restarted service's CPU time is not set against the old one's:
    neither when it has new pids nor when it got the old pid again."""
    values, clock, services, windows = make()
    values.tick()
    services.running, services.started = [8], {8: 300}          # new pid
    assert busy_for(values, clock, services) is None and windows.calls == 0
    services.started = {8: 400}                                 # the same pid, restarted
    assert busy_for(values, clock, services) is None and windows.calls == 0
    assert busy_for(values, clock, services) is not None and windows.calls == 1


def test_the_band_holds_on_both_sides():
    values, clock, services, windows = make()
    values.tick()
    busy_for(values, clock, services)
    assert values.values["gro-flush-timeout"] == 165000
    for per_event, kept in ((95000, True), (125000, True), (60000, False)):
        windows.per_event = per_event        # -14 % and +14 %: inside; -45 %: outside
        clock.now += 600
        busy_for(values, clock, services)
        change = busy_for(values, clock, services)
        assert (change is None) == kept, per_event
    assert values.values["gro-flush-timeout"] == 90000


def test_a_window_in_which_a_measured_process_exited_sets_nothing():
    values, clock, services, windows = make()
    windows.exited = [7]
    values.tick()
    assert busy_for(values, clock, services) is None
    assert windows.calls == 1 and values.values == follow.START


def test_a_window_over_another_process_than_the_one_with_load_sets_nothing(monkeypatch):
    """The pid ended and was taken between the load's check and the
    window's start: the window measured another process."""
    values, clock, services, windows = make()

    def record(pids, seconds):
        return Recorded(3.0, 1, [busy.Period(7, 880000, 8)] * 500, 64, started={7: 999})
    values.record = record
    values.tick()
    assert busy_for(values, clock, services) is None and values.values == follow.START


def test_a_service_that_is_down_is_said_once(caplog):
    values, clock, services, windows = make()
    services.running = []
    caplog.set_level(logging.DEBUG, logger="irqtune")
    for _ in range(5):
        assert busy_for(values, clock, services) is None
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert said == ["auto_services: no process runs: memcached.service: the unit runs no "
                    "process; the auto values stay gro_flush_timeout=20us, "
                    "irq_suspend_timeout=20ms (auto)"]


def test_no_tracepoints_backs_off_and_is_said_once(caplog):
    values, clock, services, windows = make(interval=600)
    windows.n = None
    caplog.set_level(logging.DEBUG, logger="irqtune")
    values.tick()
    assert busy_for(values, clock, services) is None
    for _ in range(50):
        busy_for(values, clock, services)
    assert windows.calls == 1
    clock.now += 600
    busy_for(values, clock, services)
    busy_for(values, clock, services)
    assert windows.calls == 2
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert said == ["auto_services: cannot measure: no syscall tracepoints for epoll_wait in "
                    "tracefs; the auto values stay gro_flush_timeout=20us, "
                    "irq_suspend_timeout=20ms (auto)"]


# What reading a process named "srv\\xff\\xfe" raised on every re-check (issue 47, item 4).
UNDECODABLE = UnicodeDecodeError("utf-8", b"4242 (srv\xff\xfe) S 1", 9, 10, "invalid start byte")


def bugs(caplog):
    return [r.getMessage() for r in caplog.records
            if r.levelno >= logging.ERROR and "a bug in irqtune" in r.getMessage()]


def bug_line(text):
    return ("auto_services: measuring failed: %s (a bug in irqtune, please report it; said once "
            "until it changes), in test_measure_follow.py; the auto values stay "
            "gro_flush_timeout=20us, irq_suspend_timeout=20ms (auto)" % text)


def test_a_failure_of_one_cause_is_said_once_until_it_changes_or_clears(caplog):
    """A bug below the re-check (a process name that is not UTF-8 raised
    UnicodeDecodeError) is one error line, not one every 5 s; another
    cause is said, and the same once more after a re-check that worked."""
    values, clock, services, windows = make()
    services.fault = UNDECODABLE
    caplog.set_level(logging.DEBUG)
    for _ in range(20):
        assert busy_for(values, clock, services) is None
    services.fault = KeyError("Tgid")
    for _ in range(20):
        assert busy_for(values, clock, services) is None
    undecodable = bug_line("UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in "
                           "position 9: invalid start byte")
    assert bugs(caplog) == [undecodable, bug_line("KeyError: 'Tgid'")]
    assert windows.calls == 0
    services.fault = None
    clock.now += follow.RETRY
    assert busy_for(values, clock, services) is None        # worked: the load's mark
    services.fault = UNDECODABLE
    assert busy_for(values, clock, services) is None
    assert bugs(caplog)[2:] == [undecodable]


def test_a_window_that_fails_by_a_bug_is_tried_again_after_a_while(caplog):
    values, clock, services, windows = make()

    def record(pids, seconds):
        windows.calls += 1
        raise RuntimeError("boom")
    values.record = record
    caplog.set_level(logging.DEBUG)
    values.tick()
    for _ in range(24):                                      # two minutes of re-checks
        busy_for(values, clock, services)
    assert len(bugs(caplog)) == 1 and windows.calls <= 2


def test_a_fixed_partner_bounds_the_auto_value():
    values, clock, services, windows = make(auto_attrs=("irq-suspend-timeout",),
                                            fixed={"gro-flush-timeout": 2000000})
    values.tick()
    change = busy_for(values, clock, services)
    assert change.values == {"irq-suspend-timeout": (20000000, 4000000)}
    values, clock, services, windows = make(auto_attrs=("gro-flush-timeout",),
                                            fixed={"irq-suspend-timeout": 200000})
    values.tick()
    assert busy_for(values, clock, services).values == {"gro-flush-timeout": (20000, 100000)}


def test_no_auto_value_goes_beyond_what_a_profile_may_set():
    """A fixed gro_flush_timeout of 800 ms would want twice that: held at 1 s."""
    values, clock, services, windows = make(auto_attrs=("irq-suspend-timeout",),
                                            fixed={"gro-flush-timeout": 800000000})
    values.tick()
    assert busy_for(values, clock, services).values == \
        {"irq-suspend-timeout": (20000000, 1000000000)}


# -- the option and the tuner -------------------------------------------------

def test_auto_option_starts_at_the_series_values():
    config, errors = NapiConfig.from_options({"gro_flush_timeout": "auto",
                                              "irq_suspend_timeout": " AUTO ",
                                              "defer_hard_irqs": "100"}, allow_auto=True)
    assert errors == [] and config.measured_attrs == {"gro-flush-timeout", "irq-suspend-timeout"}
    assert config.attrs() == {"defer-hard-irqs": 100, "gro-flush-timeout": 20000,
                              "irq-suspend-timeout": 20000000}
    assert config.fixed() == {"defer-hard-irqs": 100}


def test_bad_values_name_auto_among_the_accepted_ones():
    _, errors = NapiConfig.from_options({"gro_flush_timeout": "automatic",
                                         "irq_suspend_timeout": "2s",
                                         "defer_hard_irqs": "auto"}, allow_auto=True)
    duration = ("a duration: a number of nanoseconds, or a number with unit ns, us, ms or s, "
                "at most 1s")
    assert [str(e) for e in errors] == [
        "defer_hard_irqs: invalid value 'auto' (accepted: an integer from 0 to 2147483647)",
        "gro_flush_timeout: invalid value 'automatic' (accepted: %s; or auto (measured from "
        "the services in auto_services))" % duration,
        "irq_suspend_timeout: invalid value '2s' (accepted: %s; or auto (measured from the "
        "services in auto_services))" % duration]


def test_auto_where_nothing_measures_is_refused():
    """zerocopy_rx's napi_* options, the doctor's other callers: no auto."""
    config, errors = NapiConfig.from_options({"gro_flush_timeout": "auto"})
    assert config.attrs() == {} and config.measured_attrs == frozenset()
    assert [str(e) for e in errors] == [
        "gro_flush_timeout: invalid value 'auto' (accepted: a duration: a number of "
        "nanoseconds, or a number with unit ns, us, ms or s, at most 1s)"]


def test_profile_drift_leaves_auto_values_out():
    from irqtune.frontends.activeprofile import NapiUnit
    config, _ = NapiConfig.from_options({"gro_flush_timeout": "auto", "defer_hard_irqs": "100"},
                                        allow_auto=True)
    unit = NapiUnit("napi", "*", None, config)
    assert unit.expected() == {"defer-hard-irqs": 100}


@pytest.fixture
def netdev(monkeypatch):
    fake = FakeNetdev().install(monkeypatch)
    fake.add_device(7, 2, defer_hard_irqs=3, gro_flush_timeout=5000, irq_suspend_timeout=7)
    return fake


def napi_tuner(tmp_path, caps=FULL, values=None):
    config, _ = NapiConfig.from_options({"defer_hard_irqs": "100", "gro_flush_timeout": "auto",
                                         "irq_suspend_timeout": "auto"}, allow_auto=True)
    return NapiTuner(config, caps, ledger=Ledger("napi-auto", str(tmp_path)),
                     ifindex={"eth0": 7}.get, ifname={7: "eth0"}.get, follower=values)


class Changes:
    """Follower that bring one change on the next tick."""

    def __init__(self, targets):
        self.change = follow.Change({a: (follow.START[a], v) for a, v in targets.items()}, "test")

    def tick(self):
        change, self.change = self.change, None
        return change


def test_the_tuner_measures_sets_the_change_and_restore_is_exact(tmp_path, netdev):
    """The napi tuner owns the auto values: on a tick it measures (the
    window without the lock), sets what changed on its devices under the
    lock, and verify checks the new values from then on."""
    t = napi_tuner(tmp_path, values=loaded())
    t.apply("eth0")
    assert netdev.values(7, "gro-flush-timeout") == [20000, 20000]
    lock = threading.Lock()
    change = t.tick(lock)
    assert change.targets() == {"gro-flush-timeout": 165000, "irq-suspend-timeout": 1760000}
    assert not lock.locked()
    assert netdev.values(7, "gro-flush-timeout") == [165000, 165000]
    assert netdev.values(7, "irq-suspend-timeout") == [1760000, 1760000]
    assert t.tick(lock) is None                         # not due again
    assert all(c.ok for c in t.verify("eth0"))
    netdev.napi(257)["gro-flush-timeout"] = 20000           # the value before the change
    assert [(c.what, c.current, c.expected) for c in t.verify("eth0") if not c.ok] == [
        ("NAPI 257 gro_flush_timeout", 20000, 165000)]
    # a daemon restarted meanwhile takes the originals from the ledger, not the tuned values
    again = napi_tuner(tmp_path)
    again.apply("eth0")
    again.restore_all()
    assert netdev.values(7, "defer-hard-irqs") == [3, 3]
    assert netdev.values(7, "gro-flush-timeout") == [5000, 5000]
    assert netdev.values(7, "irq-suspend-timeout") == [7, 7]


def test_a_change_after_restore_sets_nothing(tmp_path, netdev):
    """The profile was unapplied while the window ran: its originals are
    back, and the change must not undo that."""
    t = napi_tuner(tmp_path, values=Changes({"gro-flush-timeout": 165000}))
    t.apply("eth0")
    t.restore_all()
    assert t.tick(threading.Lock()) is None
    assert netdev.values(7, "gro-flush-timeout") == [5000, 5000]
    t = napi_tuner(tmp_path, values=Changes({"gro-flush-timeout": 165000}))
    t.apply("eth0")
    t.restore("eth0")                               # the device left the instance
    assert t.tick(threading.Lock()) is None
    assert netdev.values(7, "gro-flush-timeout") == [5000, 5000]


def test_a_change_on_the_sysfs_fallback_leaves_unsupported_values_out(tmp_path):
    dev = tmp_path / "class/net/lo"
    dev.mkdir(parents=True)
    (dev / "napi_defer_hard_irqs").write_text("2\n")
    (dev / "gro_flush_timeout").write_text("0\n")
    config, _ = NapiConfig.from_options({"defer_hard_irqs": "100", "gro_flush_timeout": "auto",
                                         "irq_suspend_timeout": "auto"}, allow_auto=True)
    t = NapiTuner(config, OLD_KERNEL, kfs=KernelFs(sys=str(tmp_path)),
                  follower=Changes({"gro-flush-timeout": 45000, "irq-suspend-timeout": 1000000}))
    t.apply("lo")
    assert t.tick(threading.Lock()) is not None
    assert (dev / "gro_flush_timeout").read_text() == "45000\n"
    assert "irq-suspend-timeout" in t.unsupported and "irq-suspend-timeout" not in t.per_napi
    assert [(c.what, c.expected, c.ok) for c in t.verify("lo")] == [
        ("defer_hard_irqs", 100, True), ("gro_flush_timeout", 45000, True)]
    t.restore_all()
    assert (dev / "gro_flush_timeout").read_text() == "0\n"


def test_a_tuner_without_measured_values_measures_nothing(tmp_path):
    from irqtune.shared.tuner import Tuner
    assert Tuner().tick(threading.Lock()) is None
    assert napi_tuner(tmp_path).tick(threading.Lock()) is None


# -- the napi plugin ----------------------------------------------------------

AUTO_OPTIONS = {"defer_hard_irqs": "100", "gro_flush_timeout": "${gro_flush_timeout}",
                "irq_suspend_timeout": "${irq_suspend_timeout}",
                "auto_services": "${optin_services},${auto_services}",
                "auto_interval": "${auto_interval}"}


def variables(**given):
    """latency-suspend's [variables] defaults, then the file's lines."""
    found = {"gro_flush_timeout": "auto", "irq_suspend_timeout": "20ms",
             "optin_services": "", "auto_services": "", "auto_interval": "600"}
    found.update(given)
    return list(found.items())


def test_plugin_measures_the_opted_in_and_the_auto_services(napi_init, caplog):
    caplog.set_level(logging.DEBUG)
    instance = napi_init(AUTO_OPTIONS, variables(optin_services="memcached",
                                                 auto_services="/run/x.pid", auto_interval="60"))
    assert tuned_errors(caplog) == []
    values = instance._tuner.follower
    assert values.services.entries == ["memcached.service", "/run/x.pid"]
    assert values.measured_attrs == ["gro-flush-timeout"] and values.interval == 60
    assert values.fixed == {"defer-hard-irqs": 100, "irq-suspend-timeout": 20000000}
    assert instance._tuner.per_napi["gro-flush-timeout"] == 20000


def test_plugin_without_auto_values_measures_nothing(napi_init, caplog):
    instance = napi_init(AUTO_OPTIONS, variables(gro_flush_timeout="20us",
                                                 optin_services="memcached"))
    assert instance._tuner.follower is None and tuned_errors(caplog) == []


@pytest.mark.parametrize("given, options, line", [
    ({}, {}, "instance napi: auto_services: invalid value ',' (accepted: systemd service "
     "units (name or name.service) or absolute paths of pid files, separated by commas, "
     "which gro_flush_timeout=auto measures; until then the series' values stay), from "
     "variable optin_services, auto_services; the option is not applied"),
    ({"auto_services": "memcached.socket"}, {}, "instance napi: auto_services: invalid value "
     "'memcached.socket' (accepted: systemd service units (name or name.service) or absolute "
     "paths of pid files, separated by commas), from variable optin_services, auto_services; "
     "the option is not applied"),
    ({"auto_services": "memcached", "auto_interval": "5"}, {}, "instance napi: auto_interval: "
     "invalid value '5' (accepted: an integer from 10 to 86400), from variable auto_interval; "
     "the option is not applied"),
    ({"auto_services": "memcached"}, {"recheck_interval": "0"}, "instance napi: "
     "recheck_interval: invalid value '0' (accepted: 1 to 86400 with gro_flush_timeout=auto: "
     "the services are measured on the re-check; until then the series' values stay); the "
     "option is not applied"),
], ids=["no services", "a socket unit", "interval too short", "no re-check"])
def test_plugin_option_errors_of_auto_are_one_line(napi_init, caplog, given, options, line):
    caplog.set_level(logging.DEBUG)
    instance = napi_init(dict(AUTO_OPTIONS, **options), variables(**given))
    assert tuned_errors(caplog) == [line]
    assert instance._tuner.per_napi["gro-flush-timeout"] == 20000     # the series' value
    assert (instance._tuner.follower is None) == ("auto_interval" not in given)


class Ticks(DeviceTuner):
    """A tuner on the contract whose tick brings change (or raises it)."""

    def __init__(self, change):
        super().__init__()
        self.change, self.locks = change, []

    def tick(self, lock):
        self.locks.append(lock)
        if isinstance(self.change, Exception):
            raise self.change
        return self.change


class Instance:
    name = "napi"
    processed_devices = {"eth1", "eth0"}

    def __init__(self, change):
        self._lock = threading.RLock()
        self._tuner = Ticks(change)
        self._watcher = object()            # applied: the watcher runs


@pytest.fixture
def napi_plugin():
    pytest.importorskip("tuned.plugins")
    module = load_plugin_module("napi")
    plugin = object.__new__(module.NapiPlugin)
    plugin._retune = lambda instance, device: None
    return plugin


def loaded():
    values, clock, services, windows = make()
    values.tick()
    clock.now += 5
    services.cpu += 2.5
    return values


def test_plugin_forwards_the_tick_and_logs_the_change_in_one_line(napi_plugin, caplog):
    instance = Instance(loaded().tick())
    caplog.set_level(logging.DEBUG)
    napi_plugin._recheck(instance)
    assert instance._tuner.locks == [instance._lock]
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("tuned")
             and "auto:" in r.getMessage()]
    assert lines == ["instance napi: auto: gro_flush_timeout 20us -> 165us, "
                     "irq_suspend_timeout 20ms -> 1.76ms (500 busy periods in 3.0 s: per "
                     "event p99 110us, per batch p99 880us, up to 8 events)"]


def test_plugin_turns_a_failed_measurement_into_one_line(napi_plugin, caplog):
    instance = Instance(RuntimeError("boom"))
    caplog.set_level(logging.DEBUG)
    napi_plugin._recheck(instance)
    assert tuned_errors(caplog) == [
        "instance napi: measuring for the auto values failed: RuntimeError: boom (a bug in "
        "irqtune, please report it); the values stay as they are; tuned-adm verify names what "
        "is not set"]


def test_plugin_says_a_bug_below_the_re_check_once(napi_plugin, tmp_path, netdev, caplog):
    """The napi plugin's re-check every 5 s, down to a failing read: one
    error line, where each re-check logged one."""
    values, clock, services, _ = make()
    services.fault = UNDECODABLE
    instance = Instance(None)
    instance._tuner = napi_tuner(tmp_path, values=values)
    instance._tuner.apply("eth0")
    caplog.set_level(logging.DEBUG)
    for _ in range(10):
        clock.now += 5
        napi_plugin._recheck(instance)
    assert len(bugs(caplog)) == 1, bugs(caplog)


def test_latency_suspend_with_auto_loads_and_measures_its_services(tmp_path, caplog,
                                                                    tuned_profiles):
    """The shipped profile through TuneD's loader, with auto in its
    variables file: the [napi] unit's options give the Follower."""
    text = ("optin_services=memcached, nginx\ngro_flush_timeout=auto\n"
            "irq_suspend_timeout=auto\nauto_services=/run/x.pid\n")
    profile, v = load(tmp_path, "latency-suspend", dict({p: "" for p in PROFILES},
                                                        **{"latency-suspend": text}))
    assert check_loaded(profile, v, caplog) == []
    options = {k: v.expand(o) for k, o in profile.units["napi"].options.items()}
    config, errors = NapiConfig.from_options(options, allow_auto=True)
    values, auto_errors = follow.from_options(config, options, 5)
    assert errors == auto_errors == []
    assert values.services.entries == ["memcached.service", "nginx.service", "/run/x.pid"]
    assert values.interval == 600 and values.measured_attrs == list(follow.AUTO_ATTRS)
