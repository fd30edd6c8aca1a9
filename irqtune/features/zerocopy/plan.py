# SPDX-License-Identifier: GPL-2.0-or-later
"""Zero-copy receive: what a driver's refusal means, how many queues a
device has and which it reserves, the RSS spread, flow rule records."""

import errno

from ...kernel.errors import NOT_PERMITTED, UnsupportedError, describe_os_error
from ...kernel.netlink.ethtool import channel_count
from ...kernel.netlink.ethtool_ntuple import FlowRule
from ...kernel.values import format_index_list

class Refused(Exception):
    """One setting of one device could not be made; `unsupported` when the
    driver lacks it altogether rather than rejecting the value."""

    def __init__(self, reason, unsupported=False):
        super().__init__(reason)
        self.unsupported = unsupported


LABELS = {"rss": "an RSS indirection table", "flow rules": "ntuple flow rules",
          "tcp-data-split": "header split (tcp-data-split)"}


def refusal(feature, err):
    """A Refused naming what the kernel or driver said (err: an OSError)."""
    feature = LABELS.get(feature, feature)
    meanings = {
        **NOT_PERMITTED, errno.EOPNOTSUPP: "the driver does not support %s (%%s)" % feature,
        errno.EINVAL: "the driver refused %s (%%s)" % feature,
        errno.EBUSY: "the device is busy (%s): a queue in use by a memory provider or AF_XDP"}
    if "queue leasing" in str(getattr(err, "extack", "") or ""):
        # net/ethtool/channels.c: a channel change would drop a leased queue
        meanings[errno.EINVAL] = ("a leased rx queue is in the way (%s): the kernel ends a lease "
                                  "only with its netkit device")
    words = describe_os_error(err, meanings)
    if err.errno in meanings:
        return Refused(words, err.errno == errno.EOPNOTSUPP)
    return Refused("%s: %s" % (feature, words))


def rx_queue_count(channels):
    return channel_count(channels, "combined-count") + channel_count(channels, "rx-count")


def channel_kind(channels):
    """combined where the driver has combined channels, else rx."""
    if channel_count(channels, "combined-max") > 0:
        return "combined"
    if channel_count(channels, "rx-max") > 0:
        return "rx"
    raise UnsupportedError("the driver reports no rx or combined channels")


def reserve(count, queues):
    """The last `queues` of `count` rx queues, leaving at least one for
    regular traffic; Refused when the device has too few."""
    if count < queues + 1:
        raise Refused("reserving %d rx queues needs at least %d and the device has %d "
                      "(its channel maximum)" % (queues, queues + 1, count))
    return list(range(count - queues, count))


def spread(size, queues):
    """An indirection table of `size` entries spread evenly over 0..queues-1
    (what `ethtool -X DEV equal N` writes)."""
    return [i % queues for i in range(size)]


def rule_fields(entry):
    return {k: entry.get(k) for k in ("flow", "dst_port", "queue", "dst_ip")}


def rule_key(fields):
    return tuple(sorted(rule_fields(fields).items()))


def as_rule(entry):
    return FlowRule(**rule_fields(entry))


def ranges(indexes):
    return format_index_list(indexes) if indexes else "none"
