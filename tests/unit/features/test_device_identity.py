# SPDX-License-Identifier: GPL-2.0-or-later
"""A device removed and created again under the same name while a tuner
runs is another device: it gets its own values as originals, never the
originals of the device that had the name before.

A driver reload, an unplug and replug, or a VF re-created by its PF gives
the new device the old name but a new ifindex: net/core/dev.c hands them
out cyclically (dev_index_reserve(), xa_alloc_cyclic() up to INT_MAX;
before 6.6 dev_new_index() counted up the same way), so an ifindex comes
back only when a device is created with an explicit index or moved in
from another namespace keeping its own - which (name, ifindex), the
ledger's identity of a device, cannot tell apart.  TuneD may miss the removal
(the two events come close together; TuneD before 2.25 reports neither to
a plugin whose device list did not change), so the tuners meet the new
device in apply or in the link watcher's apply_new with the old device's
originals still booked under its name - or in restore, when the profile
is switched off before anything was applied to the new device.

Every old original differs from the new device's value here, so that a
test can tell whose original was restored.
"""

import os

import pytest
from support.fakes.netdev import FakeNetdev
from support.fakes.channels import FakeDriver, affinity, housekeeping_tuner as hk_tuner, write
from support.fakes.netdev import FULL, OLD_KERNEL
from support.fakes.ethtool import FakeNic, ZeroCopyHost as Host

from irqtune.kernel.kfs import KernelFs
from irqtune.shared.ledger import Ledger
from irqtune.features.napi import NapiConfig, NapiTuner

QUEUE_IRQS = (25, 26, 27, 28)


class Names:
    """The kernel's name <-> ifindex tables of the fixture's namespace."""

    def __init__(self, **names):
        self.names = dict(names)

    def ifindex(self, name):
        return self.names.get(name)

    def ifname(self, ifindex):
        return {i: n for n, i in self.names.items()}.get(ifindex)


# -- napi: per NAPI through napi-set -------------------------------------------------

def napi_tuner(tmp_path, names, caps=FULL):
    return NapiTuner(NapiConfig(defer_hard_irqs=100, gro_flush_timeout=20000), caps,
                     ledger=Ledger("napi-test", str(tmp_path / "run")),
                     kfs=KernelFs(sys=str(tmp_path / "sys")),
                     ifindex=names.ifindex, ifname=names.ifname)


@pytest.fixture
def netdev(monkeypatch):
    return FakeNetdev().install(monkeypatch)


def recreate_napis(netdev, names):
    """eth0 (ifindex 7, tuned) goes; a new eth0 (ifindex 8) comes with the
    driver's defaults."""
    netdev.remove_device(7)
    names.names["eth0"] = 8
    netdev.add_device(8, 2)


@pytest.mark.parametrize("event", ["apply", "apply_new"])
def test_napi_recreated_device_is_restored_to_its_own_values(tmp_path, netdev, event):
    names = Names(eth0=7)
    # the administrator had set deferral on the first eth0 (udev, ip link)
    netdev.add_device(7, 2, defer_hard_irqs=2, gro_flush_timeout=50000)
    t = napi_tuner(tmp_path, names)
    t.apply("eth0")
    assert netdev.values(7, "defer-hard-irqs") == [100, 100]
    recreate_napis(netdev, names)
    getattr(t, event)("eth0")       # TuneD's hotplug add, or the link watcher
    assert netdev.values(8, "defer-hard-irqs") == [100, 100]
    t.restore_all()
    assert netdev.values(8, "defer-hard-irqs") == [0, 0]
    assert netdev.values(8, "gro-flush-timeout") == [0, 0]


def test_napi_recreated_device_not_tuned_yet_keeps_its_values_at_restore(tmp_path, netdev):
    names = Names(eth0=7)
    netdev.add_device(7, 2, defer_hard_irqs=2, gro_flush_timeout=50000)
    t = napi_tuner(tmp_path, names)
    t.apply("eth0")
    recreate_napis(netdev, names)
    applied = len(netdev.sets)
    t.restore("eth0")               # the device leaves the instance
    t.restore_all()
    assert netdev.values(8, "defer-hard-irqs") == [0, 0]
    assert netdev.sets[applied:] == []


# -- napi: the device-wide sysfs files (kernels before 6.13) --------------------------

def sysfs_device(tmp_path, defer, gro):
    dev = tmp_path / "sys/class/net/eth0"
    dev.mkdir(parents=True, exist_ok=True)
    (dev / "napi_defer_hard_irqs").write_text("%d\n" % defer)
    (dev / "gro_flush_timeout").write_text("%d\n" % gro)
    return dev


def sysfs_values(dev):
    return [(dev / f).read_text().strip() for f in ("napi_defer_hard_irqs", "gro_flush_timeout")]


@pytest.mark.parametrize("reapplied", [True, False])
def test_napi_sysfs_recreated_device_gets_its_own_originals(tmp_path, reapplied):
    names = Names(eth0=7)
    dev = sysfs_device(tmp_path, 2, 50000)
    t = napi_tuner(tmp_path, names, caps=OLD_KERNEL)
    t.apply("eth0")
    assert sysfs_values(dev) == ["100", "20000"]
    names.names["eth0"] = 8
    sysfs_device(tmp_path, 0, 0)    # the new device's files hold the defaults
    if reapplied:
        t.apply("eth0")
        assert sysfs_values(dev) == ["100", "20000"]
    t.restore_all()
    assert sysfs_values(dev) == ["0", "0"]


# -- channels and queue IRQ affinity ---------------------------------------------------

NEW_AFFINITY = "0-3"        # default_smp_affinity: what re-requested vectors get


def recreate_nic(roots, driver, names):
    """eth0 comes back as ifindex 8 with the driver's 4 channels and its
    vectors (the same numbers, as a virtio re-probe often gets) on every CPU."""
    names["eth0"] = 8
    driver.count["combined"] = 4
    for irq in QUEUE_IRQS:
        write(roots[0], irq, NEW_AFFINITY)


@pytest.mark.parametrize("event", ["apply", "apply_new"])
def test_channels_recreated_device_is_restored_to_its_own_values(roots, event):
    proc = roots[0]
    names = {"eth0": 7}
    driver = FakeDriver(proc, combined=(4, 3))     # ethtool -L combined 3 on the first eth0
    t = hk_tuner(roots, driver, names=names, channels="housekeeping",
                 irq_affinity="housekeeping")
    t.apply("eth0")
    assert driver.count["combined"] == 2
    recreate_nic(roots, driver, names)
    getattr(t, event)("eth0")
    assert [affinity(proc, irq) for irq in QUEUE_IRQS] == ["0-1"] * 4
    t.restore_all()
    assert driver.count["combined"] == 4
    assert [affinity(proc, irq) for irq in QUEUE_IRQS] == [NEW_AFFINITY] * 4


def test_channels_recreated_device_not_tuned_yet_keeps_its_values_at_restore(roots):
    proc = roots[0]
    names = {"eth0": 7}
    driver = FakeDriver(proc, combined=(4, 3))
    t = hk_tuner(roots, driver, names=names, channels="housekeeping",
                 irq_affinity="housekeeping")
    t.apply("eth0")
    recreate_nic(roots, driver, names)
    t.restore_all()
    assert driver.count["combined"] == 4 and driver.sets == [{"combined": 2}]
    assert [affinity(proc, irq) for irq in QUEUE_IRQS] == [NEW_AFFINITY] * 4
    assert not os.path.exists(t.ledger.path)


# -- zero-copy receive preparation -------------------------------------------------------

def recreate_zerocopy_nic(host):
    host.ifindex["eth0"] = 8
    host.nic = FakeNic(combined=(8, 4))
    return host.nic.snapshot()


@pytest.mark.parametrize("event", ["apply", "apply_new"])
def test_zerocopy_recreated_device_is_restored_to_its_own_values(tmp_path, event):
    host = Host(tmp_path, combined=(8, 3))
    host.nic.hds = 512
    tuner = host.tuner(queues="1", hds_thresh="0", header_split="on")
    tuner.apply("eth0")
    assert host.nic.count == 4 and host.nic.hds == 0
    new = recreate_zerocopy_nic(host)
    getattr(tuner, event)("eth0")
    assert host.nic.count == 5 and host.nic.hds == 0
    tuner.restore_all()
    assert host.nic.snapshot() == new


def test_zerocopy_recreated_device_not_tuned_yet_keeps_its_values_at_restore(tmp_path):
    host = Host(tmp_path, combined=(8, 3))
    host.nic.hds = 512
    tuner = host.tuner(queues="1", hds_thresh="0", header_split="on")
    tuner.apply("eth0")
    new = recreate_zerocopy_nic(host)
    tuner.restore_all()
    assert host.nic.snapshot() == new and host.nic.calls == []
