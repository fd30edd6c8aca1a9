# SPDX-License-Identifier: GPL-2.0-or-later
"""latency-suspend on the real TuneD daemon against real veth NAPIs."""

import os
import re
import time

import pytest

from support.commands import run
from support.rawnapi import RawGenl
from support.waiting import wait_for

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROFILE = "latency-suspend-test"
TUNED = {"defer-hard-irqs": 100, "gro-flush-timeout": 20000, "irq-suspend-timeout": 20000000}
ORIGINAL = {"defer-hard-irqs": 3, "gro-flush-timeout": 5000, "irq-suspend-timeout": 7}
SELECTED = ("va0", "va0p", "va1", "va1p")
UNSELECTED = ("vx0", "vx0p")


@pytest.fixture(scope="module")
def devices(netns):
    for name in ("va0", "va1", "vx0"):
        netns.add_veth(name, queues=2)
    return netns





@pytest.fixture
def fresh(tuned, devices):
    """No profile active, and known non-default originals on every NAPI."""
    tuned.adm("off", check=False)    # fails when nothing is active
    tuned.write_variables("suspend_nics=va*\n")
    devices.set_napis(SELECTED + UNSELECTED, ORIGINAL)
    return tuned


def test_profile_sets_every_napi_of_selected_nics_only(fresh, devices):
    fresh.profile(PROFILE)
    wait_for(lambda: devices.napis_have(SELECTED, TUNED), what="profile values on va*")
    assert len(devices.napis("va0")) == 2
    assert devices.napis_have(UNSELECTED, ORIGINAL)


def test_off_restores_originals(fresh, devices):
    fresh.profile(PROFILE)
    wait_for(lambda: devices.napis_have(SELECTED, TUNED), what="profile values")
    fresh.off()
    wait_for(lambda: devices.napis_have(SELECTED, ORIGINAL), what="originals after off")


def test_profile_switch_restores_originals(fresh, devices):
    fresh.profile(PROFILE)
    wait_for(lambda: devices.napis_have(SELECTED, TUNED), what="profile values")
    fresh.profile("irqtune-test-other")
    wait_for(lambda: devices.napis_have(SELECTED, ORIGINAL), what="originals after switch")


def test_verify_fails_and_names_napi_changed_behind_tuneds_back(fresh, devices):
    fresh.profile(PROFILE)
    wait_for(lambda: devices.napis_have(SELECTED, TUNED), what="profile values")
    result, log = fresh.verify()
    assert result.returncode == 0, log
    assert "verify: passed: device va0: 'NAPI" in log
    victim = devices.napis("va1")[0]["id"]
    with devices.entered():
        nl = RawGenl()
        nl.set(victim, defer_hard_irqs=1)
        nl.close()
    result, log = fresh.verify()
    assert result.returncode != 0
    assert re.search(r"verify: failed: device va1: 'NAPI %d defer_hard_irqs' = '1', "
                     r"expected '100'" % victim, log), log


def test_veth_added_later_is_tuned_and_removal_is_quiet(fresh, devices):
    fresh.profile(PROFILE)
    wait_for(lambda: devices.napis_have(SELECTED, TUNED), what="profile values")
    devices.add_veth("va9", queues=2)
    try:
        wait_for(lambda: devices.napis_have(("va9", "va9p"), TUNED), what="hot-added va9 tuned")
    finally:
        mark = fresh.log_mark()
        devices.exec("ip", "link", "del", "va9")
    wait_for(lambda: fresh.saw_removal("va9", mark), what="removal seen")
    assert " ERROR " not in fresh.log_since(mark)
    fresh.off()
    wait_for(lambda: devices.napis_have(SELECTED, ORIGINAL), what="originals after off")


def churn(devices, name):
    """Link down/up: veth recreates its NAPIs with new ids."""
    before = {n["id"] for n in devices.napis(name)}
    devices.exec("ip", "link", "set", name, "down")
    devices.up(name)
    after = {n["id"] for n in devices.napis(name)}
    assert after and after.isdisjoint(before), "veth kept its NAPIs: no churn to test"


def test_link_down_up_brings_new_napis_that_get_tuned(fresh, devices):
    fresh.profile(PROFILE)
    wait_for(lambda: devices.napis_have(SELECTED, TUNED), what="profile values")
    churn(devices, "va0")
    wait_for(lambda: devices.napis_have(("va0",), TUNED), what="recreated NAPIs tuned")
    result, log = fresh.verify()
    assert result.returncode == 0, log


def test_kill9_restart_then_off_restores_originals(fresh, devices):
    fresh.profile(PROFILE)
    wait_for(lambda: devices.napis_have(SELECTED, TUNED), what="profile values")
    fresh.kill9()
    mark = fresh.log_mark()
    fresh.start()
    wait_for(lambda: "static tuning from profile" in fresh.log_since(mark),
             what="profile re-applied after restart")
    assert devices.napis_have(SELECTED, TUNED)
    fresh.off()
    wait_for(lambda: devices.napis_have(SELECTED, ORIGINAL), what="originals after restart + off")


BAD_VALUES = [
    ("defer_hard_irqs", "-5", "defer-hard-irqs", "from 0 to 2147483647"),
    ("defer_hard_irqs", "abc", "defer-hard-irqs", "from 0 to 2147483647"),
    ("defer_hard_irqs", "3000000000", "defer-hard-irqs", "from 0 to 2147483647"),
    ("threaded", "fast", None, "one of disabled, enabled, busy-poll"),
]


@pytest.mark.parametrize("option,value,attr,accepted", BAD_VALUES)
def test_bad_value_is_one_clear_line_and_the_rest_applies(fresh, devices, option, value,
                                                          attr, accepted):
    # a child's [napi] resets devices= to "*" unless it repeats it (TuneD merging)
    fresh.write_profile("irqtune-test-bad", "[main]\ninclude=%s\n[napi]\n"
                        "devices=${suspend_nics}\n%s=%s\n" % (PROFILE, option, value))
    mark = fresh.profile("irqtune-test-bad")
    rest = {k: v for k, v in TUNED.items() if k != attr}
    wait_for(lambda: devices.napis_have(SELECTED, rest), what="valid options applied")
    if attr:
        assert devices.napis_have(SELECTED, {attr: ORIGINAL[attr]})
    lines = [line for line in fresh.log_since(mark).splitlines()
             if "invalid value '%s'" % value in line]
    assert len(lines) == 1, lines
    assert option in lines[0] and accepted in lines[0], lines[0]
    result, log = fresh.verify()
    assert result.returncode != 0
    assert "invalid value '%s'" % value in log
    fresh.off()
    time.sleep(0.5)


def test_devices_udev_regex_selects_by_udev_properties(fresh, devices):
    devices.add_veth("vu0", queues=2)
    devices.set_napis(("vu0", "vu0p"), ORIGINAL)
    try:
        fresh.write_profile("irqtune-test-udev", "[main]\ninclude=%s\n[napi]\n"
                            "devices_udev_regex=INTERFACE=vu0$\n" % PROFILE)
        fresh.profile("irqtune-test-udev")
        wait_for(lambda: devices.napis_have(("vu0",), TUNED), what="vu0 tuned by udev regex")
        assert devices.napis_have(("vu0p",) + SELECTED, ORIGINAL)
        fresh.off()
        wait_for(lambda: devices.napis_have(("vu0",), ORIGINAL), what="vu0 restored")
    finally:
        devices.exec("ip", "link", "del", "vu0")


def test_churn_then_off_restores_the_originals_of_the_replaced_napis(fresh, devices):
    """veth recreates its NAPIs on down/up with new ids; the kernel reuses the
    napi struct, so irq-suspend-timeout comes back holding the tuned value.
    Originals are kept per NAPI position, so the recreated NAPIs inherit the
    originals of those they replaced and `off` leaves no profile value."""
    fresh.profile(PROFILE)
    wait_for(lambda: devices.napis_have(SELECTED, TUNED), what="profile values")
    churn(devices, "va0")
    wait_for(lambda: devices.napis_have(("va0",), TUNED), what="recreated NAPIs tuned")
    fresh.off()
    wait_for(lambda: devices.napis_have(SELECTED, ORIGINAL),
             what="originals of the replaced NAPIs after churn + off")


TRANSFER_PROFILE = """
[main]
summary=two napi instances, for moving a NIC between them (tests)

[napi_first]
type=napi
devices=va0
defer_hard_irqs=11
gro_flush_timeout=11000

[napi_second]
type=napi
devices=va1
defer_hard_irqs=22
gro_flush_timeout=22000
"""
FIRST = {"defer-hard-irqs": 11, "gro-flush-timeout": 11000}
SECOND = {"defer-hard-irqs": 22, "gro-flush-timeout": 22000}


def test_nic_moved_between_instances_keeps_its_originals(fresh, devices):
    """instance_acquire_devices removes va0 from the first instance: it must
    put va0's originals back before forgetting them, else the second
    instance saves the first one's values as va0's originals."""
    fresh.write_profile("irqtune-test-transfer", TRANSFER_PROFILE)
    fresh.profile("irqtune-test-transfer")
    wait_for(lambda: devices.napis_have(("va0",), FIRST), what="first instance on va0")
    wait_for(lambda: devices.napis_have(("va1",), SECOND), what="second instance on va1")
    # tuned-adm 2.20 has no instance_acquire_devices command; the daemon's
    # D-Bus method (TuneD >= 2.15) is what the command calls later on.
    reply = run("dbus-send", "--system", "--print-reply", "--dest=com.redhat.tuned",
                "/Tuned", "com.redhat.tuned.control.instance_acquire_devices",
                "string:va0", "string:napi_second").stdout
    assert "boolean true" in reply, reply
    wait_for(lambda: devices.napis_have(("va0",), SECOND), what="second instance on va0")
    fresh.off()
    wait_for(lambda: devices.napis_have(("va0", "va1"), ORIGINAL),
             what="originals of va0 and va1 after the move and off")


EVENTS_ONLY_PROFILE = """
[main]
summary=napi with the periodic re-check off: link events alone re-tune (tests)

[napi]
devices=va0
defer_hard_irqs=100
gro_flush_timeout=20000
irq_suspend_timeout=20000000
recheck_interval=0
"""


def test_link_events_alone_retune_recreated_napis(fresh, devices):
    """With the periodic re-check off, a broken link-event path cannot hide
    behind the timer."""
    fresh.write_profile("irqtune-test-events-only", EVENTS_ONLY_PROFILE)
    fresh.profile("irqtune-test-events-only")
    wait_for(lambda: devices.napis_have(("va0",), TUNED), what="profile values")
    churn(devices, "va0")
    wait_for(lambda: devices.napis_have(("va0",), TUNED), timeout=10,
             what="recreated NAPIs tuned by the link event")
    fresh.off()
    wait_for(lambda: devices.napis_have(("va0",), ORIGINAL), what="originals after off")


def test_bad_queues_value_does_not_widen_to_every_napi(fresh, devices):
    """queues= limits the scope: a bad value must not mean "all NAPIs"."""
    fresh.write_profile("irqtune-test-bad-queues", "[main]\ninclude=%s\n[napi]\n"
                        "devices=${suspend_nics}\nqueues=0-x\n" % PROFILE)
    mark = fresh.profile("irqtune-test-bad-queues")
    lines = [line for line in fresh.log_since(mark).splitlines()
             if "invalid value '0-x'" in line]
    assert len(lines) == 1 and "queues" in lines[0], lines
    time.sleep(1.0)      # nothing may arrive late either (watcher, re-check)
    assert devices.napis_have(SELECTED, ORIGINAL)
    result, log = fresh.verify()
    assert result.returncode != 0
    assert "invalid value '0-x'" in log
    fresh.off()


DEFAULT_DEVICES_PROFILE = """
[main]
summary=napi with the default devices=* (tests)

[napi]
defer_hard_irqs=100
gro_flush_timeout=20000
irq_suspend_timeout=20000000
"""


def test_default_devices_skip_virtual_nics(fresh, devices):
    """devices=* (the default) means physical NICs, as for TuneD's own net
    plugin: the namespace's veths are virtual, so nothing is touched; the
    same values with devices= naming them do apply."""
    fresh.write_profile("irqtune-test-default-devices", DEFAULT_DEVICES_PROFILE)
    fresh.profile("irqtune-test-default-devices")
    time.sleep(1.0)      # the watcher and the first re-check have had their chance
    assert devices.napis_have(SELECTED + UNSELECTED, ORIGINAL)
    fresh.write_profile("irqtune-test-named-devices",
                        DEFAULT_DEVICES_PROFILE.replace("[napi]\n", "[napi]\ndevices=va0\n"))
    fresh.profile("irqtune-test-named-devices")
    wait_for(lambda: devices.napis_have(("va0",), TUNED), what="named virtual device tuned")
    fresh.off()
    wait_for(lambda: devices.napis_have(("va0",), ORIGINAL), what="originals after off")


def irqtune_verify(tuned):
    """`irqtune verify` as make deploy and the Ansible role judge a host."""
    return run("/usr/bin/python3", "-m", "irqtune", "verify", "--log", tuned.log_path,
               check=False, cwd=REPO, timeout=120)


def test_a_selector_that_matches_no_device_fails_verify(fresh, devices):
    """The typo (or a NIC named otherwise): TuneD leaves the instance
    inactive and would verify nothing; tuned-adm verify and irqtune verify
    fail, naming the option, the value and the devices there are."""
    fresh.write_variables("suspend_nics=ens1f0\n")
    fresh.profile(PROFILE)
    result, log = fresh.verify()
    assert result.returncode != 0, log
    assert re.search(r"verify: failed: '?napi: devices=ens1f0 matches no network device; "
                     r"devices here: .*\bva0\b.*\bvx0p\b", log), log
    said = irqtune_verify(fresh)
    assert said.returncode == 1, said.stdout + said.stderr
    assert "devices=ens1f0 matches no network device" in said.stderr, said.stderr
    assert devices.napis_have(SELECTED + UNSELECTED, ORIGINAL)


def test_an_instance_whose_devices_were_unplugged_is_reported_not_failed(fresh, devices):
    """A selector that matched before and lost its devices to a hot-unplug:
    nothing to verify, said in the log; verify passes."""
    devices.add_veth("vu0", queues=1)
    try:
        fresh.write_variables("suspend_nics=vu0,vu0p\n")
        fresh.profile(PROFILE)
        wait_for(lambda: devices.napis_have(("vu0",), TUNED), what="vu0 tuned")
        mark = fresh.log_mark()
        devices.exec("ip", "link", "del", "vu0")
        wait_for(lambda: fresh.saw_removal("vu0p", mark) and fresh.saw_removal("vu0", mark),
                 what="both removals seen by TuneD")
    finally:
        devices.exec("ip", "link", "del", "vu0", check=False)
    result, log = fresh.verify()
    assert result.returncode == 0, log
    assert re.search(r"instance napi: devices=vu0,vu0p matches no device now; it tuned "
                     r"vu0, vu0p before \(unplugged\?\)", log), log
