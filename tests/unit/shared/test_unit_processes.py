# SPDX-License-Identifier: GPL-2.0-or-later
"""irqtune.shared.systemd.UnitProcesses: the one way the doctor
(--service) and the auto values (auto_services) find a unit's processes -
its control group's cgroup.procs, systemd asked only when that is empty -
and the reasons they give when there are none."""

import pytest

from irqtune.kernel.errors import IrqtuneError
from irqtune.kernel.kfs import KernelFs
from irqtune.shared.systemd import UnitProcesses
from support.fakes.systemd import FakeSystemd

GROUP = "/system.slice/memcached.service"


def Systemctl(**props):
    """systemd answering props for every unit, UnknownProperty for the others."""
    return FakeSystemd(defaults=props)


class Clock:
    now = 1000.0

    def __call__(self):
        return self.now


def host(tmp_path, pids="8\n7\n", systemd=True):
    """A cgroup v2 host (no mountinfo: /sys/fs/cgroup) whose memcached.service
    group holds pids."""
    if systemd:
        (tmp_path / "run/systemd/system").mkdir(parents=True)
    group = tmp_path / "sys/fs/cgroup" / GROUP.lstrip("/")
    group.mkdir(parents=True)
    (group / "cgroup.procs").write_text(pids)
    return KernelFs(proc=str(tmp_path / "proc"), sys=str(tmp_path / "sys")), group


def test_a_unit_processes_are_its_control_group_and_systemd_is_asked_once(tmp_path):
    kfs, _ = host(tmp_path)
    ctl = Systemctl(LoadState="loaded", ControlGroup=GROUP)
    units = UnitProcesses(kfs, ctl, str(tmp_path))
    assert units.pids("memcached.service") == [7, 8]
    assert units.pids("memcached.service") == [7, 8]
    assert ctl.asked() == ["LoadState", "ControlGroup"]


def test_an_empty_group_asks_systemd_again_at_most_every_retry(tmp_path):
    kfs, group = host(tmp_path)
    ctl = Systemctl(LoadState="loaded", ControlGroup=GROUP, ActiveState="inactive")
    clock = Clock()
    units = UnitProcesses(kfs, ctl, str(tmp_path), clock, retry=60)
    assert units.pids("memcached.service") == [7, 8]
    group.joinpath("cgroup.procs").write_text("")       # stopped: not asked within retry
    with pytest.raises(IrqtuneError, match="^memcached.service: the unit runs no process$"):
        units.pids("memcached.service")
    assert ctl.asked().count("ControlGroup") == 1
    clock.now += 60
    with pytest.raises(IrqtuneError, match=r"^memcached.service: the unit runs no process "
                                           r"\(ActiveState=inactive\)$"):
        units.pids("memcached.service")
    clock.now += 59
    with pytest.raises(IrqtuneError, match="^memcached.service: the unit runs no process$"):
        units.pids("memcached.service")
    assert ctl.asked().count("ControlGroup") == 2
    group.joinpath("cgroup.procs").write_text("9\n")     # started again: no systemctl
    assert units.pids("memcached.service") == [9]
    assert ctl.asked().count("ControlGroup") == 2


def test_without_systemd_nothing_is_asked(tmp_path):
    kfs, _ = host(tmp_path, systemd=False)
    ctl = Systemctl(LoadState="loaded", ControlGroup=GROUP)
    with pytest.raises(IrqtuneError, match="^memcached.service: systemd is not running on "
                                           "this host$"):
        UnitProcesses(kfs, ctl, str(tmp_path)).pids("memcached.service")
    assert ctl.asked() == []


def test_an_unknown_unit_is_said_so(tmp_path):
    kfs, _ = host(tmp_path)
    with pytest.raises(IrqtuneError, match=r"^nosuch.service: no such unit \(systemctl show: "
                                           r"LoadState=not-found\)$"):
        UnitProcesses(kfs, Systemctl(LoadState="not-found"), str(tmp_path)).pids("nosuch.service")


def test_systemd_not_answering_is_said_so(tmp_path):
    kfs, _ = host(tmp_path)
    with pytest.raises(IrqtuneError, match=r"^nosuch.service: fake failure of LoadUnit "
                                           r"\(org.freedesktop.systemd1.Fake\)$"):
        UnitProcesses(kfs, FakeSystemd(fail={"LoadUnit"}), str(tmp_path)).pids("nosuch.service")


def test_a_unit_name_from_a_command_line_is_shown_escaped(tmp_path):
    kfs, _ = host(tmp_path)
    with pytest.raises(IrqtuneError) as err:
        UnitProcesses(kfs, Systemctl(LoadState="not-found"), str(tmp_path)).pids("\x1b[2Jx.service")
    assert str(err.value).startswith("$'\\x1b[2Jx.service': no such unit")


@pytest.mark.parametrize("name,asked", [("memcached", "memcached.service"),
                                        ("memcached.service", "memcached.service"),
                                        ("-.mount", "-.mount"), ("x.y", "x.y.service")])
def test_a_name_without_a_unit_type_is_a_service_as_systemctl_completes_it(tmp_path, name, asked):
    """`irqtune doctor --service memcached`: systemctl appended .service to
    a name without a unit type; LoadUnit takes unit names only."""
    kfs, _ = host(tmp_path)
    ctl = Systemctl(LoadState="loaded", ControlGroup=GROUP)
    UnitProcesses(kfs, ctl, str(tmp_path)).pids(name)
    assert ("LoadUnit", asked) in ctl.calls
