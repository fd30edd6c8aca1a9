# SPDX-License-Identifier: GPL-2.0-or-later
"""Queue IRQ originals follow the vector (device + action name), not the
IRQ number: a driver that frees and requests its vectors again (a device
reset, a virtio re-probe) may get other numbers, and the vector that comes
back must get the original of the one it replaces, not the driver default
it came back with.

The fixture trees copy what a 6.18 x86 QEMU guest prints (this project's
build host, `uname -r` 6.18.44, virtio-net eth0 on 0000:00:03.0, two CPUs):
the /proc/interrupts lines of virtio2-config/-input.0/-output.0 (IRQs
37-39) verbatim apart from the counts, and the layout of /proc/irq/N/
(smp_affinity, smp_affinity_list, effective_affinity(_list),
affinity_hint, node, spurious and a directory named after the action).
The second queue pair (input.1/output.1) is added in the same format, as
a multiqueue virtio-net guest prints it.
"""

import os

import pytest

from irqtune.features import channels as ch
from irqtune.kernel.kfs import KernelFs
from irqtune.shared import ledger
from irqtune.shared.ledger import Ledger

HEADER = "           CPU0       CPU1       \n"
LINE = " %d:%s PCI-MSIX-0000:00:03.0   %d-edge      %s\n"
COUNTS = "          0          0"
TAIL = """\
NMI:          0          0   Non-maskable interrupts
LOC:   11219826   11090670   Local timer interrupts
"""

# Vectors before the reset: {irq: (hwirq, action name)}.
BEFORE = {37: (0, "virtio2-config"), 38: (1, "virtio2-input.0"), 39: (2, "virtio2-output.0"),
          40: (3, "virtio2-input.1"), 41: (4, "virtio2-output.1")}
ORIGINAL = {37: "0-1", 38: "1", 39: "0", 40: "0", 41: "1"}
# After the reset: config kept 37, 38-40 went to a disk probed meanwhile,
# the queues came back as 44-47 with the kernel's default affinity.
AFTER = {37: (0, "virtio2-config"), 44: (1, "virtio2-input.0"), 45: (2, "virtio2-output.0"),
         46: (3, "virtio2-input.1"), 47: (4, "virtio2-output.1")}
OTHER = {38: "virtio5-req.0", 39: "virtio5-config", 40: "virtio5-req.1", 41: "virtio5-req.2"}
QUEUES = ("virtio2-input.0", "virtio2-output.0", "virtio2-input.1", "virtio2-output.1")


def interrupts_text(vectors, other=None):
    text = HEADER
    for irq in sorted(set(vectors) | set(other or {})):
        if irq in vectors:
            hwirq, name = vectors[irq]
            text += LINE % (irq, COUNTS, hwirq, name)
        else:
            text += (" %d:%s PCI-MSIX-0000:00:06.0   %d-edge      %s\n"
                     % (irq, COUNTS, irq - 38, other[irq]))
    return text + TAIL


def make_irq_dir(proc, irq, name, cpulist):
    d = proc / "irq" / str(irq)
    d.mkdir(parents=True, exist_ok=True)
    mask = 0
    for part in cpulist.split(","):
        lo, _, hi = part.partition("-")
        for cpu in range(int(lo), int(hi or lo) + 1):
            mask |= 1 << cpu
    (d / "smp_affinity").write_text("%x\n" % mask)
    (d / "smp_affinity_list").write_text(cpulist + "\n")
    (d / "effective_affinity").write_text("1\n")
    (d / "effective_affinity_list").write_text("0\n")
    (d / "affinity_hint").write_text("3\n")
    (d / "node").write_text("-1\n")
    (d / "spurious").write_text("count 0\nunhandled 0\nlast_unhandled 0 ms\n")
    (d / name).mkdir(exist_ok=True)


def affinity(proc, irq):
    return (proc / "irq" / str(irq) / "smp_affinity_list").read_text().strip()


@pytest.fixture
def guest(tmp_path):
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "interrupts").write_text(interrupts_text(BEFORE))
    (proc / "cmdline").write_text("BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro console=ttyS0\n")
    for irq, (_, name) in BEFORE.items():
        make_irq_dir(proc, irq, name, ORIGINAL[irq])
    sys_root = tmp_path / "sys"
    (sys_root / "devices/system/cpu").mkdir(parents=True)
    (sys_root / "devices/system/cpu/online").write_text("0-1\n")
    fn = sys_root / "devices/pci0000:00/0000:00:03.0"
    netdir = fn / "virtio2/net/eth0"
    netdir.mkdir(parents=True)
    os.symlink("../../../virtio2", netdir / "device")
    (sys_root / "class/net").mkdir(parents=True)
    os.symlink("../../devices/pci0000:00/0000:00:03.0/virtio2/net/eth0",
               sys_root / "class/net/eth0")
    (fn / "msi_irqs").mkdir()
    for irq in BEFORE:
        (fn / "msi_irqs" / str(irq)).write_text("msix\n")
    return proc, sys_root, fn


def reset_vectors(proc, fn):
    """The driver frees its vectors and requests them again under new numbers."""
    (proc / "interrupts").write_text(interrupts_text(AFTER, OTHER))
    for irq in BEFORE:
        if irq not in AFTER:
            (fn / "msi_irqs" / str(irq)).unlink()
    for irq, name in OTHER.items():
        for entry in (proc / "irq" / str(irq)).iterdir():
            if entry.is_dir():
                entry.rmdir()
        make_irq_dir(proc, irq, name, "0-1")
    for irq, (_, name) in AFTER.items():
        if irq not in BEFORE:
            make_irq_dir(proc, irq, name, "0-1")     # default_smp_affinity
            (fn / "msi_irqs" / str(irq)).write_text("msix\n")


def tuner(guest, tmp_path):
    proc, sys_root, _ = guest
    config, errors = ch.HousekeepingConfig.from_options(
        {"irq_affinity": "housekeeping", "housekeeping_cpus": "0"})
    assert not errors
    return ch.HousekeepingTuner(
        config, ledger=Ledger("hk", str(tmp_path / "run")), kfs=KernelFs(proc, sys_root),
        channels=object(), ifindex=lambda name: 2 if name == "eth0" else None,
        ifname=lambda index: "eth0" if index == 2 else None, napi=())


def test_vectors_requested_again_under_new_numbers_inherit_their_originals(guest, tmp_path):
    proc, _, fn = guest
    t = tuner(guest, tmp_path)
    t.apply("eth0")
    assert [affinity(proc, irq) for irq in (38, 39, 40, 41)] == ["0"] * 4
    assert affinity(proc, 37) == "0-1"          # the config vector is no queue

    reset_vectors(proc, fn)
    t.apply_new("eth0")                         # the watcher saw the reset
    assert [affinity(proc, irq) for irq in (44, 45, 46, 47)] == ["0"] * 4
    assert all(c.ok for c in t.verify("eth0"))

    t.restore_all()
    # Each vector gets the affinity it had before the profile, under its new number ...
    assert [affinity(proc, irq) for irq in (44, 45, 46, 47)] == ["1", "0", "0", "1"]
    # ... and the disk that took the old numbers is left alone.
    assert [affinity(proc, irq) for irq in (38, 39, 40, 41)] == ["0-1"] * 4


def test_a_daemon_restarted_after_the_reset_restores_the_originals(guest, tmp_path):
    """The ledger on disk keys vectors by name too: a new daemon (kill -9,
    restart) that applies after the reset does not take the driver default
    for an original."""
    proc, _, fn = guest
    tuner(guest, tmp_path).apply("eth0")
    reset_vectors(proc, fn)
    second = tuner(guest, tmp_path)
    second.apply("eth0")
    second.restore_all()
    assert [affinity(proc, irq) for irq in (44, 45, 46, 47)] == ["1", "0", "0", "1"]


def test_vector_keys_are_names_told_apart_by_order():
    keys = ledger.vector_keys([(30, "eth3"), (31, "eth3"), (29, "mlx5_comp0@pci:0000:08:00.0"),
                        (32, "")])
    assert keys == {29: "mlx5_comp0@pci:0000:08:00.0", 30: "eth3", 31: "eth3#2", 32: "irq 32"}


def test_a_ledger_keyed_by_irq_number_is_read_by_vector_name(guest, tmp_path):
    """A ledger saved before the upgrade ({"38": "1"}) still restores: each
    number takes the vector name it carries now."""
    proc, _, _ = guest
    for irq in (38, 39, 40, 41):
        (proc / "irq" / str(irq) / "smp_affinity_list").write_text("0\n")
    Ledger("hk", str(tmp_path / "run")).save(
        {"eth0": {"ifindex": 2, "channels": {},
                  "irqs": {"38": "1", "39": "0", "40": "0", "41": "1", "99": "1"}}})
    t = tuner(guest, tmp_path)
    assert set(t.originals["eth0"]["irqs"]) == set(QUEUES)
    t.restore_all()
    assert [affinity(proc, irq) for irq in (38, 39, 40, 41)] == ["1", "0", "0", "1"]
