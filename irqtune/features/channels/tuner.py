# SPDX-License-Identifier: GPL-2.0-or-later
"""HousekeepingTuner: channel counts and queue IRQ affinity of devices, on
the tuner contract (irqtune.shared.tuner) with one ledger of originals."""

import logging
from contextlib import nullcontext

from ...kernel.cpus import housekeeping_cpus
from ...kernel.irqs import interrupt_names
from ...kernel.kfs import KFS
from ...kernel.netlink.ethtool import ChannelsFamily
from ...shared.ledger import take_device, vector_book
from ...shared.tuner import DeviceTuner, Refusals, on_kernel_name, verify_on_kernel_name
from .affinity import QueueAffinity
from .config import HOUSEKEEPING, HousekeepingConfig
from .counts import ChannelCounts

log = logging.getLogger(__name__)


class HousekeepingTuner(DeviceTuner):
    """Applies one HousekeepingConfig to devices and restores what was there.

    originals (the ledger): {ifname: {"ifindex": n, "channels": {"combined": 4},
        "irqs": {"virtio1-input.0": {"affinity": "0-3", "irq": 27}}}}
    (queue IRQs keyed by vector name: see QueueAffinity).

    channels: an object with channels(ifindex) and set_channels(ifindex,
    **counts) (default: the ethtool netlink family); napi: queue IRQs from
    napi-get, asked from the kernel when None (see irqs.nic_queue_irqs).
    """

    # IRQs come back with a driver reset, not between link events: check less often
    recheck_interval = 10.0

    def __init__(self, config, ledger=None, kfs=KFS, channels=None, ifindex=None, napi=None,
                 ifname=None):
        super().__init__(ledger, ifindex, ifname)
        self.config = config
        self.kfs = kfs
        self._channels = channels
        self._napi = napi
        self.housekeeping = housekeeping_cpus(
            list(config.housekeeping_cpus) if config.housekeeping_cpus else None, kfs)
        self.affinity = (tuple(self.housekeeping.cpus) if config.irq_affinity == HOUSEKEEPING
                         else config.irq_affinity)
        self.refusals = Refusals(log)
        self.counts = None if config.channels is None else \
            ChannelCounts(config.channels, len(self.housekeeping), self._family, self.refusals)
        self.irq_affinity = None if self.affinity is None else \
            QueueAffinity(self.affinity, kfs, napi, self.refusals)
        self.targets = self.counts.targets if self.counts else {}
        self.originals = self._load_state()
        log.info("%s", self.housekeeping.describe())

    def _family(self):
        """The channels backend the caller lent (used, never closed), else
        a socket on the ethtool family."""
        if self._channels is not None:
            return nullcontext(self._channels)
        return ChannelsFamily()

    def _from_ledger(self, originals):
        names = None
        for saved in originals.values():
            saved.setdefault("channels", {})
            book = saved.setdefault("irqs", {})
            if any(not isinstance(v, dict) for v in book.values()):
                # saved by a version that keyed IRQs by number
                names = interrupt_names(self.kfs) if names is None else names
                saved["irqs"] = vector_book(book, names)
        return originals

    def _books(self):
        return [self.targets, self.refusals.by_device]

    def _saved(self, ifname, ifindex):
        return self._originals_of(ifname, ifindex, channels={}, irqs={})

    @property
    def needs_watching(self):
        """Drivers re-create queue IRQs on resets; channel counts stay."""
        return self.affinity is not None

    def apply(self, *ifnames):
        """Channels, then queue IRQ affinity, per device; a one-line summary."""
        return "; ".join("%s: %s" % (name, self._apply_device(name)) for name in ifnames)

    def _apply_device(self, ifname):
        ifindex = self._ifindex(ifname)
        if ifindex is None:
            return "device gone"
        saved = self._saved(ifname, ifindex)
        done = []
        if self.irq_affinity:
            # Before the channel change: drivers re-spread IRQs when it happens.
            self.irq_affinity.record(ifname, saved, self._save_state)
        if self.counts:
            done.append(self.counts.apply(ifname, ifindex, saved, self._save_state))
        if self.irq_affinity:
            done.append(self.irq_affinity.apply(ifname, saved, self._save_state))
        self._save_state()
        return "; ".join(d for d in done if d)

    @on_kernel_name
    def apply_new(self, ifname):
        """Queue IRQs that appeared since the last apply (driver reset,
        re-allocated vectors): record their originals and make them affine.

        Known IRQs and channel counts are not rewritten here: a change to
        them is someone's deliberate act (ethtool -L, irqbalance) that verify
        reports; rewriting it would only start a tug of war.
        """
        if self.irq_affinity is None:
            return ""
        ifindex = self._ifindex(ifname)
        if ifindex is None:
            return ""
        saved = self._saved(ifname, ifindex)
        result = self.irq_affinity.apply(ifname, saved, self._save_state, only_new=True)
        self._save_state()
        return result

    @verify_on_kernel_name
    def verify(self, ifname):
        """[Check] of the channel counts and queue IRQ affinities of ifname."""
        ifindex = self._ifindex(ifname)
        if ifindex is None:
            return []
        checks = []
        if self.counts:
            checks.extend(self.counts.verify(ifname, ifindex))
        if self.irq_affinity:
            checks.extend(self.irq_affinity.verify(ifname))
        return checks

    @on_kernel_name
    def restore(self, ifname):
        """Channels first, then the saved affinities; forget ifname."""
        self._drop(ifname)
        saved, ifindex = take_device(self.originals, ifname, self._ifindex)
        if saved is not None:
            # Also what an earlier profile's daemon saved and this one's
            # configuration no longer names.
            if saved["channels"]:
                (self.counts or ChannelCounts(None, 0, self._family, self.refusals)).restore(
                    ifname, ifindex, saved["channels"])
            if saved["irqs"]:
                (self.irq_affinity or QueueAffinity((), self.kfs, self._napi,
                                                    self.refusals)).restore(ifname, saved["irqs"])
        self._save_state(before_change=False)


def build(options, env):
    """(HousekeepingTuner or None, [OptionError]) from the nic_housekeeping
    plugin's options.

    A bad value is reported and left out and the rest applies - except a
    bad housekeeping_cpus, which leaves no tuner at all: left out, it would
    mean the kernel's isolation or every online CPU, and
    channels=housekeeping and irq_affinity=housekeeping would spread queues
    and IRQs over the CPUs the profile means to keep quiet.
    """
    config, errors = HousekeepingConfig.from_options(options)
    if any(e.option == "housekeeping_cpus" for e in errors):
        return None, errors
    return HousekeepingTuner(config, env.ledger("nic_housekeeping-" + env.instance,
                                                kin="nic_housekeeping-"), env.kfs), errors
