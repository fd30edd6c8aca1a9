# SPDX-License-Identifier: GPL-2.0-or-later
"""irqtune.features.service_optin against a fixture root, with and without systemd.

The fixture root holds etc/systemd/system, the library where a package puts
it, and - for "systemd present" - the run/systemd/system marker.  systemd's
manager is a fake system bus (tests/support/fakes/systemd.py).
"""

import logging
import os
import shutil
import stat
import subprocess
import sys

import pytest

from support import tuned_loader

from irqtune.features import service_optin as so
from irqtune.kernel.kfs import KernelFs
from irqtune.kernel.errors import IrqtuneError, OptionError, UnsupportedError
from irqtune.kernel.names import shown
from irqtune.shared import systemd
from support.fakes.optin import LIB, dropin, make_root
from support.fakes.systemd import FakeSystemd



def snapshot(root):
    """Every path under root with its content (files) or None (dirs)."""
    tree = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            tree[os.path.relpath(os.path.join(dirpath, d), root)] = None
        for f in filenames:
            path = os.path.join(dirpath, f)
            with open(path) as fh:
                tree[os.path.relpath(path, root)] = fh.read()
    return tree


@pytest.fixture(autouse=True)
def forget_claims():
    so.forget_claims()
    yield
    so.forget_claims()


EXPECTED_DEFAULT = """\
# irqtune busy_poll_optin drop-in
# Written by the irqtune TuneD plugin busy_poll_optin while its profile
# is active and removed when the profile is unapplied.  Edits make
# irqtune leave the file in place.  Takes effect when the service starts.
[Service]
Environment="LD_PRELOAD=/usr/lib64/irqtune/libirqtune-busypoll.so"
Environment=IRQTUNE_BUSY_POLL_USECS=0
Environment=IRQTUNE_BUSY_POLL_BUDGET=64
Environment=IRQTUNE_PREFER_BUSY_POLL=1
"""


# parsing

def test_parse_services():
    assert so.parse_services("memcached, nginx.service ,\tredis-server,memcached,") == \
        ("memcached.service", "nginx.service", "redis-server.service")
    assert so.parse_services("getty@tty1,dbus-org.freedesktop.resolve1") == \
        ("getty@tty1.service", "dbus-org.freedesktop.resolve1.service")
    assert so.parse_services("my\\x20unit") == ("my\\x20unit.service",)
    assert so.parse_services("") == ()
    assert so.parse_services(None) == ()


@pytest.mark.parametrize("bad", ["../etc", "a/b", "memcached.socket", "x.target",
                                 "-rf", "na$me", "a b.service;rm"])
def test_parse_services_rejects(bad):
    with pytest.raises(OptionError):
        so.parse_services(bad)


@pytest.mark.parametrize("text", ["my unit", "memcached, my unit", "memcached nginx",
                                  "memcached,\u00a0nginx x"])
def test_a_name_with_a_space_is_refused_not_split(text):
    """issue 35: "my unit" opted in my.service and unit.service."""
    with pytest.raises(OptionError) as err:
        so.parse_services(text, "optin_services")
    assert str(err.value) == (
        "optin_services: invalid value %s (accepted: service unit names separated by "
        "commas, each a name or name.service without spaces (e.g. memcached, "
        "nginx.service))" % shown(text, quote="always"))


def values_of(**options):
    values, errors = so.OptInValues.from_options(options)
    if errors:
        raise errors[0]
    return values


def test_values():
    v = values_of(busy_poll_usecs="50", busy_poll_budget=" 32 ", prefer_busy_poll=0)
    assert (v.usecs, v.budget, v.prefer) == (50, 32, 0)
    assert values_of() == so.OptInValues(0, 64, 1)
    assert values_of(busy_poll_usecs="1000000", busy_poll_budget="65535").usecs == 1000000


@pytest.mark.parametrize("kw", [{"busy_poll_usecs": "abc"}, {"busy_poll_usecs": -1},
                                {"busy_poll_usecs": "2147483648"}, {"busy_poll_usecs": "1000001"},
                                {"busy_poll_usecs": 1000001}, {"busy_poll_usecs": "1_000"},
                                {"busy_poll_usecs": "+5"}, {"busy_poll_usecs": "\u0665"},
                                {"busy_poll_usecs": "9" * 5000}, {"busy_poll_budget": "65536"},
                                {"busy_poll_budget": "0x10"}, {"prefer_busy_poll": 2},
                                {"prefer_busy_poll": True}, {"busy_poll_usecs": "１"}])
def test_values_rejected(kw):
    with pytest.raises(OptionError):
        values_of(**kw)


def test_values_from_options_reports_every_bad_value():
    """issue 35: with two bad values only the first was reported."""
    values, errors = so.OptInValues.from_options(
        {"busy_poll_usecs": "1000001", "busy_poll_budget": " ", "prefer_busy_poll": "yes",
         "services": "ignored here"})
    assert values is None
    assert [str(e) for e in errors] == [
        "busy_poll_usecs: invalid value '1000001' (accepted: 0..1000000)",
        "prefer_busy_poll: invalid value 'yes' (accepted: 0 or 1)"]
    values, errors = so.OptInValues.from_options({"busy_poll_budget": "8"})
    assert (values, errors) == (so.OptInValues(0, 8, 1), [])


def test_parse_bool():
    assert so.parse_bool("true") and so.parse_bool("1") and so.parse_bool(True)
    assert not so.parse_bool("false") and not so.parse_bool("0")
    with pytest.raises(OptionError):
        so.parse_bool("maybe")


@pytest.mark.parametrize("path", ["relative.so", "/a b.so", "/a:b.so", "/a%b.so", '/a"b.so'])
def test_library_path_rejected(path):
    with pytest.raises(OptionError):
        so.ServiceOptIn("memcached", library=path)


def test_paths(tmp_path):
    root = make_root(tmp_path)
    opt = so.ServiceOptIn("memcached", root=root)
    assert opt.dropin_path("memcached.service") == dropin(root, "memcached.service")
    assert so.ServiceOptIn("x", root="/").dropin_path("x.service") == \
        "/etc/systemd/system/x.service.d/50-irqtune-busypoll.conf"


# apply / unapply with systemd

def test_apply_writes_and_unapply_removes_exactly(tmp_path):
    root = make_root(tmp_path)
    before = snapshot(root)
    fake = FakeSystemd()
    opt = so.ServiceOptIn("memcached, nginx", root=root, bus=fake)
    assert opt.apply() == []
    after = snapshot(root)
    added = {k: v for k, v in after.items() if k not in before}
    assert added == {
        "etc/systemd/system/memcached.service.d": None,
        "etc/systemd/system/memcached.service.d/" + so.DROPIN_NAME: EXPECTED_DEFAULT,
        "etc/systemd/system/nginx.service.d": None,
        "etc/systemd/system/nginx.service.d/" + so.DROPIN_NAME: EXPECTED_DEFAULT,
    }
    assert all(after[k] == v for k, v in before.items())
    mode = os.stat(dropin(root, "nginx.service")).st_mode
    assert stat.S_IMODE(mode) == 0o644
    assert fake.verbs() == ["Reload"]
    assert all(r[1] for r in opt.verify())

    assert opt.unapply() == []
    assert snapshot(root) == before
    assert fake.verbs() == ["Reload", "Reload"]
    assert opt.unapply() == []  # twice is harmless
    assert fake.verbs() == ["Reload", "Reload"]


def test_values_in_dropin(tmp_path):
    root = make_root(tmp_path)
    opt = so.ServiceOptIn(["memcached"], so.OptInValues(25, 16, 1), root=root,
                          bus=FakeSystemd())
    opt.apply()
    with open(dropin(root, "memcached.service")) as f:
        text = f.read()
    assert "Environment=IRQTUNE_BUSY_POLL_USECS=25\n" in text
    assert "Environment=IRQTUNE_BUSY_POLL_BUDGET=16\n" in text
    assert "Environment=IRQTUNE_PREFER_BUSY_POLL=1\n" in text


def test_existing_dropin_dir_kept(tmp_path):
    root = make_root(tmp_path)
    d = os.path.join(root, "etc/systemd/system/memcached.service.d")
    os.makedirs(d)
    with open(os.path.join(d, "10-local.conf"), "w") as f:
        f.write("[Service]\nNice=-5\n")
    before = snapshot(root)
    opt = so.ServiceOptIn("memcached", root=root, bus=FakeSystemd())
    opt.apply()
    assert os.path.exists(dropin(root, "memcached.service"))
    opt.unapply()
    assert snapshot(root) == before


def test_dir_not_removed_when_others_added_files(tmp_path):
    root = make_root(tmp_path)
    opt = so.ServiceOptIn("memcached", root=root, bus=FakeSystemd())
    opt.apply()
    other = os.path.join(os.path.dirname(dropin(root, "memcached.service")), "90-admin.conf")
    with open(other, "w") as f:
        f.write("[Service]\n")
    opt.unapply()
    assert not os.path.exists(dropin(root, "memcached.service"))
    assert os.path.exists(other)


def test_foreign_file_never_touched_and_nothing_half_done(tmp_path):
    root = make_root(tmp_path)
    path = dropin(root, "nginx.service")
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        f.write("[Service]\nEnvironment=FOO=admin\n")
    before = snapshot(root)
    opt = so.ServiceOptIn("memcached, nginx", root=root, bus=FakeSystemd())
    with pytest.raises(IrqtuneError, match="not written by irqtune"):
        opt.apply()
    assert snapshot(root) == before
    assert opt.unapply() == []
    assert snapshot(root) == before


def test_leftover_own_file_replaced_and_removed(tmp_path):
    """A drop-in with irqtune's marker (daemon died before unapply) is ours."""
    root = make_root(tmp_path)
    path = dropin(root, "memcached.service")
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        f.write(so.MARKER + "\n[Service]\nEnvironment=IRQTUNE_BUSY_POLL_USECS=9\n")
    opt = so.ServiceOptIn("memcached", root=root, bus=FakeSystemd())
    opt.apply()
    with open(path) as f:
        assert f.read() == EXPECTED_DEFAULT
    opt.unapply()
    assert not os.path.exists(path)
    # The directory existed before this apply: it stays.
    assert os.path.isdir(os.path.dirname(path))


def test_edited_file_left_in_place(tmp_path, caplog):
    root = make_root(tmp_path)
    opt = so.ServiceOptIn("memcached", root=root, bus=FakeSystemd())
    opt.apply()
    path = dropin(root, "memcached.service")
    with open(path, "a") as f:
        f.write("Environment=ADMIN=1\n")
    assert opt.verify() == [("memcached.service", False, "changed")]
    with caplog.at_level(logging.WARNING, logger="irqtune"):
        opt.unapply()
    assert os.path.exists(path)
    assert "changed after irqtune wrote it" in caplog.text


def test_verify_detects_missing(tmp_path):
    root = make_root(tmp_path)
    opt = so.ServiceOptIn("memcached", root=root, bus=FakeSystemd())
    assert opt.verify() == [("memcached.service", False, "not written")]
    opt.apply()
    assert opt.verify() == [("memcached.service", True, "present")]
    os.unlink(dropin(root, "memcached.service"))
    assert opt.verify() == [("memcached.service", False, "missing")]


def test_daemon_reload_failure_rolls_back(tmp_path):
    root = make_root(tmp_path)
    before = snapshot(root)
    fake = FakeSystemd(fail={"Reload"})
    opt = so.ServiceOptIn("memcached, nginx", root=root, bus=fake)
    with pytest.raises(IrqtuneError, match="daemon-reload failed"):
        opt.apply()
    assert snapshot(root) == before
    assert opt.written == []


def test_write_failure_rolls_back(tmp_path, monkeypatch):
    root = make_root(tmp_path)
    before = snapshot(root)
    real_replace = os.replace
    calls = []

    def flaky_replace(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", flaky_replace)
    opt = so.ServiceOptIn("memcached, nginx", root=root, bus=FakeSystemd())
    with pytest.raises(IrqtuneError, match="nothing left behind"):
        opt.apply()
    assert snapshot(root) == before


def test_two_owners_refused(tmp_path):
    root = make_root(tmp_path)
    first = so.ServiceOptIn("memcached", root=root, bus=FakeSystemd())
    first.apply()
    second = so.ServiceOptIn("memcached", root=root, bus=FakeSystemd())
    with pytest.raises(IrqtuneError, match="already opted in"):
        second.apply()
    first.unapply()
    second.apply()
    second.unapply()


def test_state_adopted_by_a_later_process(tmp_path):
    """A restarted daemon removes what the previous one wrote, same rules."""
    root = make_root(tmp_path)
    before = snapshot(root)
    first = so.ServiceOptIn("memcached, nginx", root=root, bus=FakeSystemd())
    first.apply()
    state = first.export_state()
    so.forget_claims()  # a new process
    with open(dropin(root, "nginx.service"), "a") as f:
        f.write("# admin\n")
    fake = FakeSystemd()
    later = so.ServiceOptIn("", root=root, bus=fake)
    assert later.apply(previous_state=state + [{"bogus": 1}]) == []
    after = snapshot(root)
    assert "etc/systemd/system/memcached.service.d" not in after
    assert after["etc/systemd/system/nginx.service.d/" + so.DROPIN_NAME].endswith("# admin\n")
    assert set(after) - set(before) == {"etc/systemd/system/nginx.service.d",
                                        "etc/systemd/system/nginx.service.d/" + so.DROPIN_NAME}
    assert fake.verbs() == ["Reload"]


def test_apply_takes_over_previous_state(tmp_path):
    """Re-applied after a daemon restart with a changed service list: still
    named services are taken over (their directory still counts as ours),
    no longer named ones are removed."""
    root = make_root(tmp_path)
    before = snapshot(root)
    first = so.ServiceOptIn("memcached, nginx", root=root, bus=FakeSystemd())
    first.apply()
    state = first.export_state()
    so.forget_claims()  # a new process
    fake = FakeSystemd()
    second = so.ServiceOptIn("memcached", so.OptInValues(usecs=5), root=root,
                             bus=fake)
    second.apply(previous_state=state)
    after = snapshot(root)
    assert "etc/systemd/system/nginx.service.d" not in after
    assert "IRQTUNE_BUSY_POLL_USECS=5" in after[
        "etc/systemd/system/memcached.service.d/" + so.DROPIN_NAME]
    second.unapply()
    assert snapshot(root) == before


def test_previous_state_only_removed(tmp_path):
    root = make_root(tmp_path)
    before = snapshot(root)
    first = so.ServiceOptIn("memcached", root=root, bus=FakeSystemd())
    first.apply()
    state = first.export_state()
    so.forget_claims()
    fake = FakeSystemd()
    assert so.ServiceOptIn("", root=root, bus=fake).apply(previous_state=state) == []
    assert snapshot(root) == before
    assert fake.verbs() == ["Reload"]


def test_rollback_restores_replaced_own_file(tmp_path):
    root = make_root(tmp_path)
    path = dropin(root, "memcached.service")
    os.makedirs(os.path.dirname(path))
    old = so.MARKER + "\n[Service]\nEnvironment=IRQTUNE_BUSY_POLL_USECS=9\n"
    with open(path, "w") as f:
        f.write(old)
    before = snapshot(root)
    opt = so.ServiceOptIn("memcached", root=root,
                          bus=FakeSystemd(fail={"Reload"}))
    with pytest.raises(IrqtuneError):
        opt.apply()
    assert snapshot(root) == before


# restart handling

def test_running_services_listed_not_restarted(tmp_path, caplog):
    root = make_root(tmp_path)
    fake = FakeSystemd({"memcached.service": {"ActiveState": "active"}})
    opt = so.ServiceOptIn("memcached, nginx", root=root, bus=fake)
    with caplog.at_level(logging.WARNING, logger="irqtune"):
        assert opt.apply() == ["memcached.service"]
    assert "restart memcached.service" in caplog.text
    assert "TryRestartUnit" not in fake.verbs()
    assert opt.unapply() == ["memcached.service"]
    assert "TryRestartUnit" not in fake.verbs()


def test_restart_when_asked(tmp_path):
    root = make_root(tmp_path)
    fake = FakeSystemd({"memcached.service": {"ActiveState": "active"}})
    opt = so.ServiceOptIn("memcached, nginx", root=root, bus=fake, restart=True)
    opt.apply()
    assert ("TryRestartUnit", "memcached.service", "replace") in fake.calls
    opt.unapply()
    assert fake.verbs() == ["Reload", "TryRestartUnit", "Reload", "TryRestartUnit"]
    # The reload comes before the restart, so the restart sees the new config.
    assert fake.verbs().index("Reload") < fake.verbs().index("TryRestartUnit")


def test_restart_only_where_the_process_disagrees(tmp_path):
    """A service whose main process already maps the library (started with a
    drop-in left from before a reboot) needs no restart on apply; one that
    does not map it needs none on unapply."""
    root = make_root(tmp_path)
    proc = tmp_path / "proc"
    for pid, lib in (("100", LIB), ("200", "/usr/lib/libc.so.6")):
        (proc / pid).mkdir(parents=True)
        (proc / pid / "maps").write_text("7f00-7f01 r-xp 00000000 08:01 12 %s\n" % lib)
    fake = FakeSystemd({
        "with.service": {"ActiveState": "active", "MainPID": 100},
        "without.service": {"ActiveState": "active", "MainPID": 200}})
    opt = so.ServiceOptIn("with, without", root=root, bus=fake, restart=True,
                          kfs=KernelFs(proc=str(proc)))
    assert opt.apply() == ["without.service"]
    assert ("TryRestartUnit", "without.service", "replace") in fake.calls
    assert opt.unapply() == ["with.service"]
    assert ("TryRestartUnit", "with.service", "replace") in fake.calls


# existing LD_PRELOAD

def test_existing_ld_preload_kept(tmp_path, caplog):
    root = make_root(tmp_path)
    fake = FakeSystemd({"memcached.service": {
        "Environment": ["A=1", "LD_PRELOAD=/usr/lib/libjemalloc.so.2", "B=x y"]}})
    opt = so.ServiceOptIn("memcached", root=root, bus=fake)
    with caplog.at_level(logging.INFO, logger="irqtune"):
        opt.apply()
    with open(dropin(root, "memcached.service")) as f:
        text = f.read()
    assert 'Environment="LD_PRELOAD=/usr/lib/libjemalloc.so.2:%s"\n' % LIB in text
    assert "keeps it" in caplog.text


def test_existing_ld_preload_with_our_library_not_doubled(tmp_path):
    root = make_root(tmp_path)
    fake = FakeSystemd({"memcached.service": {"Environment": ["LD_PRELOAD=%s" % LIB]}})
    so.ServiceOptIn("memcached", root=root, bus=fake).apply()
    with open(dropin(root, "memcached.service")) as f:
        assert f.read() == EXPECTED_DEFAULT


def test_percent_in_existing_preload_escaped():
    text = so.dropin_content(LIB, so.OptInValues(), "/opt/a%b.so")
    assert 'Environment="LD_PRELOAD=/opt/a%%b.so:' + LIB + '"' in text


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_systemd_parses_dropin_as_intended(tmp_path):
    """systemd-analyze verify dumps the merged unit: our values win."""
    units = tmp_path / "units"
    (units / "demo.service.d").mkdir(parents=True)
    (units / "demo.service").write_text(
        "[Service]\nExecStart=/bin/true\nEnvironment=LD_PRELOAD=/old.so KEEP=1\n")
    (units / "demo.service.d" / so.DROPIN_NAME).write_text(
        so.dropin_content(LIB, so.OptInValues(7, 8, 1), "/old%.so"))
    env = dict(os.environ, SYSTEMD_LOG_LEVEL="debug", SYSTEMD_UNIT_PATH=str(units) + ":")
    proc = subprocess.run(["systemd-analyze", "verify", str(units / "demo.service")],
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    got = [line.split("Environment:", 1)[1].strip()
           for line in (proc.stdout + proc.stderr).splitlines()
           if line.strip().startswith("Environment:")]
    # The drop-in's LD_PRELOAD replaces the unit's; the unit's other
    # variables stay.
    assert sorted(got) == sorted(["LD_PRELOAD=/old%.so:" + LIB, "KEEP=1",
                                  "IRQTUNE_BUSY_POLL_USECS=7", "IRQTUNE_BUSY_POLL_BUDGET=8",
                                  "IRQTUNE_PREFER_BUSY_POLL=1"]), got


# without systemd / without the library

def test_without_systemd_nothing_done(tmp_path):
    root = make_root(tmp_path, systemd=False)
    before = snapshot(root)
    fake = FakeSystemd()
    opt = so.ServiceOptIn("memcached, nginx", root=root, bus=fake)
    with pytest.raises(UnsupportedError, match="systemd is not running.*nothing was written"):
        opt.apply()
    assert snapshot(root) == before
    assert fake.calls == []
    assert opt.unapply() == []
    assert fake.calls == []


def test_without_library_nothing_done(tmp_path):
    root = make_root(tmp_path, library=False)
    before = snapshot(root)
    fake = FakeSystemd()
    with pytest.raises(UnsupportedError, match="not installed"):
        so.ServiceOptIn("memcached", root=root, bus=fake).apply()
    assert snapshot(root) == before
    assert fake.verbs() == []


def test_library_found_in_other_libdir(tmp_path):
    root = make_root(tmp_path, library=False)
    lib = os.path.join(root, "usr/lib/irqtune", so.LIBRARY_NAME)
    os.makedirs(os.path.dirname(lib))
    open(lib, "w").close()
    assert so.find_library(root) == "/usr/lib/irqtune/" + so.LIBRARY_NAME


def test_no_services_no_action(tmp_path):
    root = make_root(tmp_path, systemd=False)
    fake = FakeSystemd()
    assert so.ServiceOptIn("", root=root, bus=fake).apply() == []
    assert fake.calls == []


def test_unknown_unit_still_written_with_warning(tmp_path, caplog):
    root = make_root(tmp_path)
    fake = FakeSystemd({"nosuch.service": {"LoadState": "not-found"}})
    with caplog.at_level(logging.WARNING, logger="irqtune"):
        so.ServiceOptIn("nosuch", root=root, bus=fake).apply()
    assert os.path.exists(dropin(root, "nosuch.service"))
    assert "no such unit" in caplog.text


def test_budget_above_64_warns(tmp_path, caplog):
    root = make_root(tmp_path)
    opt = so.ServiceOptIn("memcached", so.OptInValues(budget=128), root=root,
                          bus=FakeSystemd())
    with caplog.at_level(logging.WARNING, logger="irqtune"):
        opt.apply()
    assert "CAP_NET_ADMIN" in caplog.text


# preload status of the running process

def test_preload_status(tmp_path):
    root = make_root(tmp_path)
    proc = tmp_path / "proc"
    (proc / "100").mkdir(parents=True)
    (proc / "100" / "maps").write_text(
        "7f00-7f01 r-xp 00000000 08:01 12 %s\n" % LIB)
    (proc / "200").mkdir()
    (proc / "200" / "maps").write_text("7f00-7f01 r-xp 00000000 08:01 12 /usr/lib/libc.so.6\n")
    fake = FakeSystemd({"a.service": {"MainPID": 100}, "b.service": {"MainPID": 200},
                          "c.service": {"MainPID": 0}, "d.service": {"MainPID": 300}})
    opt = so.ServiceOptIn("a, b, c, d", root=root, bus=fake, kfs=KernelFs(proc=str(proc)))
    assert [opt.preload_status(u) for u in opt.services] == \
        ["loaded", "not-loaded", "inactive", "unknown"]


# systemd over D-Bus: without python3-dbus, restart jobs, systemd's errors

def test_without_python3_dbus_each_call_says_so(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "dbus", None)          # import dbus: ImportError
    ctl = systemd.Systemctl()
    assert ctl.unit_property("memcached.service", "LoadState") is None
    assert ctl.failure == ("cannot ask systemd: python3-dbus (import dbus), TuneD's D-Bus "
                           "binding, is not installed")
    with pytest.raises(IrqtuneError, match=r"^systemd daemon-reload failed: cannot ask "
                                           r"systemd: python3-dbus"):
        ctl.daemon_reload()


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


@pytest.mark.parametrize("polls,said", [
    (3, "INFO restarted memcached.service"),
    (10 ** 6, "WARNING memcached.service: the restart still runs after 10 s; systemd finishes it"),
])
def test_try_restart_waits_for_its_job_a_while(caplog, polls, said):
    """systemctl try-restart waits for the job; here at most RESTART_WAIT,
    because TuneD's profile switch waits meanwhile."""
    fake, clock = FakeSystemd({"memcached.service": {"ActiveState": "active"}},
                              job_polls=polls), Clock()
    ctl = systemd.Systemctl(fake, clock, clock.sleep)
    with caplog.at_level(logging.INFO, logger="irqtune"):
        ctl.try_restart(["memcached.service"])
    assert ["%s %s" % (r.levelname, r.getMessage()) for r in caplog.records] == [said]
    assert clock.now <= systemd.RESTART_WAIT + systemd.JOB_POLL


def test_try_restart_says_what_systemd_refused_and_what_failed(caplog):
    fake = FakeSystemd({"bad.service": {"ActiveState": "failed"}}, fail={"TryRestartUnit"})
    with caplog.at_level(logging.INFO, logger="irqtune"):
        systemd.Systemctl(fake).try_restart(["q\x1b.service"])
    assert caplog.records[0].getMessage() == (
        "try-restart $'q\\x1b.service' failed: fake failure of TryRestartUnit "
        "(org.freedesktop.systemd1.Fake)")
    caplog.clear()
    fake = FakeSystemd({"bad.service": {"ActiveState": "failed"}}, job_polls=0)
    with caplog.at_level(logging.INFO, logger="irqtune"):
        systemd.Systemctl(fake).try_restart(["bad.service"])
    assert [r.getMessage() for r in caplog.records] == [
        "try-restart bad.service failed: the unit is in state failed (journalctl -u bad.service)"]


def test_properties_as_systemd_types_them():
    fake = FakeSystemd({"m.service": {"MainPID": 42, "Environment": ["A=1", "B=x y"]}})
    ctl = systemd.Systemctl(fake)
    assert ctl.unit_property("m.service", "MainPID") == 42
    assert ctl.unit_property("m.service", "Environment") == ["A=1", "B=x y"]
    assert ctl.unit_property("m.service", "LoadState") == "loaded"
    assert [c[0] for c in fake.calls] == ["LoadUnit", "Get", "Get", "Get"]   # the path kept


# The TuneD adapter, loaded into the installed TuneD's plugin package and
# driven through TuneD's own Plugin/Instance/Storage classes.

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))



def load_plugin_module():
    """The repository's plugin (and irqtune_common) as TuneD would import them."""
    pytest.importorskip("tuned.plugins")
    return tuned_loader.load_plugin_module("busy_poll_optin")


@pytest.fixture
def tuned_plugin(tmp_path):
    """A BusyPollOptinPlugin wired to a fixture root and a fake systemd bus."""
    module = load_plugin_module()
    from tuned.plugins.instance import Factory as InstanceFactory
    from tuned.profiles.variables import Variables
    from tuned.storage import Factory as StorageFactory, PickleProvider

    provider = PickleProvider(path=str(tmp_path / "save.pickle"))
    state_dir = str(tmp_path / "state")

    def make(root, fake, options):
        cls = type("TestBusyPollOptinPlugin", (module.BusyPollOptinPlugin,),
                   {"_seams": {"root": root, "bus": fake, "state_dir": state_dir}})
        # Plugin.name derives from the module name: keep TuneD's.
        cls.__module__ = module.__name__
        plugin = cls(None, StorageFactory(provider), None, None, None,
                     InstanceFactory(), tuned_loader.Cfg(), Variables())
        instance = tuned_loader.create_instance(plugin, "optin", options)
        plugin.initialize_instance(instance)
        return plugin, instance

    make.provider = provider
    make.module = module
    make.state_dir = state_dir
    # forward_library_log() reroutes the "irqtune" logger into TuneD's log
    # for good; put it back for the tests that follow.
    lib_log = logging.getLogger("irqtune")
    saved = (list(lib_log.handlers), lib_log.propagate, lib_log.level)
    yield make
    lib_log.handlers[:], lib_log.propagate = saved[0], saved[1]
    lib_log.setLevel(saved[2])


def test_plugin_options_listed(tuned_plugin):
    opts = tuned_plugin.module.BusyPollOptinPlugin._get_config_options()
    assert set(opts) == {"services", "busy_poll_usecs", "busy_poll_budget",
                         "prefer_busy_poll", "restart", "library"}
    hints = tuned_plugin.module.BusyPollOptinPlugin.get_config_options_hints()
    assert set(hints) == set(opts)


def test_plugin_apply_verify_full_rollback(tuned_plugin, tmp_path, caplog):
    root = make_root(tmp_path)
    before = snapshot(root)
    fake = FakeSystemd({"memcached.service": {"ActiveState": "active"}})
    plugin, inst = tuned_plugin(root, fake, {"services": "memcached, nginx",
                                             "busy_poll_usecs": "10"})
    with caplog.at_level(logging.INFO):
        plugin.instance_apply_tuning(inst)
    # The library's advice reaches TuneD's log.
    assert any(r.name.startswith("tuned.") and "restart memcached.service" in r.getMessage()
               for r in caplog.records), caplog.text
    caplog.clear()
    with open(dropin(root, "nginx.service")) as f:
        assert "IRQTUNE_BUSY_POLL_USECS=10" in f.read()
    assert "TryRestartUnit" not in fake.verbs()
    with caplog.at_level(logging.INFO):
        assert plugin.instance_verify_tuning(inst, False) is True
    assert "verify: passed: 'busy_poll_optin optin: %s' = 'present'" % \
        dropin(root, "nginx.service") in caplog.text
    # TuneD 2.20 passes a bool: True = full rollback.
    plugin.instance_unapply_tuning(inst, True)
    assert snapshot(root) == before
    assert fake.verbs() == ["Reload", "Reload"]


def test_plugin_verify_fails_after_edit(tuned_plugin, tmp_path, caplog):
    root = make_root(tmp_path)
    plugin, inst = tuned_plugin(root, FakeSystemd(), {"services": "memcached"})
    plugin.instance_apply_tuning(inst)
    with open(dropin(root, "memcached.service"), "a") as f:
        f.write("# edited\n")
    with caplog.at_level(logging.INFO):
        assert plugin.instance_verify_tuning(inst, False) is False
    assert "verify: failed: 'busy_poll_optin optin: %s' = 'changed', expected 'present'" % \
        dropin(root, "memcached.service") in caplog.text


@pytest.mark.parametrize("rollback,removed", [(False, False), (True, True),
                                              (0, False), (1, False), (2, True)])
def test_plugin_rollback_signatures(tuned_plugin, tmp_path, rollback, removed):
    """bool (TuneD 2.20) and int ROLLBACK_NONE/SOFT/FULL (2.21+): only a full
    rollback removes; a shutdown keeps the drop-ins for the next boot."""
    root = make_root(tmp_path)
    plugin, inst = tuned_plugin(root, FakeSystemd(), {"services": "memcached"})
    plugin.instance_apply_tuning(inst)
    plugin._instance_unapply_static(inst, rollback)
    assert os.path.exists(dropin(root, "memcached.service")) is not removed
    saved = os.path.join(tuned_plugin.state_dir, "busy_poll_optin-optin.json")
    assert os.path.exists(saved) is not removed


def test_plugin_restarted_daemon_takes_over(tuned_plugin, tmp_path):
    """Saved state in the /run/irqtune state file: a new daemon with a
    shorter service list removes the drop-in for the service no longer
    named."""
    root = make_root(tmp_path)
    before = snapshot(root)
    plugin, inst = tuned_plugin(root, FakeSystemd(), {"services": "memcached, nginx"})
    plugin.instance_apply_tuning(inst)
    plugin._instance_unapply_static(inst, 1)  # soft: daemon stopped at shutdown
    so.forget_claims()  # new process
    plugin2, inst2 = tuned_plugin(root, FakeSystemd(), {"services": "memcached"})
    plugin2.instance_apply_tuning(inst2)
    assert not os.path.exists(dropin(root, "nginx.service"))
    assert os.path.exists(dropin(root, "memcached.service"))
    plugin2.instance_unapply_tuning(inst2, True)
    assert snapshot(root) == before


def test_plugin_without_systemd(tuned_plugin, tmp_path, caplog):
    root = make_root(tmp_path, systemd=False)
    before = snapshot(root)
    fake = FakeSystemd()
    plugin, inst = tuned_plugin(root, fake, {"services": "memcached"})
    with caplog.at_level(logging.ERROR):
        plugin.instance_apply_tuning(inst)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "systemd is not running" in errors[0], errors
    assert snapshot(root) == before and fake.calls == []
    caplog.clear()
    with caplog.at_level(logging.INFO):
        # Skipped (None) with ignore_missing; TuneD's wrapper counts it a pass.
        assert plugin._instance_verify_static(inst, True, set()) is None
        assert plugin.instance_verify_tuning(inst, True) is True
        assert plugin.instance_verify_tuning(inst, False) is False
    assert "verify: skipped, missing" in caplog.text
    plugin.instance_unapply_tuning(inst, True)
    assert snapshot(root) == before and fake.calls == []


def test_plugin_bad_option_one_error(tuned_plugin, tmp_path, caplog):
    root = make_root(tmp_path)
    fake = FakeSystemd()
    with caplog.at_level(logging.ERROR):
        plugin, inst = tuned_plugin(root, fake, {"services": "memcached",
                                                 "busy_poll_budget": "70000"})
        plugin.instance_apply_tuning(inst)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "busy_poll_budget" in errors[0] and "70000" in errors[0]
    assert fake.calls == []
    assert plugin.instance_verify_tuning(inst, False) is False


def test_plugin_reports_every_bad_value_under_the_names_the_admin_edited(
        tuned_plugin, tmp_path, caplog):
    """issue 35: with two bad values only the first was reported, and as
    'busy_poll_usecs' though the administrator edited optin_busy_poll_usecs
    (latency-suspend's variables); the line must also say that no service
    is opted in at all."""
    root = make_root(tmp_path)
    fake = FakeSystemd()
    plugin, inst = tuned_plugin(root, fake, {
        "services": "${optin_services}", "busy_poll_usecs": "${optin_busy_poll_usecs}",
        "prefer_busy_poll": "2", "restart": "${optin_restart}"})
    for name, value in (("optin_services", "my unit"), ("optin_busy_poll_usecs", "99999999"),
                        ("optin_restart", "false")):
        plugin._variables.add_variable(name, value)
    caplog.clear()      # what the first init said, without the variables
    with caplog.at_level(logging.ERROR):
        plugin._instance_init(inst)
        plugin.instance_apply_tuning(inst)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [
        "instance optin: busy_poll_usecs: invalid value '99999999' (accepted: 0..1000000), "
        "from variable optin_busy_poll_usecs; no service is opted in",
        "instance optin: prefer_busy_poll: invalid value '2' (accepted: 0 or 1); "
        "no service is opted in",
        "instance optin: services: invalid value 'my unit' (accepted: service unit names "
        "separated by commas, each a name or name.service without spaces (e.g. memcached, "
        "nginx.service)), from variable optin_services; no service is opted in"]
    assert fake.calls == [] and not os.path.exists(dropin(root, "my.service"))
    assert plugin.instance_verify_tuning(inst, False) is False


def test_plugin_names_an_undefined_variable(tuned_plugin, tmp_path, caplog):
    """A variable missing from the variables file (an older file kept over
    an upgrade) is named as such, not only as the text '${...}'."""
    plugin, inst = tuned_plugin(make_root(tmp_path), FakeSystemd(),
                                {"busy_poll_usecs": "${optin_busy_poll_usecs}"})
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [
        "instance optin: busy_poll_usecs: invalid value '${optin_busy_poll_usecs}' (accepted: "
        "0..1000000), variable optin_busy_poll_usecs not defined (in the profile or its "
        "variables file); no service is opted in"]


def test_plugin_restart_option(tuned_plugin, tmp_path):
    root = make_root(tmp_path)
    fake = FakeSystemd({"memcached.service": {"ActiveState": "active"}})
    plugin, inst = tuned_plugin(root, fake, {"services": "memcached", "restart": "true"})
    plugin.instance_apply_tuning(inst)
    assert ("TryRestartUnit", "memcached.service", "replace") in fake.calls


def test_plugin_variables_expanded(tuned_plugin, tmp_path):
    root = make_root(tmp_path)
    plugin, inst = tuned_plugin(root, FakeSystemd(), {"services": "${svc}"})
    plugin._variables.add_variable("svc", "memcached")
    plugin._instance_init(inst)
    plugin.instance_apply_tuning(inst)
    assert os.path.exists(dropin(root, "memcached.service"))


def test_plugin_bad_names_opt_no_service_in(tuned_plugin, tmp_path, caplog):
    """A bad services, restart or library is as bad as a bad value: the
    build opts no service in, and names every bad option in its own line."""
    root = make_root(tmp_path)
    caplog.set_level(logging.DEBUG)
    plugin, inst = tuned_plugin(root, FakeSystemd(), {"services": "memcached, my service",
                                                      "restart": "maybe"})
    assert inst._tuner is None
    plugin.instance_apply_tuning(inst)
    assert not os.path.exists(dropin(root, "memcached.service"))
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert [line.split(":")[1].strip() for line in lines] == ["services", "restart"], lines
    assert all(line.endswith("; no service is opted in") for line in lines), lines
