# SPDX-License-Identifier: GPL-2.0-or-later
"""What the running kernel offers for NAPI tuning, read without side effects.

The netdev family's napi-set policy (CTRL_CMD_GETPOLICY) lists the
attributes it accepts and their ranges: that tells whether napi-set exists
(6.13), whether irq-suspend-timeout and per-NAPI threaded exist, and
whether threaded accepts busy-poll (6.19), without touching any NAPI.

Build options that no netlink policy shows are read from procfs
(KernelFeatures): busy polling (CONFIG_NET_RX_BUSY_POLL), without which IRQ
suspension, threaded busy polling and the busy-poll opt-in never act, and
PREEMPT_RT, which changes what the NAPI values mean (docs/tuning.md).
"""

import logging
import os
from dataclasses import dataclass, field

from .errors import UnsupportedError
from .kfs import KFS
from .napi_attrs import BY_NAME, IRQ_SUSPEND_TIMEOUT, THREADED, THREADED_BUSY_POLL_SINCE
from .netdevs import net_namespace
from .netlink.genl import NetlinkRequestError, attr_table
from .netlink.netdev import CMD_NAPI_GET, CMD_NAPI_SET, CMD_QUEUE_CREATE, NapiFamily, napi_msg
from .netlink.policy import ControlFamily

log = logging.getLogger(__name__)


# What a kernel without CONFIG_NET_RX_BUSY_POLL lacks, in one line.
NO_BUSY_POLL = ("the kernel has no busy polling (CONFIG_NET_RX_BUSY_POLL is not set: "
                "no /proc/sys/net/core/busy_poll)")


@dataclass(frozen=True)
class KernelFeatures:
    """Kernel build options read from procfs.

    busy_poll is None when this process cannot tell: /proc/sys/net/core
    shows the global busy_poll sysctl only in the initial network
    namespace, so its absence elsewhere proves nothing.
    """

    busy_poll: object = None        # True, False or None (cannot tell)
    preempt_rt: bool = False

    def lacking(self):
        """One line per missing feature that some irqtune option needs."""
        if self.busy_poll is False:
            return [NO_BUSY_POLL + ": IRQ suspension (%s), %s=busy-poll and the busy_poll_optin "
                    "plugin have no effect" % (IRQ_SUSPEND_TIMEOUT.option, THREADED.option)]
        return []

    def describe(self):
        poll = {True: "yes", False: "no", None: "cannot tell (not in the initial network namespace)"}
        return "PREEMPT_RT: %s, busy polling: %s" % ("yes" if self.preempt_rt else "no",
                                                     poll[self.busy_poll])


def detect_kernel_features(kfs=KFS):
    """KernelFeatures of the running kernel (no side effects)."""
    version = kfs.read_optional(kfs.proc_path("sys", "kernel", "version")) or ""
    busy_poll = True
    if not os.path.exists(kfs.proc_path("sys", "net", "core", "busy_poll")):
        # absent proves nothing outside PID 1's network namespace (or
        # when that cannot be read, e.g. without root)
        own = net_namespace("self", kfs)
        busy_poll = False if own is not None and own == net_namespace(1, kfs) else None
    return KernelFeatures(busy_poll=busy_poll, preempt_rt="PREEMPT_RT" in version.split())


@dataclass(frozen=True)
class NapiCapabilities:
    netdev_family: bool = False
    napi_get: bool = False
    napi_set: bool = False
    # attributes napi-set accepts, by name (irqtune.kernel.napi_attrs)
    settable: frozenset = field(default_factory=frozenset)
    threaded_busy_poll: bool = False
    kernel: KernelFeatures = field(default_factory=KernelFeatures)

    def missing(self, attr, value=None):
        """Why attr (set to value) cannot be set per NAPI, or cannot act,
        or None when it can."""
        why = self._missing(attr)
        suspends, busy_polls = attr == IRQ_SUSPEND_TIMEOUT.name, attr == THREADED.name and value == 2
        if why is not None and suspends:
            return "IRQ suspension needs Linux >= %s (napi-set with %s): %s" % (
                IRQ_SUSPEND_TIMEOUT.since, attr, why)
        if why is None and busy_polls and not self.threaded_busy_poll:
            return "the kernel's %s NAPI has no busy-poll mode (Linux >= %s)" % (
                attr, THREADED_BUSY_POLL_SINCE)
        if why is None and self.kernel.busy_poll is False and (suspends and value or busy_polls):
            return "%s acts only through busy polling, and %s" % (
                "IRQ suspension" if suspends else attr + " busy-poll", NO_BUSY_POLL)
        return why

    def lacking(self):
        """One line per missing kernel feature, naming what it costs."""
        lines = []
        if not self.netdev_family or not self.napi_set:
            lines.append(self._missing(None) + ": NAPI values only device-wide through sysfs, "
                         "no IRQ suspension")
        return lines + self.kernel.lacking()

    def _missing(self, attr):
        if not self.netdev_family:
            return "the kernel has no netdev generic netlink family (Linux >= 6.8)"
        if not self.napi_set:
            return "the kernel has no napi-set operation (Linux >= 6.13)"
        if attr not in self.settable:
            since = BY_NAME[attr].since if attr in BY_NAME else "?"
            return "the kernel's napi-set does not accept %s (Linux >= %s)" % (attr, since)
        return None


def detect_napi_capabilities(kfs=KFS):
    kernel = detect_kernel_features(kfs)
    if not _family_exists():
        return NapiCapabilities(kernel=kernel)
    with ControlFamily() as ctrl:
        get_policy = _op_policy(ctrl, CMD_NAPI_GET)
        set_policy = _op_policy(ctrl, CMD_NAPI_SET)
    numbers = {name: number for name, (number, _) in attr_table(napi_msg).items()}
    names = {number: name for name, number in numbers.items()}
    set_policy = set_policy or {}
    settable = frozenset(names[a] for a in set_policy if a in names and names[a] != "id")
    return NapiCapabilities(netdev_family=True,
                            napi_get=get_policy is not None,
                            napi_set=bool(set_policy),
                            settable=settable,
                            threaded_busy_poll=(set_policy.get(numbers[THREADED.name], {})
                                                .get("max") or 0) >= 2,
                            kernel=kernel)


# What a kernel without queue leases lacks, in one line.
NO_QUEUE_CREATE = ("the kernel has no netdev queue-create operation (queue leases to netkit "
                   "devices need Linux >= 7.1)")


def queue_leases_missing():
    """None when the kernel can lease rx queues (the netdev family lists
    queue-create), else why not, in one line."""
    if not _family_exists():
        return "the kernel has no netdev generic netlink family (Linux >= 6.8)"
    with ControlFamily() as ctrl:
        return None if _op_policy(ctrl, CMD_QUEUE_CREATE) is not None else NO_QUEUE_CREATE


def _op_policy(ctrl, op):
    try:
        return ctrl.op_policy("netdev", op)
    except NetlinkRequestError as err:
        log.debug("no policy for netdev op %d: %s", op, err)
        return None


def _family_exists():
    try:
        NapiFamily().close()
        return True
    except UnsupportedError:
        return False
