# SPDX-License-Identifier: GPL-2.0-or-later
"""What every generic netlink client here shares, over pyroute2 0.7 and 0.9.

pyroute2 has no module for the netdev family and no variable-width "uint"
attribute type, and its sync API changed shape between 0.7 (plain socket)
and 0.9 (asyncio core, generators).  This module absorbs both so the
family clients only describe messages.
"""

import errno
import itertools
import os
import socket
import struct
import sys

from pyroute2.netlink import (NLM_F_ACK, NLM_F_DUMP, NLM_F_MULTI, NLM_F_REQUEST,
                              NLMSG_DONE, NLMSG_ERROR, genlmsg, nla)
from pyroute2.netlink.exceptions import NetlinkError
from pyroute2.netlink.generic import GenericNetlinkSocket

from .. import crashpoint
from ..errors import DependencyError, NetlinkRequestError, UnsupportedError  # noqa: F401
from ..names import attr_of_nla, nla_name


def pyroute2_version():
    """pyroute2's version text; Debian's build reports "unknown"."""
    try:
        import pyroute2
        return str(getattr(pyroute2, "__version__", "unknown"))
    except Exception:     # noqa: BLE001 - only for a message
        return "unknown"


def _open_genl_socket():
    # pyroute2 < 0.7 has no ext_ack keyword (0.5.x: TypeError in
    # GenlFamily); detected by the feature, since the version may be "unknown".
    try:
        return GenericNetlinkSocket(ext_ack=True)
    except TypeError as err:
        if "ext_ack" not in str(err):
            raise
        raise DependencyError(
            "pyroute2 %s is too old: its GenericNetlinkSocket has no ext_ack "
            "(pyroute2 < 0.7); irqtune needs pyroute2 0.7.2 or newer - install a "
            "newer python3-pyroute2 and re-apply the profile" % pyroute2_version()) from None


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


class GenlFamily:
    """A bound socket on one generic netlink family.

    Use as a context manager, or call close().  One instance serves a batch
    of requests so that a NAPI costs one round trip, not a socket setup.
    """

    family = None      # generic netlink family name, set by subclasses
    message = None     # genlmsg subclass describing the family's attributes
    version = 1
    # Commands that change kernel state (the crash-point hook counts them).
    set_commands = frozenset()

    def __init__(self):
        self._sock = _open_genl_socket()
        try:
            self._sock.bind(self.family, self.message)
        except NetlinkError as err:
            self._sock.close()
            if err.code == errno.ENOENT:
                raise UnsupportedError("generic netlink family '%s' is not available "
                                       "in this kernel" % self.family) from None
            raise NetlinkRequestError("resolving family %s" % self.family,
                                      err.code, _extack(err)) from None

        self._raw = None

    def close(self):
        if self._raw is not None:
            self._raw.close()
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _message(self, cmd, attrs):
        msg = self.message()
        msg["cmd"] = cmd
        msg["version"] = self.version
        msg["attrs"] = [[nla_name(self.message.nla_prefix, name), value]
                        for name, value in attrs.items()]
        return msg

    def _request(self, what, cmd, attrs, flags):
        try:
            replies = list(self._sock.nlm_request(self._message(cmd, attrs),
                                                  msg_type=self._sock.prid,
                                                  msg_flags=flags,
                                                  terminate=_until_done))
        except NetlinkError as err:
            raise NetlinkRequestError(what, err.code, _extack(err)) from None
        self._wrote(cmd, what)
        return replies

    def _wrote(self, cmd, what):
        """The crash-point hook (irqtune.crashpoint) after a request that
        the kernel took; only commands that change something count."""
        if crashpoint.ENABLED and cmd in self.set_commands:
            crashpoint.wrote("%s %s" % (self.family, what))

    def dump(self, what, cmd, **attrs):
        return [_attrs(m, self.message.nla_prefix)
                for m in self._request(what, cmd, attrs, NLM_F_REQUEST | NLM_F_DUMP)
                if m["header"]["type"] == self._sock.prid]

    def do(self, what, cmd, **attrs):
        """A request answered by one message (get) or by an ack only (set)."""
        replies = self._request(what, cmd, attrs, NLM_F_REQUEST | NLM_F_ACK)
        msgs = [_attrs(m, self.message.nla_prefix) for m in replies
                if m["header"]["type"] == self._sock.prid]
        return msgs[0] if msgs else None

    def dump_ints(self, what, cmd, **attrs):
        """dump() for families whose objects carry only u32/uint attributes
        (netdev's NAPIs and queues), sent and decoded here with struct:
        pyroute2's decoder costs several times what the kernel takes to
        produce the dump (80 % of a 512-NAPI restore)."""
        sock = self._raw_socket()
        seq = next(_batch_seq) * 0x10000
        sock.send(self._encode(cmd, attrs, seq, NLM_F_REQUEST | NLM_F_DUMP))
        names = {number: name for name, (number, _) in self._attr_table().items()}
        objects = []
        while True:
            for msg_type, flags, mseq, msg in netlink_messages(sock.recv(1 << 20)):
                if mseq != seq:
                    continue
                if msg_type in (NLMSG_DONE, NLMSG_ERROR):
                    code, extack = _ack(msg_type, flags, msg) if len(msg) >= 20 else (0, None)
                    if code:
                        raise NetlinkRequestError(what, code, extack)
                    return objects
                if msg_type == self._sock.prid:
                    objects.append({names[n]: int.from_bytes(v, sys.byteorder)
                                    for n, v in parse_nlas(msg[20:]) if n in names})

    def _raw_socket(self):
        if self._raw is None:
            self._raw = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW,
                                      NETLINK_GENERIC,
                                      fileno=os.dup(self._sock.fileno()))
        return self._raw

    def do_batch(self, cmd, requests):
        """Send many set requests in one write; [None or (errno, extack)] in order.

        Each request is its own netlink message, but they share one
        sendmsg() and are encoded here with struct: pyroute2's generic
        encoder costs more per message than the kernel takes to apply it.
        Only the last request asks for an ack: the kernel answers a request
        without NLM_F_ACK only when it fails, and handles the messages of
        one write in order, so the last ack arrives after every error and
        a batch costs one receive, not one per object.  Only u32 and uint
        attributes are supported, which is all the set operations need.
        """
        if not requests:
            return []
        sock = self._raw_socket()
        first = next(_batch_seq) * 0x10000
        last = first + len(requests) - 1
        sock.send(b"".join(self._encode(cmd, attrs, first + i, NLM_F_REQUEST if
                                        first + i != last else NLM_F_REQUEST | NLM_F_ACK)
                           for i, attrs in enumerate(requests)))
        results = [None] * len(requests)
        while True:
            for seq, code, extack in _acks(sock.recv(1 << 20)):
                if first <= seq <= last:
                    if code:
                        results[seq - first] = (code, extack)
                    if seq == last:
                        self._wrote(cmd, "batch of %d" % len(requests))
                        return results

    def _encode(self, cmd, attrs, seq, flags):
        table = self._attr_table()
        parts = []
        for name, value in attrs.items():
            number, kind = table[name]
            parts.append(_ATTR_STRUCT[kind].pack(_ATTR_LEN[kind], number, value))
        payload = b"".join(parts)
        return _HEADER.pack(20 + len(payload), self._sock.prid, flags, seq, 0,
                            cmd, self.version, 0) + payload

    @classmethod
    def _attr_table(cls):
        table = cls.__dict__.get("_attr_numbers")
        if table is None:
            prefix = cls.message.nla_prefix
            table = {attr_of_nla(prefix, n): (i, kind)
                     for i, (n, kind) in enumerate(cls.message.nla_map)
                     if kind in ("uint32", "uint")}
            cls._attr_numbers = table
        return table


# A netlink and generic netlink header; a u32 or uint (u64) attribute.
_HEADER = struct.Struct("=IHHIIBBH")
_ATTR_STRUCT = {"uint32": struct.Struct("=HHI"), "uint": struct.Struct("=HHQ")}
_ATTR_LEN = {"uint32": 8, "uint": 12}

# Batches take sequence numbers far above pyroute2's own allocator's.
_batch_seq = itertools.count(0x1000)

NETLINK_GENERIC = 16
NLM_F_CAPPED = 0x100
NLM_F_ACK_TLVS = 0x200
NLMSGERR_ATTR_MSG = 1


def parse_nlas(data):
    """[(type, payload bytes)] of a run of netlink attributes."""
    out = []
    offset = 0
    while offset + 4 <= len(data):
        length, nla_type = struct.unpack_from("HH", data, offset)
        if length < 4:
            break
        out.append((nla_type & 0x3FFF, data[offset + 4:offset + length]))
        offset += (length + 3) & ~3
    return out


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


def _acks(data):
    """(seq, errno, extack text) of each NLMSG_ERROR in a receive buffer."""
    for msg_type, flags, seq, msg in netlink_messages(data):
        if msg_type == NLMSG_ERROR:
            yield (seq,) + _ack(msg_type, flags, msg)


def _ack(msg_type, flags, msg):
    """(errno, extack text or None) of an NLMSG_ERROR, or of an NLMSG_DONE
    that ends a dump (its payload is the dump's error code too, with no
    request echoed)."""
    code = -struct.unpack_from("=i", msg, 16)[0]
    extack = None
    if flags & NLM_F_ACK_TLVS:
        if msg_type == NLMSG_DONE:
            tlv_start = 20
        else:
            echoed = 16 if (flags & NLM_F_CAPPED or not code) else \
                struct.unpack_from("=I", msg, 20)[0]
            tlv_start = 20 + echoed
        tlvs = dict(parse_nlas(msg[tlv_start:]))
        if NLMSGERR_ATTR_MSG in tlvs:
            extack = tlvs[NLMSGERR_ATTR_MSG].rstrip(b"\0").decode(errors="replace")
    return code, extack


def _until_done(msg):
    """End a reply at NLMSG_DONE (dump) or at the ack (NLMSG_ERROR 0, do).

    Generic netlink families built on genlmsg_iput() (netdev among them)
    send dump replies without NLM_F_MULTI; pyroute2 0.7 would stop after the
    first of them.  Marking each message multi-part keeps it reading.
    """
    if msg["header"]["type"] in (NLMSG_DONE, NLMSG_ERROR):
        return True
    msg["header"]["flags"] |= NLM_F_MULTI
    return False


def _extack(err):
    # NetlinkError(code, msg): msg is the extack text when the kernel sent
    # one, else pyroute2's strerror() fallback, which adds nothing.
    text = err.args[1] if len(err.args) > 1 else None
    if text and text != os.strerror(err.code):
        return text
    return None


def _attrs(msg, prefix):
    """Attributes of a reply as {"defer-hard-irqs": 100, ...}."""
    out = {}
    for name, value in msg["attrs"]:
        attr = attr_of_nla(prefix, name)
        if attr is not None:
            out[attr] = value
    return out


class netdev_genlmsg_base(genlmsg):
    """Subclasses set nla_map and nla_prefix; uint attributes use 'uint'."""

    nla_prefix = ""
    uint = uint_nla
