# SPDX-License-Identifier: GPL-2.0-or-later
"""Which interrupt is whose: an IRQ number given to another vector is
another interrupt, and one NIC's queue vectors are never another's whose
name starts the same.

The GSIM tests run on test_gsim's fixture (the /proc/interrupts lines of a
virtio-net guest).  The platform NIC fixture is AMD's XGBE on the Seattle
SoC (Opteron A1100, four cores): a platform device without MSI, so its
queue vectors are known by name only.  Its lines are what
kernel/irq/proc.c show_interrupts() prints for them ("%*d: " with the
minimum precision 3, "%10u " per CPU, " %8s" chip, " %*lu" hwirq,
" %-8s" Level/Edge, "  %s" action): the hwirqs are the GIC SPIs of the
two ports in arch/arm64/boot/dts/amd/amd-overdrive-rev-b0.dts plus 32
(xgmac0: device 325, channels 346-349, auto-negotiation 323; xgmac1: 324,
341-344, 322), the action names those of
drivers/net/ethernet/amd/xgbe/xgbe-drv.c xgbe_request_irqs() (the device
IRQ by the netdev's name, "%s-TxRx-%u" per channel) and xgbe-mdio.c
("%s-pcs").  The ports are named eth1 (xgmac1) and eth10 (xgmac0), as
on a host with ten ports, or after a udev rename.
"""

import os

import pytest
from support.fakes.gsim import NICS
from support.fakes.gsim import SEED, gsim_tuner as tuner

from irqtune.features import channels as ch
from irqtune.features import gsim
from irqtune.kernel import irqs
from irqtune.kernel.kfs import KernelFs

# -- GSIM: an IRQ number reused by another vector ---------------------------------------


def test_reused_irq_number_gets_no_stale_original_at_restore(fake_kernel):
    """IRQ 25 had moderation allowed before the profile; the number goes to
    another device's vector, which starts with it disallowed (a new
    descriptor's default): restore must leave the new vector's switch off,
    not write the old vector's on."""
    k = fake_kernel()
    k._set_switch(25, True)
    t = tuner(k, SEED)
    t.apply()
    assert t.originals["irqs"]["25"] == {"name": "virtio0-input.0", "allow": 1}
    k.remove_irq(25)
    k.add_irq(25, "PCI-MSIX-0000:00:09.0", "0-edge", "nvme1q1")
    assert k.switch(25) is False
    t.restore_all()
    assert k.switch(25) is False
    assert not any(k.switches([26, 27, 28]).values())


def test_reused_irq_number_picked_up_by_apply_new_records_its_own_original(fake_kernel):
    """eth1 (IRQ 31, moderation allowed by the administrator) is unplugged
    and eth0 gets a third queue pair whose input vector takes number 31,
    disallowed: the watcher's apply_new records the new vector's own
    original (off), so restore switches it off again."""
    k = fake_kernel()
    k._set_switch(31, True)
    t = tuner(k, SEED, irqs="nic:eth*")
    t.apply()
    assert t.originals["irqs"]["31"]["allow"] == 1
    k.remove_irq(31)
    os.unlink(os.path.join(k.sys, "devices/pci0000:00", NICS["eth1"][0], "msi_irqs/31"))
    k.add_irq(31, "PCI-MSIX-0000:00:03.0", "5-edge", "virtio0-input.2", msi_of="eth0")
    assert k.switch(31) is False
    assert t.apply_new() == 1 and k.switch(31) is True
    assert t.originals["irqs"]["31"] == {"name": "virtio0-input.2", "allow": 0}
    t.restore_all()
    assert k.switch(31) is False


# -- eth1 is not eth10 ---------------------------------------------------------------------

XGBE_INTERRUPTS = """\
           CPU0       CPU1       CPU2       CPU3       
 11:       5221       4890       5012       4977     GICv2  30 Level     arch_timer
 33:          0          0          0          0     GICv2 354 Level     eth1-pcs
 34:         17          0          0          0     GICv2 356 Level     eth1
 35:        210          0          0          0     GICv2 373 Edge      eth1-TxRx-0
 36:          0        198          0          0     GICv2 374 Edge      eth1-TxRx-1
 37:          0          0        305          0     GICv2 375 Edge      eth1-TxRx-2
 38:          0          0          0        288     GICv2 376 Edge      eth1-TxRx-3
 39:          0          0          0          0     GICv2 355 Level     eth10-pcs
 40:          3          0          0          0     GICv2 357 Level     eth10
 41:         51          0          0          0     GICv2 378 Edge      eth10-TxRx-0
 42:          0         47          0          0     GICv2 379 Edge      eth10-TxRx-1
 43:          0          0         62          0     GICv2 380 Edge      eth10-TxRx-2
 44:          0          0          0         58     GICv2 381 Edge      eth10-TxRx-3
IPI0:      1021        998       1004       1011       Rescheduling interrupts
"""
ETH1_QUEUES = [35, 36, 37, 38]
ETH10_QUEUES = [41, 42, 43, 44]
PORTS = {"eth1": "e0900000.ethernet", "eth10": "e0700000.ethernet"}


@pytest.fixture
def seattle(tmp_path):
    """procfs and sysfs of the two XGBE ports; every IRQ on all four CPUs."""
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "interrupts").write_text(XGBE_INTERRUPTS)
    for irq in [11] + list(range(33, 45)):
        (proc / "irq" / str(irq)).mkdir(parents=True)
        (proc / "irq" / str(irq) / "smp_affinity_list").write_text("0-3\n")
    sys_root = tmp_path / "sys"
    (sys_root / "devices/system/cpu").mkdir(parents=True)
    (sys_root / "devices/system/cpu/online").write_text("0-3\n")
    (sys_root / "class/net").mkdir(parents=True)
    for ifname, platform in PORTS.items():
        dev = sys_root / "devices/platform" / platform
        (dev / "net" / ifname).mkdir(parents=True)
        os.symlink("../../../" + platform, dev / "net" / ifname / "device")
        os.symlink("../../devices/platform/%s/net/%s" % (platform, ifname),
                   sys_root / "class/net" / ifname)
    return KernelFs(str(proc), str(sys_root))


def test_queue_irqs_of_eth1_are_not_eth10s(seattle):
    assert irqs.queue_irqs("eth1", seattle, napi=()) == ETH1_QUEUES
    assert irqs.queue_irqs("eth10", seattle, napi=()) == ETH10_QUEUES
    assert {q.source for q in irqs.nic_queue_irqs("eth1", seattle, napi=())} == {"name"}


def test_gsim_selection_of_eth1_leaves_eth10_alone(seattle):
    chosen = gsim.IrqSelection.parse("nic:eth1").select(
        irqs.read_interrupts(seattle), seattle, None)
    assert sorted(chosen) == ETH1_QUEUES


def test_housekeeping_affinity_of_eth1_leaves_eth10_alone(seattle, tmp_path):
    config, errors = ch.HousekeepingConfig.from_options(
        {"irq_affinity": "housekeeping", "housekeeping_cpus": "0-1"})
    assert not errors
    t = ch.HousekeepingTuner(config, kfs=seattle, channels=object(),
                             ifindex={"eth1": 3, "eth10": 12}.get, napi=())
    t.apply("eth1")
    assert [irqs.read_affinity(irq, seattle) for irq in ETH1_QUEUES] == [[0, 1]] * 4
    assert [irqs.read_affinity(irq, seattle) for irq in ETH10_QUEUES + [33, 34, 40]] == \
        [[0, 1, 2, 3]] * 7
    assert [c.what for c in t.verify("eth1")] == \
        ["IRQ %d (eth1-TxRx-%d) affinity" % (irq, i) for i, irq in enumerate(ETH1_QUEUES)]
