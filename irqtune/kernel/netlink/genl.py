# SPDX-License-Identifier: GPL-2.0-or-later
"""The one netlink layer: messages declared as pyroute2 classes, one
socket type, one sequence counter, one request loop, and the kernel's
errno and extack text on every refusal.

Families declare their messages the pyroute2 way (genlmsg/nla classes with
an nla_map in the kernel's attribute order) and pyroute2 0.7 to 0.9
encodes and decodes them.  Its sockets are not used: their sync API
changed shape between 0.7 (a plain socket, which ends a dump without
NLM_F_MULTI after its first message) and 0.9 (an asyncio core yielding
generators), and neither sends many requests in one write.

Messages whose attributes are all integers (netdev's NAPIs, queues and
queue statistics) are coded with struct from the same nla_map:
pyroute2's codec takes 50-100 us a message, several times what the
kernel takes to answer or apply one (tests/bench).
"""

import errno
import socket
import struct
import sys
import threading

from pyroute2.netlink import (NLA_F_NESTED, NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST,
                              NLMSG_DONE, NLMSG_ERROR, genlmsg, nla)

from .. import crashpoint
from ..errors import Extack, NetlinkRequestError, UnsupportedError
from ..names import attr_name, attr_of_nla, nla_name, option_name

NETLINK_GENERIC = 16
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
SOL_NETLINK = 270
NETLINK_ADD_MEMBERSHIP = 1
NETLINK_EXT_ACK = 11
NLM_F_CAPPED = 0x100
NLM_F_ACK_TLVS = 0x200
# enum nlmsgerr_attrs (include/uapi/linux/netlink.h)
NLMSGERR_ATTR_MSG, NLMSGERR_ATTR_OFFS, NLMSGERR_ATTR_MISS_TYPE, NLMSGERR_ATTR_MISS_NEST = 1, 2, 5, 6


# -- declarations -----------------------------------------------------------

class uint_nla(nla.cdata):
    """The kernel's NLA_UINT: 4 or 8 bytes on the wire, host byte order."""

    __slots__ = ()

    def decode(self):
        nla.cdata.decode(self)
        raw = self["value"]
        if len(raw) not in (4, 8):
            raise ValueError("uint attribute of %d bytes" % len(raw))
        self.value = int.from_bytes(raw, sys.byteorder)

    def encode(self):
        # Always send 8 bytes: the policy accepts both widths.
        self["value"] = int(self["value"]).to_bytes(8, sys.byteorder)
        nla.cdata.encode(self)


class netdev_genlmsg_base(genlmsg):
    """Subclasses set nla_map and nla_prefix; uint attributes use 'uint'."""

    nla_prefix = ""
    uint = uint_nla


class ctrl_msg(genlmsg):
    """nlctrl: family lookup and attribute policies.  The policy nests are
    keyed by index, which 0.7's nla_map cannot declare (0.9's
    NlaMapAdapter can): they stay binary for policy.py to walk."""

    nla_prefix = "CTRL_ATTR_"
    nla_map = (
        ("CTRL_ATTR_UNSPEC", "none"),
        ("CTRL_ATTR_FAMILY_ID", "uint16"),
        ("CTRL_ATTR_FAMILY_NAME", "asciiz"),
        ("CTRL_ATTR_VERSION", "uint32"),
        ("CTRL_ATTR_HDRSIZE", "uint32"),
        ("CTRL_ATTR_MAXATTR", "uint32"),
        ("CTRL_ATTR_OPS", "none"),
        ("CTRL_ATTR_MCAST_GROUPS", "*mcast_group"),
        ("CTRL_ATTR_POLICY", "cdata"),
        ("CTRL_ATTR_OP_POLICY", "cdata"),
        ("CTRL_ATTR_OP", "uint32"),
    )

    class mcast_group(nla):
        nla_flags = NLA_F_NESTED
        nla_map = (
            ("CTRL_ATTR_MCAST_GRP_UNSPEC", "none"),
            ("CTRL_ATTR_MCAST_GRP_NAME", "asciiz"),
            ("CTRL_ATTR_MCAST_GRP_ID", "uint32"),
        )


# -- codec ------------------------------------------------------------------

# Integer attribute kinds: struct format and length on the wire.
_INT_NLA = {"uint8": (struct.Struct("=HHB3x"), 5), "uint16": (struct.Struct("=HHH2x"), 6),
            "uint32": (struct.Struct("=HHI"), 8), "uint64": (struct.Struct("=HHQ"), 12),
            "uint": (struct.Struct("=HHQ"), 12)}
_HEADER = struct.Struct("=IHHIIBBH")     # netlink and generic netlink header


def attr_table(cls):
    """{attribute name: (number, kind)} of a message class's nla_map, in
    either of pyroute2's forms (by position, or (number, name, kind))."""
    table = cls.__dict__.get("_irqtune_attrs")
    if table is None:
        if cls.nla_map and isinstance(cls.nla_map[0][0], int):
            entries = [item[:3] for item in cls.nla_map]
        else:
            entries = [(i, item[0], item[1]) for i, item in enumerate(cls.nla_map)]
        table = {attr_of_nla(cls.nla_prefix, name): (number, kind)
                 for number, name, kind in entries if kind != "none"}
        cls._irqtune_attrs = table
    return table


def _flat_codec(cls):
    """For a class whose attributes are all integers: ({spelling: (struct,
    length, number)}, {number: name}); None for any other class."""
    if "_irqtune_flat" not in cls.__dict__:
        table = attr_table(cls)
        cls._irqtune_flat = None
        if all(kind in _INT_NLA for _, kind in table.values()):
            packers = {}
            for name, (number, kind) in table.items():
                packers[name] = packers[option_name(name)] = _INT_NLA[kind] + (number,)
            cls._irqtune_flat = packers, {number: name for name, (number, _) in table.items()}
    return cls._irqtune_flat


def encode(cls, family_id, cmd, version, attrs, seq, flags):
    """One request: the message class's attributes from {"name": value}
    (defer-hard-irqs or defer_hard_irqs)."""
    unknown = [name for name in attrs if attr_name(name) not in attr_table(cls)]
    if unknown:
        raise ValueError("unknown %s attribute %r" % (cls.__name__, unknown[0]))
    flat = _flat_codec(cls)
    if flat:
        packers = flat[0]
        payload = b"".join(packers[name][0].pack(packers[name][1], packers[name][2], value)
                           for name, value in attrs.items())
        return _HEADER.pack(20 + len(payload), family_id, flags, seq, 0,
                            cmd, version, 0) + payload
    msg = cls()
    msg["cmd"] = cmd
    msg["version"] = version
    msg["attrs"] = [[nla_name(cls.nla_prefix, name), value] for name, value in attrs.items()]
    msg["header"].update(type=family_id, flags=flags, sequence_number=seq, pid=0)
    msg.encode()
    return bytes(msg.data)


def decode(cls, data):
    """{"name": value} of a generic netlink message's attributes; nested
    ones stay pyroute2 nla objects, arrays lists of them."""
    flat = _flat_codec(cls)
    if flat:
        names = flat[1]
        return {names[n]: int.from_bytes(v, sys.byteorder)
                for n, v in parse_nlas(data[20:]) if n in names}
    msg = cls(bytearray(data))
    msg.decode()
    out = {}
    for name, value in msg["attrs"]:
        attr = attr_of_nla(cls.nla_prefix, name)
        if attr is not None:
            out[attr] = value
    return out


def _nlas(data, offset=0):
    """(offset, length, type) of each attribute of a run of netlink
    attributes starting at offset."""
    while offset + 4 <= len(data):
        length, nla_type = struct.unpack_from("HH", data, offset)
        if length < 4:
            return
        yield offset, length, nla_type & 0x3FFF
        offset += (length + 3) & ~3


def parse_nlas(data):
    """[(type, payload bytes)] of a run of netlink attributes, for nests
    that nla_map cannot declare and for the struct codec."""
    return [(nla_type, data[at + 4:at + length]) for at, length, nla_type in _nlas(data)]


def netlink_messages(data):
    """(type, flags, seq, message bytes) of each netlink message in a
    receive buffer."""
    offset = 0
    while offset + 16 <= len(data):
        length, msg_type, flags, seq, _ = struct.unpack_from("=IHHII", data, offset)
        if length < 16:
            return
        yield msg_type, flags, seq, data[offset:offset + length]
        offset += (length + 3) & ~3


def ack_of(msg_type, flags, msg, msg_class=None):
    """(errno, Extack or None) of an NLMSG_ERROR, or of an NLMSG_DONE
    that ends a dump (its payload is the dump's error code too, with no
    request echoed).  A missing attribute of the request's own level is
    named by msg_class's nla_map."""
    if len(msg) < 20:
        return 0, None
    code = -struct.unpack_from("=i", msg, 16)[0]
    extack = None
    if flags & NLM_F_ACK_TLVS:
        if msg_type == NLMSG_DONE:
            tlv_start, echoed = 20, 16
        else:
            echoed = 16 if (flags & NLM_F_CAPPED or not code) else \
                struct.unpack_from("=I", msg, 20)[0]
            tlv_start = 20 + echoed
        tlvs = dict(parse_nlas(msg[tlv_start:]))
        u32 = {k: struct.unpack_from("=I", v)[0] for k, v in tlvs.items() if len(v) == 4}
        missing, nest = u32.get(NLMSGERR_ATTR_MISS_TYPE), u32.get(NLMSGERR_ATTR_MISS_NEST)
        if missing is not None and nest is None and msg_class is not None:
            missing = next((a for a, (n, _) in attr_table(msg_class).items() if n == missing),
                           missing)
        text, offset = tlvs.get(NLMSGERR_ATTR_MSG), u32.get(NLMSGERR_ATTR_OFFS)
        refused = None
        if offset is not None and echoed > 16 and msg_class is not None:
            refused = _attr_at(msg_class, msg[20:20 + echoed], offset)
        extack = Extack(text.rstrip(b"\0").decode(errors="replace") if text else None,
                        missing, nest, offset, refused)
    return code, extack


def _attr_at(msg_class, request, offset):
    """The name of the top-level attribute of request (an echoed message)
    that starts at, or holds, offset; None when none does."""
    names = {number: attr for attr, (number, _) in attr_table(msg_class).items()}
    # the attributes start after the netlink and generic netlink headers
    return next((names.get(nla_type) for at, length, nla_type in _nlas(request, 20)
                 if at <= offset < at + length), None)


# -- sockets and sequence numbers -----------------------------------------

class _Sequence:
    """The one sequence counter: a batch takes a run of numbers."""

    def __init__(self):
        self._next = 1
        self._lock = threading.Lock()

    def take(self, count):
        with self._lock:
            if self._next + count > 0xFFFFFFFF:
                self._next = 1
            first = self._next
            self._next += count
            return first


SEQUENCE = _Sequence()


def open_socket(protocol, group=None):
    """A bound netlink socket with extended acks; with group, a member of
    that multicast group (rtnetlink RTNLGRP_*, or a generic netlink
    family's group id)."""
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, protocol)
    try:
        sock.setsockopt(SOL_NETLINK, NETLINK_EXT_ACK, 1)
        sock.bind((0, 0))
        if group is not None:
            sock.setsockopt(SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, group)
    except OSError:
        sock.close()
        raise
    return sock


# -- families ---------------------------------------------------------------

class GenlFamily:
    """A socket on one generic netlink family.

    Use as a context manager, or call close().  One instance serves a batch
    of requests so that a NAPI costs one round trip, not a socket setup.
    record: a callable(cmd, [received buffers]) that sees every raw reply
    (the unit tests' fixture recorder).
    """

    family = None      # generic netlink family name, set by subclasses
    message = None     # genlmsg subclass describing the family's attributes
    messages = {}      # {cmd: genlmsg subclass} where a command uses another
    version = 1
    # Commands that change kernel state (the crash-point hook counts them).
    set_commands = frozenset()
    record = None

    def __init__(self):
        self._sock = open_socket(NETLINK_GENERIC)
        self.family_id, self.groups = GENL_ID_CTRL, {}
        try:
            replies, (error,) = self._exchange(ctrl_msg, CTRL_CMD_GETFAMILY,
                                               [{"family-name": self.family}])
        except BaseException:
            self._sock.close()
            raise
        if error:
            self._sock.close()
            if error[0] == errno.ENOENT:
                raise UnsupportedError("generic netlink family '%s' is not available "
                                       "in this kernel" % self.family)
            raise NetlinkRequestError("resolving family %s" % self.family, *error)
        reply = decode(ctrl_msg, replies[0])
        self.family_id = reply["family-id"]
        self.groups = {group.get_attr("CTRL_ATTR_MCAST_GRP_NAME"):
                       group.get_attr("CTRL_ATTR_MCAST_GRP_ID")
                       for group in reply.get("mcast-groups", ())}

    def close(self):
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # The only two places that touch the socket.
    def _send(self, data):
        self._sock.send(data)

    def _recv(self):
        return self._sock.recv(1 << 20)

    def _exchange(self, msg_class, cmd, requests, dump=False):
        """The request loop: requests ([{attr: value}]) in one write, replies
        read until the last one's ack (or its dump's end).

        Only the last request asks for an ack: the kernel answers a request
        without NLM_F_ACK only when it fails, and handles the messages of
        one write in order, so the last ack arrives after every error and
        a batch costs one receive, not one per request.  Returns (reply
        message bytes, [None or (errno, extack)] per request).
        """
        first = SEQUENCE.take(len(requests))
        last = first + len(requests) - 1
        flags = NLM_F_REQUEST | (NLM_F_DUMP if dump else 0)
        self._send(b"".join(
            encode(msg_class, self.family_id, cmd, self.version, attrs, first + i,
                   flags if first + i != last or dump else flags | NLM_F_ACK)
            for i, attrs in enumerate(requests)))
        replies, errors, buffers = [], [None] * len(requests), []
        while True:
            buffers.append(self._recv())
            for msg_type, msg_flags, seq, msg in netlink_messages(buffers[-1]):
                if not first <= seq <= last:
                    continue
                if msg_type not in (NLMSG_ERROR, NLMSG_DONE):
                    if msg_type == self.family_id:
                        replies.append(msg)
                    continue
                code, extack = ack_of(msg_type, msg_flags, msg, msg_class)
                if code:
                    errors[seq - first] = (code, extack)
                if seq == last:
                    if self.record is not None:
                        self.record(cmd, buffers)
                    return replies, errors

    def _request(self, what, cmd, attrs, dump=False):
        msg_class = self.messages.get(cmd, self.message)
        replies, (error,) = self._exchange(msg_class, cmd, [attrs], dump)
        if error:
            raise NetlinkRequestError(what, *error)
        self._wrote(cmd, what)
        return [decode(msg_class, reply) for reply in replies]

    def _wrote(self, cmd, what):
        """The crash-point hook (irqtune.kernel.crashpoint) after a request that
        the kernel took; only commands that change something count."""
        if crashpoint.ENABLED and cmd in self.set_commands:
            crashpoint.wrote("%s %s" % (self.family, what))

    def dump(self, what, cmd, **attrs):
        return self._request(what, cmd, attrs, dump=True)

    def do(self, what, cmd, **attrs):
        """A request answered by one message (get) or by an ack only (set)."""
        replies = self._request(what, cmd, attrs)
        return replies[0] if replies else None

    def do_batch(self, cmd, requests):
        """Send many requests in one write; [None or (errno, extack)] in order."""
        if not requests:
            return []
        _, errors = self._exchange(self.messages.get(cmd, self.message), cmd, requests)
        self._wrote(cmd, "batch of %d" % len(requests))
        return errors
