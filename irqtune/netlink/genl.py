# SPDX-License-Identifier: GPL-2.0-or-later
"""What every generic netlink client here shares, over pyroute2 0.7 and 0.9.

pyroute2 has no module for the netdev family and no variable-width "uint"
attribute type, and its sync API changed shape between 0.7 (plain socket)
and 0.9 (asyncio core, generators).  This module absorbs both so the
family clients only describe messages.
"""

import errno
import sys

from pyroute2.netlink import (NLM_F_ACK, NLM_F_DUMP, NLM_F_MULTI, NLM_F_REQUEST,
                              NLMSG_DONE, NLMSG_ERROR, genlmsg, nla)
from pyroute2.netlink.exceptions import NetlinkError
from pyroute2.netlink.generic import GenericNetlinkSocket

from ..errors import IrqtuneError, UnsupportedError


class NetlinkRequestError(IrqtuneError):
    """The kernel refused a request; carries errno and the extended ack text."""

    def __init__(self, what, code, extack=None):
        self.code = code
        self.extack = extack
        detail = extack or _strerror(code)
        super().__init__("%s: %s (errno %d)" % (what, detail, code))


def _strerror(code):
    import os
    return os.strerror(code)


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

    def __init__(self):
        self._sock = GenericNetlinkSocket(ext_ack=True)
        try:
            self._sock.bind(self.family, self.message)
        except NetlinkError as err:
            self._sock.close()
            if err.code == errno.ENOENT:
                raise UnsupportedError("generic netlink family '%s' is not available "
                                       "in this kernel" % self.family) from None
            raise NetlinkRequestError("resolving family %s" % self.family,
                                      err.code, _extack(err)) from None

    def close(self):
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _message(self, cmd, attrs):
        msg = self.message()
        msg["cmd"] = cmd
        msg["version"] = self.version
        msg["attrs"] = [[self.message.nla_prefix + name.upper().replace("-", "_"), value]
                        for name, value in attrs.items()]
        return msg

    def _request(self, what, cmd, attrs, flags):
        try:
            return list(self._sock.nlm_request(self._message(cmd, attrs),
                                               msg_type=self._sock.prid,
                                               msg_flags=flags,
                                               terminate=_until_done))
        except NetlinkError as err:
            raise NetlinkRequestError(what, err.code, _extack(err)) from None

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
    if text and text != _strerror(err.code):
        return text
    return None


def _attrs(msg, prefix):
    """Attributes of a reply as {"defer-hard-irqs": 100, ...}."""
    out = {}
    for name, value in msg["attrs"]:
        if name.startswith(prefix):
            out[name[len(prefix):].lower().replace("_", "-")] = value
    return out


class netdev_genlmsg_base(genlmsg):
    """Subclasses set nla_map and nla_prefix; uint attributes use 'uint'."""

    nla_prefix = ""
    uint = uint_nla
