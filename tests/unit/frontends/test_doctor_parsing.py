# SPDX-License-Identifier: GPL-2.0-or-later
"""irqtune doctor's parsing and judgement, and the metrics text, on fixtures.

Fixtures in doctor_fixtures/ are copied from a real kernel (Linux 6.18 of
the development host, Debian 12 userland):
- fdinfo-eventpoll-6.18: /proc/self/fdinfo/<epoll fd> of a Python process
  whose epoll instance watched a TCP listener, an edge-triggered UDP
  socket and a pipe (inodes in hex, as the kernel prints them);
- maps-preloaded-6.18: lines of /proc/PID/maps of `sleep` started with
  LD_PRELOAD=.../libirqtune-busypoll.so (grep for sleep, libc and the
  library).
"""

import os
import select
import socket
from pathlib import Path

import pytest

from irqtune.frontends import activeprofile
from irqtune.kernel import syscalls
from irqtune.kernel.caps import NapiCapabilities
from irqtune.frontends.doctor import chain
from irqtune.shared import epoll
from irqtune.frontends.doctor.links import Report, format_text
from irqtune.shared.counters import Window
from irqtune.kernel.kfs import KernelFs
from irqtune.frontends.metrics import Family, render
from support.fakes.systemd import FakeSystemd

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(os.path.dirname(HERE), "doctor_fixtures")


def fixture(name):
    with open(os.path.join(FIX, name)) as f:
        return f.read()


# -- epoll inspection ---------------------------------------------------------

def test_fdinfo_targets_from_real_kernel_text():
    assert list(epoll.watched_files(fixture("fdinfo-eventpoll-6.18").splitlines())) == [
        (5, 0xbdc6), (6, 0xbdc7), (4, 0xbdc5)]


def test_fdinfo_of_an_epoll_without_targets():
    assert list(epoll.watched_files(["pos:\t0", "flags:\t02", "mnt_id:\t15", "ino:\t1057"])) == []


def test_preload_found_in_real_maps(tmp_path):
    (tmp_path / "42").mkdir()
    (tmp_path / "42" / "maps").write_text(fixture("maps-preloaded-6.18"))
    kfs = KernelFs(proc=tmp_path)
    assert epoll.preload_loaded(42, kfs) is True
    lines = [l for l in fixture("maps-preloaded-6.18").splitlines() if "busypoll" not in l]
    (tmp_path / "42" / "maps").write_text("\n".join(lines) + "\n")
    assert epoll.preload_loaded(42, kfs) is False
    assert epoll.preload_loaded(43, kfs) is None


def test_inspect_own_process_reads_params_and_targets(inspect_own_epoll):
    """The inspection path on this process: a real epoll fd and real
    sockets (no NAPI: loopback), duplicated and closed again."""
    before = sorted(os.listdir("/proc/self/fd"))
    ep = select.epoll()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    r, w = os.pipe()
    lfd = listener.fileno()
    ep.register(lfd, select.EPOLLIN)
    ep.register(r, select.EPOLLIN)
    inst = inspect_own_epoll(ep, listener, r, w)
    assert sorted(os.listdir("/proc/self/fd")) == before, "duplicated fds left open"
    kinds = {t.fd: t.kind for t in inst.targets}
    assert kinds == {lfd: "socket", r: "other"}
    assert inst.napi_ids == []
    if inst.params is not None:          # kernels with EPIOCGPARAMS
        assert inst.params == epoll.EpollParams(0, 0, 0)


def test_fd_number_reused_since_registration_is_not_taken_for_the_socket(inspect_own_epoll):
    """epoll keeps a registered file while another file takes over its fd
    number (dup2): fdinfo still names the number, with the old inode."""
    ep = select.epoll()
    sock = socket.socket()
    r, w = os.pipe()
    number = sock.fileno()
    keep = os.dup(number)                  # keeps the socket's file alive
    ep.register(number, select.EPOLLIN)
    os.dup2(r, number)                     # the number now names the pipe
    inst = inspect_own_epoll(ep, sock, keep, r, w)
    assert [(t.fd, t.kind) for t in inst.targets] == [(number, "gone")]


# -- chain judgement ----------------------------------------------------------

CAPS = NapiCapabilities(netdev_family=True, napi_get=True, napi_set=True,
                        settable=frozenset({"defer-hard-irqs", "gro-flush-timeout",
                                            "irq-suspend-timeout"}))


def napi(**values):
    base = {"id": 8193, "ifindex": 2, "defer-hard-irqs": 100, "gro-flush-timeout": 20000,
            "irq-suspend-timeout": 20000000}
    base.update(values)
    return base


@pytest.mark.parametrize("values,state,words", [
    ({}, "ok", "deferral on"),
    ({"defer-hard-irqs": 0}, "broken", "deferral is off (defer-hard-irqs is 0)"),
    ({"gro-flush-timeout": 0}, "broken", "deferral is off (gro-flush-timeout is 0)"),
    ({"irq-suspend-timeout": 0}, "broken", "never suspends"),
    ({"irq-suspend-timeout": 20000}, "broken", "is not above gro-flush-timeout"),
])
def test_napi_values_judged(values, state, words):
    report = Report()
    chain.check_napi(report, napi(**values), "eth0", [], None)
    link = report.links[0]
    assert (link.state, link.subject) == (state, "NAPI 8193 (eth0)")
    assert words in link.text
    if state == "broken":
        assert "suspend_nics=eth0" in link.fix


def test_napi_drift_from_profile(tmp_path):
    unit = activeprofile.NapiUnit("napi", "eth0", None,
                                  activeprofile.NapiConfig(defer_hard_irqs=100,
                                                           gro_flush_timeout=20000,
                                                           irq_suspend_timeout=20000000))
    report = Report()
    chain.check_napi(report, napi(**{"gro-flush-timeout": 50000}), "eth0", [unit],
                     "latency-suspend")
    drift = report.links[1]
    assert drift.state == "broken"
    assert "gro-flush-timeout holds 50000, the profile sets 20000" in drift.text
    assert "tuned-adm profile latency-suspend" in drift.fix


def test_a_selector_that_matches_no_device_is_named(monkeypatch):
    """The doctor names the same cause irqtune verify fails on."""
    unit = activeprofile.NapiUnit("napi", "ens1f0", None,
                                  activeprofile.NapiConfig(defer_hard_irqs=100))
    monkeypatch.setattr(chain, "netdev_names", lambda: ["eth0", "eth1"])
    report = Report()
    chain.check_napi(report, napi(), "eth0", [unit], "latency-suspend")
    assert report.links[1].text == (
        "no [napi] unit of the active profile (latency-suspend) covers eth0; "
        "[napi] devices=ens1f0 matches no network device (devices in TuneD's network "
        "namespace: eth0, eth1)")


def test_kernel_links():
    report = Report()
    chain.check_kernel(report, CAPS, (True, None))
    assert [l.state for l in report.links] == ["ok", "ok", "ok"]
    report = Report()
    chain.check_kernel(report, NapiCapabilities(netdev_family=True, napi_get=True),
                       (False, "Inappropriate ioctl for device"))
    assert [(l.subject, l.state) for l in report.links] == [
        ("napi-set", "broken"), ("EPIOCSPARAMS", "broken")]
    assert "6.13" in report.links[0].text


def inst(fd, prefer, napis, pid=7):
    i = epoll.EpollInstance(pid, fd, params=epoll.EpollParams(0, 64 if prefer else 0, prefer))
    i.targets = [epoll.EpollTarget(10 + n, 100 + n, "socket", nid) for n, nid in enumerate(napis)]
    return i


def test_process_without_preload_and_prefer_is_broken_with_optin_fix():
    report = Report()
    chain.check_process(report, 7, "memcached", [inst(3, 0, [0]), inst(7, 0, [8193])], False,
                        "memcached.service")
    link, = report.links
    assert link.state == "broken" and "preload is not loaded" in link.text
    assert "optin_services=memcached.service" in link.fix


def test_process_setting_prefer_itself_is_ok():
    report = Report()
    chain.check_process(report, 7, "srv", [inst(3, 1, [8193])], False)
    assert report.links[0].state == "ok"
    assert "the program sets them itself" in report.links[0].text


def test_two_napis_behind_one_epoll_instance():
    report = Report()
    chain.check_epoll(report, inst(7, 1, [8193, 8194, 8193]), "memcached",
                      {8193: "eth0", 8194: "eth0"})
    link, = report.links
    assert link.state == "broken" and link.data["napi_ids"] == [8193, 8194]
    assert "SO_INCOMING_CPU" in link.fix


def test_window_judgement():
    for rx, busy, state in ((0, 0, "unknown"), (1000, 10, "broken"), (1000, 300, "ok")):
        report = Report()
        chain.check_window(report, Window(3.0, devices={"eth0": rx}, busy_poll_s=busy))
        assert report.links[-1].state == state, (rx, busy)


def test_verdict_names_the_first_broken_link_in_chain_order():
    report = Report()
    report.add("window", "w", "broken", "late")
    report.add("process", "pid 7 (x)", "broken", "no prefer")
    report.add("kernel", "k", "ok", "fine")
    assert report.verdict() == (1, "suspension not engaged: pid 7 (x): no prefer")
    assert format_text(report).splitlines()[0].startswith("ok      kernel")
    only_unknown = Report()
    only_unknown.add("window", "w", "unknown", "no traffic")
    assert only_unknown.verdict()[0] == 2
    assert Report().verdict() == (0, "suspension engaged")


# -- the active profile -------------------------------------------------------

def test_active_profile_units_with_includes_and_variables(tmp_path, monkeypatch):
    etc = tmp_path / "etc"
    lib = tmp_path / "lib"
    (etc).mkdir()
    (etc / "active_profile").write_text("child\n")
    (etc / "child-variables.conf").write_text("# comment\nnics=eth1,eth2\n")
    (lib / "parent").mkdir(parents=True)
    (lib / "parent" / "tuned.conf").write_text(
        "[variables]\ngro=20us\n\n[napi]\ndevices=eth0\ndefer_hard_irqs=100\n"
        "gro_flush_timeout=${gro}\nirq_suspend_timeout=20ms\n")
    (lib / "child").mkdir()
    (lib / "child" / "tuned.conf").write_text(
        "[main]\ninclude=parent\n\n[variables]\ninclude=%s\n\n[napi]\ndevices=${nics}\n\n"
        "[other]\ntype=napi\ndevices=eth9\ndefer_hard_irqs=${f:strip: 7 }\n\n"
        "[off]\ntype=napi\nenabled=false\n" % (etc / "child-variables.conf"))
    monkeypatch.setattr(activeprofile, "PROFILE_DIRS", (str(lib),))
    profile, units, skipped = activeprofile.napi_units(str(etc))
    assert profile == "child"
    unit, other = units
    assert unit.devices == "eth1,eth2"
    assert unit.expected() == {"defer-hard-irqs": 100, "gro-flush-timeout": 20000,
                               "irq-suspend-timeout": 20000000}
    # TuneD's own loader: its functions are evaluated too
    assert (other.name, other.devices, other.expected()) == ("other", "eth9", {"defer-hard-irqs": 7})
    assert skipped == []


def test_a_profile_tuned_cannot_load_is_said(tmp_path, monkeypatch):
    (tmp_path / "active_profile").write_text("nosuchprofile\n")
    monkeypatch.setattr(activeprofile, "PROFILE_DIRS", (str(tmp_path),))
    profile, units, skipped = activeprofile.napi_units(str(tmp_path))
    assert (profile, units) == ("nosuchprofile", [])
    assert len(skipped) == 1 and "nosuchprofile" in skipped[0], skipped


def test_device_expressions(tmp_path):
    (tmp_path / "class/net/eth0/device").mkdir(parents=True)
    (tmp_path / "class/net/veth0").mkdir(parents=True)
    kfs = KernelFs(sys=tmp_path)
    assert activeprofile.device_matches("*", "eth0", kfs)
    assert not activeprofile.device_matches("*", "veth0", kfs)       # not physical
    assert activeprofile.device_matches("veth0", "veth0", kfs)
    assert not activeprofile.device_matches("eth*,!eth0", "eth0", kfs)
    # a device this sysfs does not show (another namespace's) is no physical NIC
    assert not activeprofile.device_matches("*", "vcga", kfs)
    assert activeprofile.device_matches("vcga", "vcga", kfs)


# -- the metrics text ---------------------------------------------------------

def test_openmetrics_and_prometheus_text():
    fam = [Family("irqtune_napi_interrupts", "counter", "interrupts", samples=[
               ({"device": "eth0", "napi": "8193"}, 12)]),
           Family("irqtune_napi_gro_flush_timeout_seconds", "gauge", 'the "timer"', "seconds",
                  samples=[({"device": 'e"0', "napi": "1"}, 2e-05)]),
           Family("irqtune_empty", "gauge", "no samples")]
    om = render(fam)
    assert om.splitlines() == [
        "# HELP irqtune_napi_interrupts interrupts",
        "# TYPE irqtune_napi_interrupts counter",
        'irqtune_napi_interrupts_total{device="eth0",napi="8193"} 12',
        '# HELP irqtune_napi_gro_flush_timeout_seconds the "timer"',
        "# TYPE irqtune_napi_gro_flush_timeout_seconds gauge",
        "# UNIT irqtune_napi_gro_flush_timeout_seconds seconds",
        'irqtune_napi_gro_flush_timeout_seconds{device="e\\"0",napi="1"} 2e-05',
        "# EOF"]
    prom = render(fam, openmetrics=False)
    assert "# TYPE irqtune_napi_interrupts_total counter" in prom
    assert "# EOF" not in prom and "# UNIT" not in prom


def test_optin_preload_state_metric(tmp_path, monkeypatch):
    """busy_poll_optin units of the active profile: one sample per running
    service, 1 with the preload mapped (maps fixture), 0 without."""
    from irqtune.frontends.metrics import _families, _optin_state
    etc = tmp_path / "etc"
    (etc / "profiles" / "p").mkdir(parents=True)
    (etc / "active_profile").write_text("p\n")
    (etc / "profiles" / "p" / "tuned.conf").write_text(
        "[variables]\nsvc=memcached, nginx\n\n[busy_poll_optin]\nservices=${svc},redis\n")
    proc = tmp_path / "proc"
    maps = fixture("maps-preloaded-6.18")
    for pid, text in ((11, maps), (12, "\n".join(l for l in maps.splitlines()
                                                  if "busypoll" not in l))):
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "maps").write_text(text)
    bus = FakeSystemd({"memcached.service": {"MainPID": 11}, "nginx.service": {"MainPID": 12},
                       "redis.service": {"MainPID": 0}})
    fam = _families()["irqtune_optin_preload_loaded"]
    monkeypatch.setattr(activeprofile, "PROFILE_DIRS", (str(etc / "profiles"),))
    _optin_state(fam, str(etc), KernelFs(proc=proc), bus)
    assert fam.samples == [
        ({"profile": "p", "unit": "busy_poll_optin", "service": "memcached.service"}, 1),
        ({"profile": "p", "unit": "busy_poll_optin", "service": "nginx.service"}, 0)]


def test_kernel_without_pidfd_getfd_is_named(monkeypatch):
    """A system call number the kernel does not know answers ENOSYS, as
    pidfd_getfd does on kernels before 5.6."""
    import platform
    monkeypatch.setitem(syscalls.NUMBERS["pidfd_getfd"], platform.machine(), 1023)
    monkeypatch.setattr(epoll.os, "pidfd_open", lambda pid: os.open("/dev/null", os.O_RDONLY),
                        raising=False)
    with pytest.raises(epoll.UnsupportedError, match=r"no pidfd_getfd \(Linux >= 5.6\)"):
        epoll.check_pidfd_getfd()


@pytest.mark.parametrize("layout", ["oldest", "empty", "shipped"])
def test_active_rt_profile_napi_unit_with_every_variables_file(tmp_path, monkeypatch, layout):
    """realtime-virtual-host-irqtune gives its variables defaults through
    TuneD's function irqtune_default (issue 35); the doctor and the metrics
    resolve them as TuneD does, from the oldest variables file an upgraded
    host keeps, an empty one or the shipped one."""
    pytest.importorskip("tuned.profiles")
    from support.tuned_loader import load_profile_functions
    load_profile_functions()     # irqtune's functions, where TuneD looks for them
    repo = Path(__file__).resolve().parents[3]
    rt = "realtime-virtual-host-irqtune"
    parents = [d for d in ("/usr/lib/tuned/profiles", "/usr/lib/tuned")
               if os.path.isfile(os.path.join(d, "realtime-virtual-host", "tuned.conf"))]
    if not parents:
        pytest.skip("no realtime-virtual-host profile installed")
    texts = {"oldest": (Path(__file__).parent.parent / "profile_fixtures" /
                        (rt + "-variables.conf")).read_text(),
             "empty": "",
             "shipped": (repo / "profiles" / rt / (rt + "-variables.conf")).read_text()}
    etc = tmp_path / "etc"
    (etc / rt).mkdir(parents=True)
    (etc / "active_profile").write_text(rt + "\n")
    variables = etc / (rt + "-variables.conf")
    # the oldest file with a value of its own: the file wins over the default
    text = texts[layout]
    variables.write_text(text.replace("napi_gro_flush_timeout=20us", "napi_gro_flush_timeout=50us")
                         if layout == "oldest" else text)
    conf = (repo / "profiles" / rt / "tuned.conf").read_text()
    (etc / rt / "tuned.conf").write_text(
        conf.replace("/etc/tuned/%s-variables.conf" % rt, str(variables)))
    monkeypatch.setattr(activeprofile, "PROFILE_DIRS", parents + [str(etc)])
    profile, units, skipped = activeprofile.napi_units(str(etc))
    assert (profile, skipped) == (rt, [])
    unit, = units
    assert unit.devices == "*"
    assert unit.expected() == {"defer-hard-irqs": 100, "gro-flush-timeout":
                               50000 if layout == "oldest" else 20000}
