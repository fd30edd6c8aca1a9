# SPDX-License-Identifier: GPL-2.0-or-later
"""Fixtures of the features' tests (irqtune/features); those the other
folders use too are in tests/unit/conftest.py."""

import os

import pytest

from support.fakes.channels import ORIGINAL_AFFINITY, write
from support.fakes.interrupts import INTERRUPTS, QUEUE_IRQS


@pytest.fixture
def roots(tmp_path):
    """(proc, sys, tmp_path): procfs and sysfs of a virtio-net guest with
    queue IRQs 24-28 (support/fakes/channels.py, interrupts.py)."""
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "interrupts").write_text(INTERRUPTS)
    (proc / "cmdline").write_text("ro isolcpus=domain,2-3 nohz_full=2-3\n")
    for irq, cpus in ORIGINAL_AFFINITY.items():
        (proc / "irq" / str(irq)).mkdir(parents=True)
        write(str(proc), irq, cpus)
    sys_root = tmp_path / "sys"
    cpu = sys_root / "devices/system/cpu"
    cpu.mkdir(parents=True)
    (cpu / "online").write_text("0-3\n")
    (cpu / "isolated").write_text("2-3\n")
    (cpu / "nohz_full").write_text("2-3\n")
    dev = sys_root / "devices/pci0000:00/0000:00:03.0/virtio1"
    (dev / "net/eth0").mkdir(parents=True)
    os.symlink("../../../virtio1", dev / "net/eth0/device")
    (sys_root / "class/net").mkdir(parents=True)
    os.symlink("../../devices/pci0000:00/0000:00:03.0/virtio1/net/eth0",
               sys_root / "class/net/eth0")
    (dev.parent / "msi_irqs").mkdir()
    for irq in (24,) + QUEUE_IRQS:
        (dev.parent / "msi_irqs" / str(irq)).write_text("msix\n")
    return str(proc), str(sys_root), tmp_path
