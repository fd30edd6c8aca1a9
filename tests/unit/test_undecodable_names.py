# SPDX-License-Identifier: GPL-2.0-or-later
"""Text read from /proc that another user shapes is bytes, not always
UTF-8: a process's name (comm, and /proc/PID/stat around it), the paths
it maps (/proc/PID/maps), mount points below a user's directory
(fusermount, udisks' /media/USER/LABEL) in /proc/self/mountinfo and
/proc/self/mounts.  Every byte sequence is read (issue 47 item 4), and
shown escaped.

Fixtures in doctor_fixtures/ are copied from a real kernel (Linux 6.18
of the development host), byte for byte:
- comm-, stat-undecodable-6.18: /proc/PID/comm and /proc/PID/stat of a
  Python process that named itself b"srv\\xff\\xfe" (prctl PR_SET_NAME);
- maps-undecodable-6.18: lines of its /proc/PID/maps (libc, a file
  mapped from /tmp/dec47/run\\xff/cache\\xfe.db, and
  libirqtune-busypoll.so loaded with LD_PRELOAD);
- mountinfo-, mounts-undecodable-6.18: /proc/self/mountinfo and
  /proc/self/mounts in a mount namespace (unshare -m) where a tmpfs was
  mounted at /tmp/dec47/mnt\\xff\\xfe; the host's cgroup layout is
  hybrid (cgroup2 at /sys/fs/cgroup/unified).
"""

import os

from support.fakes.netdev import FakeNetdev
from support.fakes.systemd import FakeSystemd

from irqtune.frontends import activeprofile, metrics
from irqtune.frontends.doctor import targets
from irqtune.kernel.kfs import KernelFs
from irqtune.kernel.names import shown
from irqtune.shared import epoll
from irqtune.shared.measure import busy, procstat, tracefs

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "doctor_fixtures")
PID = 21394


def fixture(name):
    with open(os.path.join(FIX, name), "rb") as f:
        return f.read()


def proc_tree(tmp_path, **files):
    """A /proc holding files {relative path: bytes}; its KernelFs."""
    for path, data in files.items():
        target = tmp_path / "proc" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return KernelFs(proc=str(tmp_path / "proc"), sys=str(tmp_path / "sys"))


def test_a_process_name_that_is_not_utf8_is_read_and_shown_escaped(tmp_path):
    kfs = proc_tree(tmp_path, **{"%d/comm" % PID: fixture("comm-undecodable-6.18"),
                                 "%d/stat" % PID: fixture("stat-undecodable-6.18")})
    assert kfs.read_text(kfs.proc_path(PID, "comm")) == "srv\udcff\udcfe"
    assert shown(targets.comm(PID, kfs)) == "$'srv\\xff\\xfe'"
    stat = procstat.read(PID, kfs)
    assert (stat.state, stat.start_ticks, stat.user_running) == ("R", 28387, True)
    assert targets.check_pid(PID, kfs) == [PID]


def test_the_preload_is_found_beside_a_mapped_path_that_is_not_utf8(tmp_path):
    maps = fixture("maps-undecodable-6.18")
    kfs = proc_tree(tmp_path, **{"%d/maps" % PID: maps})
    assert epoll.preload_loaded(PID, kfs) is True
    without = b"".join(l for l in maps.splitlines(True) if b"busypoll" not in l)
    kfs = proc_tree(tmp_path, **{"%d/maps" % PID: without})
    assert epoll.preload_loaded(PID, kfs) is False


def test_systemds_hierarchy_is_found_beside_a_mount_point_that_is_not_utf8(tmp_path):
    kfs = proc_tree(tmp_path, **{"self/mountinfo": fixture("mountinfo-undecodable-6.18")})
    assert kfs.systemd_cgroup_root() == kfs.sys_path("fs/cgroup/unified")


def test_tracefs_is_found_beside_a_mount_point_that_is_not_utf8(tmp_path):
    """The development host mounts no tracefs: a line for one is added,
    at the tracepoint formats copied into measure_fixtures/."""
    events_root = os.path.join(HERE, "measure_fixtures")
    mounts = fixture("mounts-undecodable-6.18") + (
        "tracefs %s tracefs rw,nosuid,nodev,noexec,relatime 0 0\n" % events_root).encode()
    kfs = proc_tree(tmp_path, **{"self/mounts": mounts})
    assert tracefs._read("syscalls", busy.TRACEPOINTS, kfs) == \
        tracefs.read_formats(events_root, "syscalls", busy.TRACEPOINTS)


def test_metrics_of_an_opted_in_service_mapping_a_path_that_is_not_utf8(tmp_path, monkeypatch):
    """`irqtune metrics` wrote nothing when the opted-in service's main
    process mapped such a path: its maps were read to find the preload."""
    FakeNetdev().install(monkeypatch)
    metrics_fix = os.path.join(HERE, "metrics_fixtures")
    with open(os.path.join(metrics_fix, "net-dev-6.18"), "rb") as dev, \
            open(os.path.join(metrics_fix, "netstat-6.18"), "rb") as netstat:
        kfs = proc_tree(tmp_path, **{"%d/maps" % PID: fixture("maps-undecodable-6.18"),
                                     "thread-self/net/dev": dev.read(),
                                     "net/netstat": netstat.read()})
    etc = tmp_path / "etc"
    (etc / "profiles/latency-suspend").mkdir(parents=True)
    (etc / "active_profile").write_text("latency-suspend\n")
    (etc / "profiles/latency-suspend/tuned.conf").write_text(
        "[main]\nsummary=test\n\n[busy_poll_optin]\nservices=memcached\n")
    monkeypatch.setattr(activeprofile, "PROFILE_DIRS", (str(etc / "profiles"),))

    bus = FakeSystemd({"memcached.service": {"MainPID": PID}})
    families = {f.name: f for f in metrics.collect(kfs=kfs, etc=str(etc), bus=bus)}
    assert families["irqtune_optin_preload_loaded"].samples == [
        (dict(profile="latency-suspend", unit="busy_poll_optin", service="memcached.service"), 1)]
