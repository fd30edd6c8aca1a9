# SPDX-License-Identifier: GPL-2.0-or-later
"""A driver's ethtool channels and its queue IRQs' affinity, for the
housekeeping tuner (irqtune.features.channels) on fixture procfs/sysfs
(the roots fixture of tests/unit/features/conftest.py).

FakeDriver behaves like a driver: it keeps counts, checks maxima, can
refuse with a chosen errno, and - like virtio-net - re-spreads its queue
IRQs over all CPUs when the channel count changes, which is what makes the
order "read IRQ originals, then change channels" observable.
"""

import errno
import os

from irqtune.features import channels as ch
from irqtune.kernel.kfs import KernelFs
from irqtune.kernel.netlink.genl import NetlinkRequestError
from irqtune.shared.ledger import Ledger
from support.fakes.interrupts import QUEUE_IRQS

ORIGINAL_AFFINITY = {24: "0-3", 25: "0", 26: "1", 27: "2", 28: "3"}


class FakeDriver:
    def __init__(self, proc, combined=(4, 4), rx=(0, 0), tx=(0, 0), refuse=None):
        self.proc = proc
        self.max = {"combined": combined[0], "rx": rx[0], "tx": tx[0], "other": 0}
        self.count = {"combined": combined[1], "rx": rx[1], "tx": tx[1], "other": 0}
        self.refuse = refuse          # (errno, extack) for set_channels
        self.sets = []

    def channels(self, ifindex):
        out = {}
        for kind in ("rx", "tx", "other", "combined"):
            if self.max[kind]:
                out[kind + "-max"] = self.max[kind]
                out[kind + "-count"] = self.count[kind]
        return out

    def set_channels(self, ifindex, **counts):
        self.sets.append(counts)
        if self.refuse:
            raise NetlinkRequestError("setting channels", *self.refuse)
        for kind, n in counts.items():
            if n > self.max[kind]:
                raise NetlinkRequestError("setting channels", errno.EINVAL,
                                          "requested channel count exceeds maximum")
        self.count.update(counts)
        for irq in QUEUE_IRQS:      # the driver re-spreads its vectors
            write(self.proc, irq, "0-3")


def write(proc, irq, text):
    path = os.path.join(proc, "irq", str(irq), "smp_affinity_list")
    with open(path, "w") as f:
        f.write(text + "\n")


def affinity(proc, irq):
    with open(os.path.join(proc, "irq", str(irq), "smp_affinity_list")) as f:
        return f.read().strip()


def housekeeping_tuner(roots, driver, state=True, ifindex=7, names=None, **options):
    """names: {device name: ifindex} of every device (default: eth0 only)."""
    proc, sys_root, tmp = roots
    config, errors = ch.HousekeepingConfig.from_options(options)
    assert not errors
    names = {"eth0": ifindex} if names is None else names
    return ch.HousekeepingTuner(
        config, ledger=Ledger("hk", str(tmp / "run")) if state else None,
        kfs=KernelFs(proc, sys_root), channels=driver, ifindex=names.get,
        ifname=lambda index: {i: n for n, i in names.items()}.get(index), napi=())
