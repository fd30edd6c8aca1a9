# SPDX-License-Identifier: GPL-2.0-or-later
"""ethtool netlink messages for receive-side NIC preparation: rings
(header split, hds-thresh), features (rx-ntuple-filter) and the RSS
indirection table, next to the channel counts of ChannelsFamily.

Numbers follow Documentation/netlink/specs/ethtool.yaml of Linux 7.2
(include/uapi/linux/ethtool_netlink_generated.h).  These messages carry
nested bitsets and binary u32 arrays that pyroute2's nla classes describe
differently in 0.7 and 0.9, so they are encoded and decoded here with
struct; pyroute2's socket only resolves the family id.  Bitsets are asked for in their verbose form (bit names), so no
string set has to be fetched to know which bit is rx-ntuple-filter.
"""

import socket
import struct

from pyroute2.netlink import NLM_F_ACK, NLM_F_REQUEST, NLMSG_ERROR

from .ethtool import ChannelsFamily
from .genl import NETLINK_GENERIC, NetlinkRequestError, _ack, netlink_messages, parse_nlas

CMD_FEATURES_GET = 11
CMD_FEATURES_SET = 12
CMD_RINGS_GET = 15
CMD_RINGS_SET = 16
CMD_RSS_GET = 38
CMD_RSS_SET = 48
# Kernel-to-user message numbers (ETHTOOL_MSG_*_NTF) on the monitor group.
NTF_FEATURES = 13
NTF_RINGS = 17

GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_NAME = 2
CTRL_ATTR_MCAST_GROUPS = 7
CTRL_ATTR_MCAST_GRP_NAME, CTRL_ATTR_MCAST_GRP_ID = 1, 2

NLA_F_NESTED = 0x8000
ETHTOOL_FLAG_OMIT_REPLY = 1 << 1
HEADER_DEV_INDEX = 1
HEADER_FLAGS = 3

# ETHTOOL_A_RINGS_*: number -> (name, struct format)
RINGS_ATTRS = {
    2: ("rx-max", "I"), 3: ("rx-mini-max", "I"), 4: ("rx-jumbo-max", "I"),
    5: ("tx-max", "I"), 6: ("rx", "I"), 7: ("rx-mini", "I"), 8: ("rx-jumbo", "I"),
    9: ("tx", "I"), 10: ("rx-buf-len", "I"), 11: ("tcp-data-split", "B"),
    12: ("cqe-size", "I"), 13: ("tx-push", "B"), 14: ("rx-push", "B"),
    15: ("tx-push-buf-len", "I"), 16: ("tx-push-buf-len-max", "I"),
    17: ("hds-thresh", "I"), 18: ("hds-thresh-max", "I"),
}
RINGS_NUMBERS = {name: (num, fmt) for num, (name, fmt) in RINGS_ATTRS.items()}

# ETHTOOL_TCP_DATA_SPLIT_*: 0 is "unknown" in a reply and "auto" in a request.
TCP_DATA_SPLIT = {"auto": 0, "off": 1, "on": 2}
TCP_DATA_SPLIT_NAMES = {v: k for k, v in TCP_DATA_SPLIT.items()}

FEATURES_SETS = {2: "hw", 3: "wanted", 4: "active", 5: "nochange"}
FEATURES_WANTED = 3
BITSET_NOMASK, BITSET_BITS = 1, 3
BITSET_BITS_BIT = 1
BIT_INDEX, BIT_NAME, BIT_VALUE = 1, 2, 3

RSS_CONTEXT, RSS_HFUNC, RSS_INDIR, RSS_HKEY, RSS_INPUT_XFRM = 2, 3, 4, 5, 6


# -- encoding -------------------------------------------------------------

def nla(number, payload):
    raw = struct.pack("=HH", 4 + len(payload), number) + payload
    return raw + b"\0" * (-len(raw) % 4)


def nest(number, *children):
    return nla(number | NLA_F_NESTED, b"".join(children))


def u32(value):
    return struct.pack("=I", value)


def header(ifindex, flags=0):
    """ETHTOOL_A_*_HEADER (attribute 1 of every ethtool message)."""
    attrs = [nla(HEADER_DEV_INDEX, u32(ifindex))]
    if flags:
        attrs.append(nla(HEADER_FLAGS, u32(flags)))
    return nest(1, *attrs)


def encode_rings(values):
    """RINGS_SET attributes for {"tcp-data-split": 2, "hds-thresh": 0}."""
    out = b""
    for name, value in sorted(values.items()):
        if name not in RINGS_NUMBERS:
            raise ValueError("unknown rings attribute %r" % name)
        number, fmt = RINGS_NUMBERS[name]
        out += nla(number, struct.pack("=" + fmt, value))
    return out


def encode_feature_changes(changes):
    """A verbose bitset with a mask: only the named features change.

    {"rx-ntuple-filter": True} turns it on; False turns it off (a listed
    bit without the VALUE flag is a cleared bit of the mask).
    """
    bits = [nest(BITSET_BITS_BIT, nla(BIT_NAME, name.encode() + b"\0"),
                 *([nla(BIT_VALUE, b"")] if on else []))
            for name, on in sorted(changes.items())]
    return nest(FEATURES_WANTED, nest(BITSET_BITS, *bits))


def encode_indir(table):
    """RSS_SET indirection table; an empty table asks for the driver default."""
    return nla(RSS_INDIR, struct.pack("=%dI" % len(table), *table))


# -- decoding -------------------------------------------------------------

def _uint(payload):
    return int.from_bytes(payload, "little" if struct.pack("=H", 1)[0] else "big")


def decode_rings(payload):
    """{"rx": 512, "tcp-data-split": 2, "hds-thresh": 0, ...}; absent
    attributes are absent (a driver without header split sends no 11)."""
    out = {}
    for number, data in parse_nlas(payload):
        if number in RINGS_ATTRS:
            out[RINGS_ATTRS[number][0]] = _uint(data)
    return out


def decode_bitset(payload):
    """The names of the set bits of a verbose bitset."""
    attrs = dict(parse_nlas(payload))
    nomask = BITSET_NOMASK in attrs
    names = set()
    for kind, bit in parse_nlas(attrs.get(BITSET_BITS, b"")):
        if kind != BITSET_BITS_BIT:
            continue
        fields = dict(parse_nlas(bit))
        name = fields.get(BIT_NAME, b"").rstrip(b"\0").decode()
        if name and (nomask or BIT_VALUE in fields):
            names.add(name)
    return names


def decode_features(payload):
    """{"hw": {names}, "wanted": {...}, "active": {...}, "nochange": {...}}."""
    out = {}
    for number, data in parse_nlas(payload):
        if number in FEATURES_SETS:
            out[FEATURES_SETS[number]] = decode_bitset(data)
    return out


def decode_rss(payload):
    """{"context": n, "hfunc": n, "indir": [queue, ...], "hkey": bytes, ...}."""
    out = {}
    for number, data in parse_nlas(payload):
        if number == RSS_INDIR:
            out["indir"] = list(struct.unpack("=%dI" % (len(data) // 4), data))
        elif number == RSS_HKEY:
            out["hkey"] = bytes(data)
        elif number in (RSS_CONTEXT, RSS_HFUNC, RSS_INPUT_XFRM):
            out[{RSS_CONTEXT: "context", RSS_HFUNC: "hfunc",
                 RSS_INPUT_XFRM: "input-xfrm"}[number]] = _uint(data)
    return out


def header_ifindex(payload):
    """The device index in the header nest of a reply or notification."""
    for number, data in parse_nlas(payload):
        if number == 1:
            fields = dict(parse_nlas(data))
            if HEADER_DEV_INDEX in fields:
                return _uint(fields[HEADER_DEV_INDEX])
    return None


def genl_messages(data):
    """(nlmsg type, seq, genl cmd, attribute bytes) of each non-error message."""
    for msg_type, _flags, seq, msg in netlink_messages(data):
        if msg_type != NLMSG_ERROR and len(msg) >= 20:
            yield msg_type, seq, msg[16], msg[20:]


# -- the client -----------------------------------------------------------

class RxConfigFamily(ChannelsFamily):
    """Rings, features and RSS of the ethtool family (and its channels).

    record: a callable(cmd, [received buffers]) that sees every raw reply;
    the fixture recorder of the unit tests uses it.
    """

    record = None
    set_commands = ChannelsFamily.set_commands | {CMD_RINGS_SET, CMD_FEATURES_SET,
                                                  CMD_RSS_SET}

    def _seq(self):
        self._next_seq = getattr(self, "_next_seq", 0x7f000000) + 1
        return self._next_seq

    def transact(self, what, cmd, payload, family=None):
        """One request (to this family, or to the family id given); the
        attribute bytes of its replies.  Raises NetlinkRequestError with
        the kernel's errno and extack text."""
        seq = self._seq()
        family = family or self.family_id
        body = struct.pack("=BBH", cmd, self.version, 0) + payload
        self._send(struct.pack("=IHHII", 16 + len(body), family,
                               NLM_F_REQUEST | NLM_F_ACK, seq, 0) + body)
        replies, buffers = [], []
        while True:
            data = self._recv()
            buffers.append(data)
            replies += [attrs for msg_type, mseq, _cmd, attrs in genl_messages(data)
                        if mseq == seq and msg_type == family]
            acked = [_ack(msg_type, flags, msg) for msg_type, flags, aseq, msg
                     in netlink_messages(data) if msg_type == NLMSG_ERROR and aseq == seq]
            if acked:
                break
        if self.record is not None:
            self.record(cmd, buffers)
        code, extack = acked[0]
        if code:
            raise NetlinkRequestError(what, code, extack)
        if family == self.family_id:
            self._wrote(cmd, what)
        return replies

    def _get(self, what, cmd, ifindex, extra=b""):
        replies = self.transact(what, cmd, header(ifindex) + extra)
        return replies[0] if replies else b""

    # -- rings --------------------------------------------------------------

    def rings(self, ifindex):
        return decode_rings(self._get("reading rings of ifindex %d" % ifindex,
                                      CMD_RINGS_GET, ifindex))

    def set_rings(self, ifindex, **values):
        """values keyed as in rings() ("tcp-data-split", "hds-thresh", ...).

        Returns whether the kernel changed its configuration: it sends a
        RINGS_NTF to the monitor group only then.  That is how a caller
        tells "header split on" from "auto, which the driver reports as
        on" - a reply cannot (rings_prepare_data lets the driver
        overwrite the configured value with its current state).
        """
        with _Monitor(self.monitor_group()) as monitor:
            self.transact("setting rings (%s) of ifindex %d"
                          % (", ".join("%s %s" % kv for kv in sorted(values.items())), ifindex),
                          CMD_RINGS_SET, header(ifindex, ETHTOOL_FLAG_OMIT_REPLY)
                          + encode_rings(values))
            return monitor.saw(NTF_RINGS, ifindex)

    def monitor_group(self):
        """The id of the family's "monitor" multicast group, or None.

        Read from the controller (CTRL_CMD_GETFAMILY) rather than from
        pyroute2, whose socket classes keep the groups in different places
        across 0.7, 0.8 and 0.9.
        """
        if not hasattr(self, "_monitor_group"):
            self._monitor_group = None
            reply = self.transact("resolving the ethtool multicast groups", CTRL_CMD_GETFAMILY,
                                  nla(CTRL_ATTR_FAMILY_NAME, self.family.encode() + b"\0"),
                                  family=GENL_ID_CTRL)
            for number, groups in parse_nlas(reply[0] if reply else b""):
                if number != CTRL_ATTR_MCAST_GROUPS:
                    continue
                for _index, group in parse_nlas(groups):
                    fields = dict(parse_nlas(group))
                    if fields.get(CTRL_ATTR_MCAST_GRP_NAME, b"").rstrip(b"\0") == b"monitor":
                        self._monitor_group = _uint(fields[CTRL_ATTR_MCAST_GRP_ID])
        return self._monitor_group

    # -- features -----------------------------------------------------------

    def features(self, ifindex):
        return decode_features(self._get("reading features of ifindex %d" % ifindex,
                                         CMD_FEATURES_GET, ifindex))

    def set_features(self, ifindex, changes):
        """{"rx-ntuple-filter": True}; the kernel silently keeps features
        the driver cannot change, so callers read back."""
        self.transact("setting features (%s) of ifindex %d"
                      % (", ".join("%s %s" % (k, "on" if v else "off")
                                   for k, v in sorted(changes.items())), ifindex),
                      CMD_FEATURES_SET, header(ifindex, ETHTOOL_FLAG_OMIT_REPLY)
                      + encode_feature_changes(changes))

    # -- RSS ----------------------------------------------------------------

    def rss(self, ifindex):
        """The main RSS context: {"indir": [...], "hfunc": n, ...}."""
        return decode_rss(self._get("reading RSS of ifindex %d" % ifindex,
                                    CMD_RSS_GET, ifindex))

    def set_rss_indir(self, ifindex, table):
        """Write the indirection table ([] restores the driver's default
        spread and clears the device's user-configured mark)."""
        self.transact("setting the RSS indirection table of ifindex %d" % ifindex,
                      CMD_RSS_SET, header(ifindex) + encode_indir(table))


class _Monitor:
    """A second socket on the ethtool monitor group, open around one set.

    The kernel broadcasts a set's notification before it acks the set, so
    once the ack is in, the notification is already queued here.
    """

    SOL_NETLINK = 270
    NETLINK_ADD_MEMBERSHIP = 1

    def __init__(self, group):
        self.group = group
        self.sock = None

    def __enter__(self):
        if self.group is not None:
            self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
            self.sock.bind((0, 0))
            self.sock.setsockopt(self.SOL_NETLINK, self.NETLINK_ADD_MEMBERSHIP, self.group)
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
            for _type, _seq, cmd, attrs in genl_messages(data):
                if cmd == ntf_cmd and header_ifindex(attrs) == ifindex:
                    seen = True
