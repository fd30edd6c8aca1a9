# SPDX-License-Identifier: GPL-2.0-or-later
"""Channel counts of a device: planned, set, verified and restored through
the ethtool netlink family (or a backend the caller lends), and a driver's
refusal in words."""

import errno
import logging

from ...kernel.errors import (NOT_PERMITTED, NetlinkRequestError, UnsupportedError,
                              describe_os_error)
from ...kernel.netlink.ethtool import change_channels, channel_count
from ...shared.tuner import Check
from .config import HOUSEKEEPING

log = logging.getLogger(__name__)


def plan_channels(current, wanted, housekeeping_count):
    """Target counts {kind: n} for a device whose channels are `current`.

    Combined channels where the driver has them (unless it runs dedicated
    rx/tx channels right now), else rx and tx.  'housekeeping' means
    min(device maximum, housekeeping CPUs) per kind; a number is taken as
    given (a count above the maximum is the driver's to refuse).
    Raises UnsupportedError when the driver reports no channels at all.
    """
    def n(key):
        return channel_count(current, key)

    def target(kind):
        if wanted == HOUSEKEEPING:
            return max(1, min(n(kind + "-max"), housekeeping_count))
        return wanted

    dedicated = n("rx-count") > 0 or n("tx-count") > 0
    if n("combined-max") > 0 and (n("combined-count") > 0 or not dedicated):
        return {"combined": target("combined")}
    kinds = [k for k in ("rx", "tx") if n(k + "-max") > 0]
    if not kinds:
        raise UnsupportedError("the driver reports no rx, tx or combined channels")
    return {k: target(k) for k in kinds}


def refusal_reason(err):
    """A driver's or the kernel's no (an OSError), in words."""
    return describe_os_error(err, {
        **NOT_PERMITTED, errno.EOPNOTSUPP: "the driver cannot report or change channels (%s)",
        errno.EBUSY: "the device is busy (%s): queues in use by AF_XDP, devmem or an "
                     "RSS context",
        errno.EINVAL: "refused (%s)"})


class ChannelCounts:
    """wanted: HOUSEKEEPING or a count; family(): a context manager with
    channels(ifindex) and set_channels(ifindex, **counts)."""

    def __init__(self, wanted, housekeeping_count, family, refusals):
        self.wanted = wanted
        self.housekeeping_count = housekeeping_count
        self.family = family
        self.refusals = refusals
        self.targets = {}       # ifname -> planned channel counts

    def apply(self, ifname, ifindex, saved, save):
        """Record the originals (save() puts them on disk), then set."""
        try:
            with self.family() as fam:
                current = fam.channels(ifindex)
                target = plan_channels(current, self.wanted, self.housekeeping_count)
                self.targets[ifname] = target
                for kind in target:
                    saved["channels"].setdefault(kind, channel_count(current, kind + "-count"))
                save()
                changes = change_channels(fam, ifindex, target, current)
        except NetlinkRequestError as err:
            self.refusals.add(ifname, "channels", refusal_reason(err))
            return "channels refused"
        except UnsupportedError as err:
            self.refusals.add(ifname, "channels", str(err))
            return "no channels"
        self.refusals.resolve(ifname, "channels")
        text = ", ".join("%s %d" % kv for kv in sorted(target.items()))
        if changes:
            log.info("%s: channels set to %s (were %s)", ifname, text,
                     ", ".join("%s %d" % (k, channel_count(current, k + "-count"))
                               for k in sorted(changes)))
        return "channels " + text

    def verify(self, ifname, ifindex):
        try:
            with self.family() as fam:
                current = fam.channels(ifindex)
            target = plan_channels(current, self.wanted, self.housekeeping_count)
        except (NetlinkRequestError, UnsupportedError) as err:
            return [Check("channels", None, self.wanted, False, refusal_reason(err))]
        problems = self.refusals.of(ifname)
        out = []
        for kind, want in sorted(target.items()):
            have = channel_count(current, kind + "-count")
            out.append(Check("channels %s" % kind, have, want, have == want,
                             problems.get("channels", "") if have != want else ""))
        return out

    def restore(self, ifname, ifindex, counts):
        try:
            with self.family() as fam:
                changes = change_channels(fam, ifindex, counts)
            if changes:
                log.info("%s: channels restored to %s", ifname,
                         ", ".join("%s %d" % kv for kv in sorted(changes.items())))
        except NetlinkRequestError as err:
            log.error("%s: cannot restore channels %s: %s", ifname,
                      ", ".join("%s %d" % kv for kv in sorted(counts.items())),
                      refusal_reason(err))
