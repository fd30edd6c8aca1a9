# SPDX-License-Identifier: GPL-2.0-or-later
"""The ethtool generic netlink family: its messages, and the channel counts.

Messages follow Documentation/netlink/specs/ethtool.yaml of Linux 7.2
(include/uapi/linux/ethtool_netlink_generated.h); pyroute2 names attributes
by their position in nla_map, so the tables keep the kernel's order.  Only
what the tuners use is described: the request header, verbose bitsets,
channels, rings, features and RSS (ethtool_rx.py uses the last three).
"""

from pyroute2.netlink import NLA_F_NESTED, genlmsg, nla

from .genl import GenlFamily

CMD_CHANNELS_GET = 17
CMD_CHANNELS_SET = 18

CHANNEL_KINDS = ("rx", "tx", "other", "combined")
ETHTOOL_FLAG_OMIT_REPLY = 1 << 1


class ethtool_header(nla):
    nla_flags = NLA_F_NESTED
    nla_map = (
        ("ETHTOOL_A_HEADER_UNSPEC", "none"),
        ("ETHTOOL_A_HEADER_DEV_INDEX", "uint32"),
        ("ETHTOOL_A_HEADER_DEV_NAME", "asciiz"),
        ("ETHTOOL_A_HEADER_FLAGS", "uint32"),
    )


class ethtool_bitset(nla):
    """A bitset; asked for and sent in its verbose form (bit names), so no
    string set has to be fetched to know which bit is rx-ntuple-filter."""

    nla_flags = NLA_F_NESTED
    nla_map = (
        ("ETHTOOL_A_BITSET_UNSPEC", "none"),
        ("ETHTOOL_A_BITSET_NOMASK", "flag"),
        ("ETHTOOL_A_BITSET_SIZE", "uint32"),
        ("ETHTOOL_A_BITSET_BITS", "bits"),
        ("ETHTOOL_A_BITSET_VALUE", "cdata"),
        ("ETHTOOL_A_BITSET_MASK", "cdata"),
    )

    class bits(nla):
        nla_flags = NLA_F_NESTED
        nla_map = (
            ("ETHTOOL_A_BITSET_BITS_UNSPEC", "none"),
            ("ETHTOOL_A_BITSET_BITS_BIT", "bit"),
        )

        class bit(nla):
            nla_flags = NLA_F_NESTED
            nla_map = (
                ("ETHTOOL_A_BITSET_BIT_UNSPEC", "none"),
                ("ETHTOOL_A_BITSET_BIT_INDEX", "uint32"),
                ("ETHTOOL_A_BITSET_BIT_NAME", "asciiz"),
                ("ETHTOOL_A_BITSET_BIT_VALUE", "flag"),
            )


class ethtool_msg(genlmsg):
    """Every ethtool message starts with the header (attribute 1)."""

    ethtool_header = ethtool_header
    ethtool_bitset = ethtool_bitset


class notification_msg(ethtool_msg):
    """Only the header of a notification: which device changed."""

    nla_prefix = "ETHTOOL_A_"
    nla_map = (
        ("ETHTOOL_A_UNSPEC", "none"),
        ("ETHTOOL_A_HEADER", "ethtool_header"),
    )


class channels_msg(ethtool_msg):
    nla_prefix = "ETHTOOL_A_CHANNELS_"
    nla_map = (
        ("ETHTOOL_A_CHANNELS_UNSPEC", "none"),
        ("ETHTOOL_A_CHANNELS_HEADER", "ethtool_header"),
        ("ETHTOOL_A_CHANNELS_RX_MAX", "uint32"),
        ("ETHTOOL_A_CHANNELS_TX_MAX", "uint32"),
        ("ETHTOOL_A_CHANNELS_OTHER_MAX", "uint32"),
        ("ETHTOOL_A_CHANNELS_COMBINED_MAX", "uint32"),
        ("ETHTOOL_A_CHANNELS_RX_COUNT", "uint32"),
        ("ETHTOOL_A_CHANNELS_TX_COUNT", "uint32"),
        ("ETHTOOL_A_CHANNELS_OTHER_COUNT", "uint32"),
        ("ETHTOOL_A_CHANNELS_COMBINED_COUNT", "uint32"),
    )


class rings_msg(ethtool_msg):
    nla_prefix = "ETHTOOL_A_RINGS_"
    nla_map = (
        ("ETHTOOL_A_RINGS_UNSPEC", "none"),
        ("ETHTOOL_A_RINGS_HEADER", "ethtool_header"),
        ("ETHTOOL_A_RINGS_RX_MAX", "uint32"),
        ("ETHTOOL_A_RINGS_RX_MINI_MAX", "uint32"),
        ("ETHTOOL_A_RINGS_RX_JUMBO_MAX", "uint32"),
        ("ETHTOOL_A_RINGS_TX_MAX", "uint32"),
        ("ETHTOOL_A_RINGS_RX", "uint32"),
        ("ETHTOOL_A_RINGS_RX_MINI", "uint32"),
        ("ETHTOOL_A_RINGS_RX_JUMBO", "uint32"),
        ("ETHTOOL_A_RINGS_TX", "uint32"),
        ("ETHTOOL_A_RINGS_RX_BUF_LEN", "uint32"),
        ("ETHTOOL_A_RINGS_TCP_DATA_SPLIT", "uint8"),
        ("ETHTOOL_A_RINGS_CQE_SIZE", "uint32"),
        ("ETHTOOL_A_RINGS_TX_PUSH", "uint8"),
        ("ETHTOOL_A_RINGS_RX_PUSH", "uint8"),
        ("ETHTOOL_A_RINGS_TX_PUSH_BUF_LEN", "uint32"),
        ("ETHTOOL_A_RINGS_TX_PUSH_BUF_LEN_MAX", "uint32"),
        ("ETHTOOL_A_RINGS_HDS_THRESH", "uint32"),
        ("ETHTOOL_A_RINGS_HDS_THRESH_MAX", "uint32"),
    )


class features_msg(ethtool_msg):
    nla_prefix = "ETHTOOL_A_FEATURES_"
    nla_map = (
        ("ETHTOOL_A_FEATURES_UNSPEC", "none"),
        ("ETHTOOL_A_FEATURES_HEADER", "ethtool_header"),
        ("ETHTOOL_A_FEATURES_HW", "ethtool_bitset"),
        ("ETHTOOL_A_FEATURES_WANTED", "ethtool_bitset"),
        ("ETHTOOL_A_FEATURES_ACTIVE", "ethtool_bitset"),
        ("ETHTOOL_A_FEATURES_NOCHANGE", "ethtool_bitset"),
    )


class rss_msg(ethtool_msg):
    nla_prefix = "ETHTOOL_A_RSS_"
    nla_map = (
        ("ETHTOOL_A_RSS_UNSPEC", "none"),
        ("ETHTOOL_A_RSS_HEADER", "ethtool_header"),
        ("ETHTOOL_A_RSS_CONTEXT", "uint32"),
        ("ETHTOOL_A_RSS_HFUNC", "uint32"),
        ("ETHTOOL_A_RSS_INDIR", "cdata"),        # u32 array
        ("ETHTOOL_A_RSS_HKEY", "cdata"),
        ("ETHTOOL_A_RSS_INPUT_XFRM", "uint32"),
    )


def header(ifindex, flags=0):
    """The request header nest for a device (ETHTOOL_FLAG_* in flags)."""
    attrs = [["ETHTOOL_A_HEADER_DEV_INDEX", ifindex]]
    if flags:
        attrs.append(["ETHTOOL_A_HEADER_FLAGS", flags])
    return {"attrs": attrs}


class ChannelsFamily(GenlFamily):
    """CHANNELS_GET / CHANNELS_SET of the ethtool family."""

    family = "ethtool"
    message = channels_msg
    set_commands = frozenset({CMD_CHANNELS_SET})

    def _get(self, what, cmd, ifindex):
        """A get request for one device: the reply's attributes but its header."""
        reply = dict(self.do("reading %s of ifindex %d" % (what, ifindex), cmd,
                             header=header(ifindex)) or {})
        reply.pop("header", None)
        return reply

    def channels(self, ifindex):
        """{"rx-max": n, ..., "combined-count": n}; attributes the driver
        does not report are absent (kernels omit a kind whose maximum is 0
        only for some drivers, so callers treat missing as 0)."""
        return self._get("channels", CMD_CHANNELS_GET, ifindex)

    def set_channels(self, ifindex, **counts):
        """counts keyed rx/tx/other/combined; only those given are sent."""
        attrs = {"header": header(ifindex)}
        for kind, value in counts.items():
            if kind not in CHANNEL_KINDS:
                raise ValueError("unknown channel kind %r" % kind)
            attrs[kind + "-count"] = int(value)
        self.do("setting channels of ifindex %d" % ifindex, CMD_CHANNELS_SET, **attrs)


def channel_count(channels, key):
    """One number of a channels reply ({"combined-count": 4, ...}; absent: 0)."""
    return int((channels or {}).get(key) or 0)


def change_channels(family, ifindex, counts, current=None):
    """Set the counts ({kind: n}) the device does not hold now (current: its
    channels reply, read when None) through family (a ChannelsFamily or a
    stand-in); returns those set."""
    current = family.channels(ifindex) if current is None else current
    changes = {k: v for k, v in counts.items() if channel_count(current, k + "-count") != v}
    if changes:
        family.set_channels(ifindex, **changes)
    return changes
