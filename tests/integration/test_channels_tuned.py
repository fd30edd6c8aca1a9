# SPDX-License-Identifier: GPL-2.0-or-later
"""nic_housekeeping on the real TuneD daemon against veth in a namespace.

Channel counts really change (ethtool netlink on veth: rx/tx channels, no
combined).  The test reads them back with `ethtool -l`, a path
independent of the library under test.  veth has no IRQs, so queue IRQ
affinity is covered by the unit tests (procfs fixtures) and the kernel
lab; the host's own IRQ affinities are never touched.
"""

import re
import time

import pytest

from support.waiting import wait_for

PROFILE = "nic-housekeeping-test"
PROFILE_TEXT = """
[main]
summary=nic_housekeeping + napi on vh* (tests)

[nic_housekeeping]
priority=-10
devices=vh*
channels=housekeeping
irq_affinity=housekeeping
housekeeping_cpus=0-1

[napi]
devices=vh*
defer_hard_irqs=77
gro_flush_timeout=30us
"""

REFUSE_PROFILE = "nic-housekeeping-refuse-test"
REFUSE_TEXT = """
[main]
summary=nic_housekeeping with counts the drivers refuse (tests)

[nic_housekeeping]
devices=vh0,xbr0
channels=9
"""

ORIGINAL = {"rx": 3, "tx": 4}
TUNED = {"rx": 2, "tx": 2}
DEVICES = ("vh0", "vh1")


def channels(netns, dev):
    """{"rx": n, "tx": n, ...} of the current counts, from `ethtool -l` text."""
    out = netns.exec("ethtool", "-l", dev).stdout
    current = out.split("Current hardware settings:")[1]
    counts = {}
    for kind, key in (("rx", "RX"), ("tx", "TX"), ("combined", "Combined")):
        m = re.search(r"^%s:\s+(\d+)" % key, current, re.M)
        if m:
            counts[kind] = int(m.group(1))
    return counts


def has_channels(netns, devs, wanted):
    return all({k: channels(netns, d).get(k) for k in wanted} == wanted for d in devs)



@pytest.fixture(scope="module")
def devices(netns, tuned):
    tuned.write_profile(PROFILE, PROFILE_TEXT)
    tuned.write_profile(REFUSE_PROFILE, REFUSE_TEXT)
    for name in DEVICES:
        netns.add_veth(name, queues=4)
    netns.exec("ip", "link", "add", "xbr0", "type", "bridge")
    return netns


@pytest.fixture
def fresh(tuned, devices):
    tuned.adm("off", check=False)
    for dev in DEVICES:
        devices.exec("ethtool", "-L", dev, "rx", str(ORIGINAL["rx"]), "tx", str(ORIGINAL["tx"]))
    assert has_channels(devices, DEVICES, ORIGINAL)
    return tuned


def test_channels_limited_then_restored_exactly(fresh, devices):
    mark = fresh.profile(PROFILE)
    assert has_channels(devices, DEVICES, TUNED)
    assert has_channels(devices, ("vh0p",), TUNED)     # vh* selects the peers too
    # NAPIs of the new queue set carry the napi values (GRO makes veth NAPIs)
    wait_for(lambda: all(len(devices.napis(d)) == 2 and
                         all(n.get("defer-hard-irqs") == 77 for n in devices.napis(d))
                         for d in DEVICES), what="NAPI values on the limited queues")
    log = fresh.log_since(mark)
    # channels first: the napi unit starts after the channel change
    napi_line = re.search(r"instance napi: [^\n]*vh0[^\n]*: set \d+ NAPIs", log)
    assert napi_line, log
    assert log.index("vh0: channels set to rx 2, tx 2") < napi_line.start()
    result, vlog = fresh.verify()
    assert result.returncode == 0, vlog
    assert "verify: passed: device vh0: 'channels rx' = '2'" in vlog
    fresh.off()
    wait_for(lambda: has_channels(devices, DEVICES, ORIGINAL), what="original channels")


def test_verify_names_a_channel_count_changed_behind_tuneds_back(fresh, devices):
    fresh.profile(PROFILE)
    assert has_channels(devices, DEVICES, TUNED)
    devices.exec("ethtool", "-L", "vh1", "rx", "4")
    result, log = fresh.verify()
    assert result.returncode != 0
    assert "verify: failed: device vh1: 'channels rx' = '4', expected '2'" in log, log
    # shown, not reverted: changing channels is a deliberate act
    assert channels(devices, "vh1")["rx"] == 4
    fresh.off()
    wait_for(lambda: has_channels(devices, DEVICES, ORIGINAL), what="original channels")


def test_hot_added_nic_is_limited_and_removal_is_quiet(fresh, devices):
    fresh.profile(PROFILE)
    devices.add_veth("vh9", queues=4)
    try:
        wait_for(lambda: has_channels(devices, ("vh9", "vh9p"), TUNED),
                 what="hot-added vh9 limited")
    finally:
        mark = fresh.log_mark()
        devices.exec("ip", "link", "del", "vh9")
    wait_for(lambda: fresh.saw_removal("vh9", mark), what="removal seen")
    assert " ERROR " not in fresh.log_since(mark)
    fresh.off()
    wait_for(lambda: has_channels(devices, DEVICES, ORIGINAL), what="original channels")


def test_kill9_restart_then_off_restores_originals(fresh, devices):
    fresh.profile(PROFILE)
    assert has_channels(devices, DEVICES, TUNED)
    fresh.kill9()
    mark = fresh.log_mark()
    fresh.start()
    wait_for(lambda: "static tuning from profile" in fresh.log_since(mark),
             what="profile re-applied after restart")
    assert has_channels(devices, DEVICES, TUNED)
    fresh.off()
    wait_for(lambda: has_channels(devices, DEVICES, ORIGINAL),
             what="originals after restart + off")


def test_refusals_are_reported_once_and_shown_by_verify(fresh, devices):
    mark = fresh.profile(REFUSE_PROFILE)
    log = fresh.log_since(mark)
    # veth: above its maximum (4), in its rx channels; bridge: no channel support at all
    assert log.count("vh0: channels: refused (EINVAL: requested channel count exceeds "
                     "maximum, in attribute rx-count)") == 1, log
    assert log.count("xbr0: channels: the driver cannot report or change channels "
                     "(EOPNOTSUPP)") == 1, log
    assert "Traceback" not in log
    assert has_channels(devices, ("vh0",), ORIGINAL)
    result, vlog = fresh.verify()
    assert result.returncode != 0
    assert "verify: failed: device vh0: 'channels rx' = '3', expected '9'" in vlog, vlog
    assert "vh0: channels rx: refused (EINVAL" in vlog
    assert "xbr0: channels: the driver cannot report or change channels" in vlog
    fresh.off()
    assert has_channels(devices, DEVICES, ORIGINAL)


def test_bad_housekeeping_cpus_does_not_mean_every_cpu(fresh, devices):
    """A bad CPU list is reported, and the instance changes nothing: read as
    "every CPU" it would still cut the channels to the online CPU count."""
    fresh.write_profile("nic-housekeeping-bad-cpus-test", "[main]\n[nic_housekeeping]\n"
                        "devices=vh*\nchannels=housekeeping\nirq_affinity=housekeeping\n"
                        "housekeeping_cpus=0-a\n")
    mark = fresh.profile("nic-housekeeping-bad-cpus-test")
    lines = [line for line in fresh.log_since(mark).splitlines()
             if "housekeeping_cpus" in line and "invalid value '0-a'" in line]
    assert len(lines) == 1, fresh.log_since(mark)
    time.sleep(1.0)
    assert has_channels(devices, DEVICES, ORIGINAL)
    result, vlog = fresh.verify()
    assert result.returncode != 0
    fresh.off()
