# SPDX-License-Identifier: GPL-2.0-or-later
"""Channel counts: the plan for a device, and a driver's refusal in words."""

import errno

from ...kernel.errors import NOT_PERMITTED, UnsupportedError, describe_os_error
from ...kernel.netlink.ethtool import channel_count
from .config import HOUSEKEEPING


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
