# SPDX-License-Identifier: GPL-2.0-or-later
"""Client for the ethtool generic netlink family: channel counts.

Messages follow include/uapi/linux/ethtool_netlink.h (the kernel's
ethtool.yaml spec).  pyroute2 names attributes by their position in
nla_map, so the tables keep the kernel's order.  Only what the tuners need
is described: the request header and the channels message.
"""

from pyroute2.netlink import NLA_F_NESTED, genlmsg, nla

from .genl import GenlFamily

CMD_CHANNELS_GET = 17
CMD_CHANNELS_SET = 18

# ETHTOOL_FLAG_COMPACT_BITSETS | ETHTOOL_FLAG_OMIT_REPLY would go in the
# header flags; channels need neither.
CHANNEL_KINDS = ("rx", "tx", "other", "combined")


class ethtool_header(nla):
    nla_flags = NLA_F_NESTED
    nla_map = (
        ("ETHTOOL_A_HEADER_UNSPEC", "none"),
        ("ETHTOOL_A_HEADER_DEV_INDEX", "uint32"),
        ("ETHTOOL_A_HEADER_DEV_NAME", "asciiz"),
        ("ETHTOOL_A_HEADER_FLAGS", "uint32"),
    )


class channels_msg(genlmsg):
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

    ethtool_header = ethtool_header


def _header(ifindex):
    return {"attrs": [["ETHTOOL_A_HEADER_DEV_INDEX", ifindex]]}


class ChannelsFamily(GenlFamily):
    """CHANNELS_GET / CHANNELS_SET of the ethtool family."""

    family = "ethtool"
    message = channels_msg
    set_commands = frozenset({CMD_CHANNELS_SET})

    def channels(self, ifindex):
        """{"rx-max": n, ..., "combined-count": n}; attributes the driver
        does not report are absent (kernels omit a kind whose maximum is 0
        only for some drivers, so callers treat missing as 0)."""
        reply = self.do("reading channels of ifindex %d" % ifindex, CMD_CHANNELS_GET,
                        header=_header(ifindex))
        reply = dict(reply or {})
        reply.pop("header", None)
        return reply

    def set_channels(self, ifindex, **counts):
        """counts keyed rx/tx/other/combined; only those given are sent."""
        attrs = {"header": _header(ifindex)}
        for kind, value in counts.items():
            if kind not in CHANNEL_KINDS:
                raise ValueError("unknown channel kind %r" % kind)
            attrs[kind + "_count"] = int(value)
        self.do("setting channels of ifindex %d" % ifindex, CMD_CHANNELS_SET, **attrs)
