# SPDX-License-Identifier: GPL-2.0-or-later
"""ethtool netlink requests for receive-side NIC preparation: rings
(header split, hds-thresh), features (rx-ntuple-filter) and the RSS
indirection table, next to the channel counts of ChannelsFamily.
The messages are declared in ethtool.py.
"""

import struct

from .ethtool import (ETHTOOL_FLAG_OMIT_REPLY, ChannelsFamily, features_msg, header,
                      notification_msg, rings_msg, rss_msg)
from .genl import NETLINK_GENERIC, decode, netlink_messages, open_socket

CMD_FEATURES_GET = 11
CMD_FEATURES_SET = 12
CMD_RINGS_GET = 15
CMD_RINGS_SET = 16
CMD_RSS_GET = 38
CMD_RSS_SET = 48
# Kernel-to-user message numbers (ETHTOOL_MSG_*_NTF) on the monitor group.
NTF_RINGS = 17

# ETHTOOL_TCP_DATA_SPLIT_*: 0 is "unknown" in a reply and "auto" in a request.
TCP_DATA_SPLIT = {"auto": 0, "off": 1, "on": 2}
TCP_DATA_SPLIT_NAMES = {v: k for k, v in TCP_DATA_SPLIT.items()}


def bitset_names(bitset):
    """The names of the set bits of a verbose bitset: every listed bit
    when it has no mask, else those with the VALUE flag."""
    nomask = bool(bitset.get_attr("ETHTOOL_A_BITSET_NOMASK"))
    bits = bitset.get_attr("ETHTOOL_A_BITSET_BITS")
    return {bit.get_attr("ETHTOOL_A_BITSET_BIT_NAME")
            for bit in (bits.get_attrs("ETHTOOL_A_BITSET_BITS_BIT") if bits else ())
            if nomask or bit.get_attr("ETHTOOL_A_BITSET_BIT_VALUE")} - {None, ""}


def feature_changes(changes):
    """A verbose bitset with a mask: only the named features change.

    {"rx-ntuple-filter": True} turns it on; False turns it off (a listed
    bit without the VALUE flag is a cleared bit of the mask).
    """
    bits = []
    for name, on in sorted(changes.items()):
        bit = [["ETHTOOL_A_BITSET_BIT_NAME", name]]
        if on:
            bit.append(["ETHTOOL_A_BITSET_BIT_VALUE", True])
        bits.append(["ETHTOOL_A_BITSET_BITS_BIT", {"attrs": bit}])
    return {"attrs": [["ETHTOOL_A_BITSET_BITS", {"attrs": bits}]]}


def rss_values(out):
    """RSS attributes with the indirection table as [queue, ...]."""
    if "indir" in out:
        out["indir"] = list(struct.unpack("=%dI" % (len(out["indir"]) // 4), out["indir"]))
    return out


class RxConfigFamily(ChannelsFamily):
    """Rings, features and RSS of the ethtool family (and its channels)."""

    messages = {CMD_RINGS_GET: rings_msg, CMD_RINGS_SET: rings_msg,
                CMD_FEATURES_GET: features_msg, CMD_FEATURES_SET: features_msg,
                CMD_RSS_GET: rss_msg, CMD_RSS_SET: rss_msg}
    set_commands = ChannelsFamily.set_commands | {CMD_RINGS_SET, CMD_FEATURES_SET,
                                                  CMD_RSS_SET}

    def rings(self, ifindex):
        """{"rx": 512, "tcp-data-split": 2, "hds-thresh": 0, ...}; absent
        attributes are absent (a driver without header split sends none)."""
        return self._get("rings", CMD_RINGS_GET, ifindex)

    def set_rings(self, ifindex, **values):
        """values keyed as in rings() ("tcp-data-split", "hds-thresh", ...).

        Returns whether the kernel changed its configuration: it sends a
        RINGS_NTF to the monitor group only then.  That is how a caller
        tells "header split on" from "auto, which the driver reports as
        on" - a reply cannot (rings_prepare_data lets the driver
        overwrite the configured value with its current state).
        """
        with _Monitor(self.groups.get("monitor")) as monitor:
            self.do("setting rings (%s) of ifindex %d"
                    % (", ".join("%s %s" % kv for kv in sorted(values.items())), ifindex),
                    CMD_RINGS_SET, header=header(ifindex, ETHTOOL_FLAG_OMIT_REPLY), **values)
            return monitor.saw(NTF_RINGS, ifindex)

    def features(self, ifindex):
        """{"hw": {names}, "wanted": {...}, "active": {...}, "nochange": {...}}."""
        return {name: bitset_names(bitset)
                for name, bitset in self._get("features", CMD_FEATURES_GET, ifindex).items()}

    def set_features(self, ifindex, changes):
        """{"rx-ntuple-filter": True}; the kernel silently keeps features
        the driver cannot change, so callers read back."""
        self.do("setting features (%s) of ifindex %d"
                % (", ".join("%s %s" % (k, "on" if v else "off")
                             for k, v in sorted(changes.items())), ifindex),
                CMD_FEATURES_SET, header=header(ifindex, ETHTOOL_FLAG_OMIT_REPLY),
                wanted=feature_changes(changes))

    def rss(self, ifindex):
        """The main RSS context: {"indir": [...], "hfunc": n, ...}."""
        return rss_values(self._get("RSS", CMD_RSS_GET, ifindex))

    def set_rss_indir(self, ifindex, table):
        """Write the indirection table ([] restores the driver's default
        spread and clears the device's user-configured mark)."""
        self.do("setting the RSS indirection table of ifindex %d" % ifindex, CMD_RSS_SET,
                header=header(ifindex), indir=struct.pack("=%dI" % len(table), *table))


class _Monitor:
    """A second socket on the ethtool monitor group, open around one set.

    The kernel broadcasts a set's notification before it acks the set, so
    once the ack is in, the notification is already queued here.
    """

    def __init__(self, group):
        self.group = group
        self.sock = None

    def __enter__(self):
        if self.group is not None:
            self.sock = open_socket(NETLINK_GENERIC, self.group)
            self.sock.setblocking(False)
        return self

    def __exit__(self, *exc):
        if self.sock is not None:
            self.sock.close()

    def saw(self, ntf_cmd, ifindex):
        """True/False; None when the family has no monitor group."""
        if self.sock is None:
            return None
        seen = False
        while True:
            try:
                data = self.sock.recv(1 << 16)
            except BlockingIOError:
                return seen
            for _type, _flags, _seq, msg in netlink_messages(data):
                if len(msg) > 16 and msg[16] == ntf_cmd:
                    head = decode(notification_msg, msg).get("header")
                    seen = seen or (head is not None and
                                    head.get_attr("ETHTOOL_A_HEADER_DEV_INDEX") == ifindex)
