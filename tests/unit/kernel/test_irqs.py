# SPDX-License-Identifier: GPL-2.0-or-later
"""irqtune.kernel.irqs against fixture procfs/sysfs trees.

The host's own IRQs are never written: every write goes to files under
tmp_path.  The /proc/interrupts texts copy the shapes real kernels print
(virtio-net in the lab guest, i40e, mlx5, a platform NIC without MSI).
"""

import errno
import os

import pytest

from irqtune.kernel import irqs
from irqtune.kernel.kfs import KernelFs

VIRTIO = """\
           CPU0       CPU1       CPU2       CPU3       
  1:          9          0          0          0   IO-APIC   1-edge      i8042
 24:          0          0          0          0  PCI-MSIX-0000:00:03.0   0-edge      virtio1-config
 25:         10          0          0          0  PCI-MSIX-0000:00:03.0   1-edge      virtio1-input.0
 26:          0          7          0          0  PCI-MSIX-0000:00:03.0   2-edge      virtio1-output.0
 27:          0          0          5          0  PCI-MSIX-0000:00:03.0   3-edge      virtio1-input.1
 28:          0          0          0          3  PCI-MSIX-0000:00:03.0   4-edge      virtio1-output.1
 29:          0          0          0          0  PCI-MSIX-0000:00:04.0   0-edge      virtio2-config
 30:          0          0          0          0  PCI-MSIX-0000:00:04.0   1-edge      virtio2-virtqueues
NMI:          0          0          0          0   Non-maskable interrupts
"""

I40E = """\
           CPU0       CPU1
 40:          0          0  IR-PCI-MSI 1048576-edge      i40e-0000:02:00.0:misc
 41:         11          0  IR-PCI-MSI 1048577-edge      i40e-eth1-TxRx-0
 42:          0         12  IR-PCI-MSI 1048578-edge      i40e-eth1-TxRx-1
 43:          0          0  IR-PCI-MSI 2097152-edge      mlx5_async0@pci:0000:03:00.0
 44:          0          0  IR-PCI-MSI 2097153-edge      mlx5_comp0@pci:0000:03:00.0
 45:          0          0  IR-PCI-MSI 2097154-edge      mlx5_comp1@pci:0000:03:00.0
"""

PLATFORM = """\
           CPU0       CPU1
 60:          1          0     GICv3  64 Level     eth0-rx-0
 61:          0          1     GICv3  65 Level     eth0-tx-0
 62:          0          0     GICv3  66 Level     eth0
 63:          0          0     GICv3  67 Level     eth10-rx-0
 64:          0          0     GICv3  68 Level     mmc0, mmc1
"""


def make_tree(tmp_path, interrupts, nics=(), affinities=None):
    """nics: (ifname, pci function, extra level name or None, [msi irqs])."""
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "interrupts").write_text(interrupts)
    sys_root = tmp_path / "sys"
    (sys_root / "class/net").mkdir(parents=True)
    for ifname, pci, extra, msi in nics:
        fn = sys_root / "devices/pci0000:00" / pci
        dev = fn / extra if extra else fn
        (dev / "net" / ifname).mkdir(parents=True)
        os.symlink(os.path.relpath(dev, dev / "net" / ifname), dev / "net" / ifname / "device")
        os.symlink(os.path.relpath(dev / "net" / ifname, sys_root / "class/net"),
                   sys_root / "class/net" / ifname)
        if msi is not None:
            (fn / "msi_irqs").mkdir()
            for irq in msi:
                (fn / "msi_irqs" / str(irq)).write_text("msix\n")
    for irq, cpus in (affinities or {}).items():
        (proc / "irq" / str(irq)).mkdir(parents=True)
        (proc / "irq" / str(irq) / "smp_affinity_list").write_text(cpus + "\n")
    return KernelFs(str(proc), str(sys_root)), None


def test_interrupt_names_parse_every_shape(tmp_path):
    proc, _ = make_tree(tmp_path, VIRTIO)
    names = irqs.interrupt_names(proc)
    assert names[1] == "i8042"
    assert names[25] == "virtio1-input.0"
    assert "NMI" not in names and len(names) == 8


def test_level_interrupts_and_shared_actions(tmp_path):
    proc, _ = make_tree(tmp_path, PLATFORM)
    names = irqs.interrupt_names(proc)
    assert names[60] == "eth0-rx-0"
    assert names[64] == "mmc0, mmc1"


def test_virtio_queue_vectors_come_from_the_pci_function(tmp_path):
    # /sys/class/net/eth0/device is the virtio device; msi_irqs sits one up.
    kfs, _ = make_tree(tmp_path, VIRTIO, [
        ("eth0", "0000:00:03.0", "virtio1", [24, 25, 26, 27, 28]),
        ("eth1", "0000:00:04.0", "virtio2", [29, 30])])
    found = irqs.nic_queue_irqs("eth0", kfs, napi=())
    assert [q.irq for q in found] == [25, 26, 27, 28]
    assert {q.source for q in found} == {"msi"}
    assert found[0].name == "virtio1-input.0"
    # virtio2-virtqueues is a shared vector, not a queue vector
    assert irqs.queue_irqs("eth1", kfs, napi=()) == []


def test_misc_and_async_vectors_are_not_queues(tmp_path):
    kfs, _ = make_tree(tmp_path, I40E, [
        ("eth1", "0000:02:00.0", None, [40, 41, 42]),
        ("eth2", "0000:03:00.0", None, [43, 44, 45])])
    assert irqs.queue_irqs("eth1", kfs, napi=()) == [41, 42]
    assert irqs.queue_irqs("eth2", kfs, napi=()) == [44, 45]


def test_without_msi_names_starting_with_the_interface_are_used(tmp_path):
    kfs, _ = make_tree(tmp_path, PLATFORM, [("eth0", "platform-eth", None, None)])
    found = irqs.nic_queue_irqs("eth0", kfs, napi=())
    # eth0 alone is the device's non-queue line; eth10-rx-0 is another NIC
    assert [(q.irq, q.source) for q in found] == [(60, "name"), (61, "name")]


def test_napi_irqs_are_queue_irqs_whatever_their_name(tmp_path):
    kfs, _ = make_tree(tmp_path, I40E, [("eth1", "0000:02:00.0", None, [40, 41, 42])])
    found = irqs.nic_queue_irqs("eth1", kfs, napi={41, 99})
    assert [(q.irq, q.source) for q in found] == [(41, "napi"), (42, "msi"), (99, "napi")]


def test_unknown_device_has_no_irqs(tmp_path):
    kfs, _ = make_tree(tmp_path, VIRTIO)
    assert irqs.queue_irqs("nosuch0", kfs, napi=()) == []


@pytest.mark.parametrize("name,queue", [
    ("virtio0-input.3", True), ("virtio0-output.0", True), ("virtio0-config", False),
    ("ice-eth0-TxRx-12", True), ("mlx5_comp7@pci:0000:03:00.0", True),
    ("mlx5_async0@pci:0000:03:00.0", False), ("bnxt_en-TxRx-0", True),
    ("ixgbe-eth0-rx-1", True), ("enp3s0-fp-2", True),
    ("", False), ("eth0", False), ("i40e-0000:02:00.0:misc", False),
])
def test_queue_names(name, queue):
    assert irqs.is_queue_name(name) is queue


def test_affinity_read_write_on_fixture_files(tmp_path):
    proc, _ = make_tree(tmp_path, VIRTIO, affinities={25: "0-3", 26: "2"})
    assert irqs.read_affinity(25, proc) == [0, 1, 2, 3]
    irqs.write_affinity(25, [0, 1], proc)
    assert (tmp_path / "proc/irq/25/smp_affinity_list").read_text() == "0-1\n"
    assert irqs.read_affinity(25, proc) == [0, 1]
    assert irqs.read_effective_affinity(25, proc) is None
    (tmp_path / "proc/irq/26/effective_affinity_list").write_text("2\n")
    assert irqs.read_effective_affinity(26, proc) == [2]
    with pytest.raises(OSError):
        irqs.write_affinity(77, [0], proc)


@pytest.mark.parametrize("code,words", [
    (errno.EIO, "managed IRQ"), (errno.EINVAL, "EINVAL"), (errno.ENOSPC, "vectors"),
    (errno.EPERM, "managed IRQ: the kernel owns its affinity (EPERM)"), (errno.EACCES, "EACCES"),
    (errno.ENOENT, "gone"),
])
def test_affinity_error_reasons(code, words):
    assert words in irqs.affinity_error_reason(OSError(code, os.strerror(code)))
