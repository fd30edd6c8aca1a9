# SPDX-License-Identifier: GPL-2.0-or-later
"""What the running kernel offers for NAPI tuning, read without side effects.

The netdev family's napi-set policy (CTRL_CMD_GETPOLICY) lists the
attributes it accepts and their ranges: that tells whether napi-set exists
(6.13), whether irq-suspend-timeout and per-NAPI threaded exist, and
whether threaded accepts busy-poll (6.19), without touching any NAPI.
"""

import logging
from dataclasses import dataclass, field

from .errors import UnsupportedError
from .names import attr_of_nla
from .netlink.genl import NetlinkRequestError
from .netlink.netdev import CMD_NAPI_GET, CMD_NAPI_SET, NapiFamily, napi_msg
from .netlink.policy import ControlFamily

log = logging.getLogger(__name__)


def _attr_numbers():
    names = [name for name, _ in napi_msg.nla_map]
    prefix = napi_msg.nla_prefix
    return {i: attr_of_nla(prefix, n) for i, n in enumerate(names)}


@dataclass(frozen=True)
class NapiCapabilities:
    netdev_family: bool = False
    napi_get: bool = False
    napi_set: bool = False
    # attributes napi-set accepts, by name ("defer-hard-irqs", ...)
    settable: frozenset = field(default_factory=frozenset)
    threaded_busy_poll: bool = False

    def missing(self, attr, value=None):
        """Why attr (set to value) cannot be set per NAPI, or None when it
        can; the kernel versions are named here only."""
        why = self._missing(attr)
        if why is not None and attr == "irq-suspend-timeout":
            return "IRQ suspension needs Linux >= 6.13 (napi-set with irq-suspend-timeout): " + why
        if why is None and attr == "threaded" and value == 2 and not self.threaded_busy_poll:
            return "the kernel's threaded NAPI has no busy-poll mode (Linux >= 6.19)"
        return why

    def _missing(self, attr):
        if not self.netdev_family:
            return "the kernel has no netdev generic netlink family (Linux >= 6.8)"
        if not self.napi_set:
            return "the kernel has no napi-set operation (Linux >= 6.13)"
        if attr not in self.settable:
            since = {"irq-suspend-timeout": "6.13", "threaded": "6.17"}.get(attr, "?")
            return "the kernel's napi-set does not accept %s (Linux >= %s)" % (attr, since)
        return None


def detect_napi_capabilities():
    if not _family_exists():
        return NapiCapabilities()
    with ControlFamily() as ctrl:
        get_policy = _op_policy(ctrl, CMD_NAPI_GET)
        set_policy = _op_policy(ctrl, CMD_NAPI_SET)
    names = _attr_numbers()
    set_policy = set_policy or {}
    settable = frozenset(names[a] for a in set_policy if a in names and names[a] != "id")
    return NapiCapabilities(netdev_family=True,
                            napi_get=get_policy is not None,
                            napi_set=bool(set_policy),
                            settable=settable,
                            threaded_busy_poll=(set_policy.get(8, {}).get("max") or 0) >= 2)


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
