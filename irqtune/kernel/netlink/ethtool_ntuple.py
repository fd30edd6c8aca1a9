# SPDX-License-Identifier: GPL-2.0-or-later
"""ntuple flow steering rules through the SIOCETHTOOL ioctl.

The ethtool netlink family has no message for classification rules (up to
Linux 7.2 at least), so rules go through ETHTOOL_SRXCLSRLINS/DEL and are
read with GRXCLSRLCNT/GRXCLSRLALL/GRXCLSRULE, with struct ethtool_rxnfc
packed here.  Offsets (x86-64 and every LP64 ABI; checked with offsetof()
against include/uapi/linux/ethtool.h): ethtool_rxnfc is 192 bytes - cmd 0,
flow_type 4, data 8, fs 16, rule_cnt 184, rule_locs 188;
ethtool_rx_flow_spec is 168 bytes - flow_type 0, h_u 4, h_ext 56, m_u 76,
m_ext 128, ring_cookie 152, location 160.
"""

import ctypes
import errno
import fcntl
import ipaddress
import socket
import struct
from dataclasses import asdict, dataclass

from .. import crashpoint

SIOCETHTOOL = 0x8946
GRXCLSRLCNT = 0x2E
GRXCLSRULE = 0x2F
GRXCLSRLALL = 0x30
SRXCLSRLDEL = 0x31
SRXCLSRLINS = 0x32
RX_CLS_LOC_ANY = 0xFFFFFFFF
RX_CLS_LOC_SPECIAL = 0x80000000
FLOW_MASK = 0x00FFFFFF            # flow_type without FLOW_EXT/FLOW_MAC_EXT/FLOW_RSS

FLOW_TYPES = {"tcp4": 0x01, "udp4": 0x02, "tcp6": 0x05, "udp6": 0x06}
FLOW_NAMES = {v: k for k, v in FLOW_TYPES.items()}

RXNFC_SIZE = 192
FS_OFFSET = 16
RULE_CNT_OFFSET = 184
RULE_LOCS_OFFSET = 188
FS_H_U, FS_M_U, FS_RING_COOKIE, FS_LOCATION = 4, 76, 152, 160
IFREQ_SIZE = 40


# Where a tcp/udp spec's destination lies in h_u/m_u (union
# ethtool_flow_union): address bytes, port offset, address type.
_DST = {"4": (slice(4, 8), 10, ipaddress.IPv4Address),
        "6": (slice(16, 32), 34, ipaddress.IPv6Address)}


@dataclass(frozen=True)
class FlowRule:
    """Steer one TCP/UDP destination (port, optionally address) to a queue."""

    flow: str            # tcp4 | udp4 | tcp6 | udp6
    dst_port: int
    queue: int
    dst_ip: str = None

    def describe(self):
        dst = "%s port %d" % (self.dst_ip, self.dst_port) if self.dst_ip else \
            "port %d" % self.dst_port
        return "%s %s -> queue %d" % (self.flow, dst, self.queue)

    def as_dict(self):
        return asdict(self)


def pack_rule(cmd, rule, location):
    """An ethtool_rxnfc carrying rule at location (RX_CLS_LOC_ANY: driver's
    choice): a tcp/udp ip4/ip6 spec matching the dst port (and address)."""
    buf = bytearray(RXNFC_SIZE)
    flow_type = FLOW_TYPES[rule.flow]
    struct.pack_into("=II", buf, 0, cmd, flow_type)
    fs = FS_OFFSET
    struct.pack_into("=I", buf, fs, flow_type)
    h, m = fs + FS_H_U, fs + FS_M_U
    addr, port, address_type = _DST[rule.flow[-1]]
    if rule.dst_ip:
        buf[h + addr.start:h + addr.stop] = address_type(rule.dst_ip).packed
        buf[m + addr.start:m + addr.stop] = b"\xff" * (addr.stop - addr.start)
    struct.pack_into("!H", buf, h + port, rule.dst_port)
    struct.pack_into("!H", buf, m + port, 0xFFFF)
    struct.pack_into("=QI", buf, fs + FS_RING_COOKIE, rule.queue, location)
    return buf


def unpack_rule(buf):
    """(location, FlowRule or None when the rule is not a plain L4 dst rule)."""
    fs = FS_OFFSET
    flow_type, = struct.unpack_from("=I", buf, fs)
    ring, location = struct.unpack_from("=QI", buf, fs + FS_RING_COOKIE)
    flow = FLOW_NAMES.get(flow_type & FLOW_MASK)
    if flow is None:
        return location, None
    h = buf[fs + FS_H_U:fs + FS_H_U + 52]
    m = buf[fs + FS_M_U:fs + FS_M_U + 52]
    addr, at, address_type = _DST[flow[-1]]
    ip = str(address_type(bytes(h[addr]))) if any(m[addr]) else None
    port, = struct.unpack_from("!H", h, at)
    return location, FlowRule(flow, port, ring & 0xFFFFFFFF, ip)


class NtupleRules:
    """Classification rules of one device.

    ioctl: fcntl.ioctl by default; the unit tests pass a fake that
    implements the kernel's side on the same bytes.
    """

    def __init__(self, ifname, ioctl=None):
        self.ifname = ifname
        self._ioctl = ioctl or fcntl.ioctl

    def _call(self, data):
        """Run one SIOCETHTOOL command on data (bytearray, updated in place)."""
        buf = ctypes.create_string_buffer(bytes(data), len(data))
        ifreq = bytearray(IFREQ_SIZE)
        name = self.ifname.encode()
        ifreq[:len(name)] = name
        struct.pack_into("P", ifreq, 16, ctypes.addressof(buf))
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            self._ioctl(sock.fileno(), SIOCETHTOOL, ifreq)
        data[:] = buf.raw
        if crashpoint.ENABLED:
            cmd, = struct.unpack_from("=I", data)
            if cmd in (SRXCLSRLINS, SRXCLSRLDEL):
                crashpoint.wrote("%s: ntuple rule %s" % (
                    self.ifname, "insert" if cmd == SRXCLSRLINS else "delete"))

    def table(self):
        """(rule count, table size, driver picks locations itself)."""
        buf = bytearray(RXNFC_SIZE)
        struct.pack_into("=I", buf, 0, GRXCLSRLCNT)
        self._call(buf)
        size, = struct.unpack_from("=Q", buf, 8)
        count, = struct.unpack_from("=I", buf, RULE_CNT_OFFSET)
        return count, size & 0xFFFFFFFF & ~RX_CLS_LOC_SPECIAL, bool(size & RX_CLS_LOC_SPECIAL)

    def locations(self):
        count, size, _special = self.table()
        buf = bytearray(max(RXNFC_SIZE, RULE_LOCS_OFFSET + 4 * count))
        struct.pack_into("=IIQ", buf, 0, GRXCLSRLALL, 0, size)
        struct.pack_into("=I", buf, RULE_CNT_OFFSET, count)
        self._call(buf)
        count, = struct.unpack_from("=I", buf, RULE_CNT_OFFSET)
        return list(struct.unpack_from("=%dI" % count, buf, RULE_LOCS_OFFSET))

    def _at(self, cmd, location):
        """Run cmd on the rule slot location; the ethtool_rxnfc after it."""
        buf = bytearray(RXNFC_SIZE)
        struct.pack_into("=I", buf, 0, cmd)
        struct.pack_into("=I", buf, FS_OFFSET + FS_LOCATION, location)
        self._call(buf)
        return buf

    def get(self, location):
        """The FlowRule at location, None for a rule of another shape;
        raises OSError(ENOENT) when the slot is empty."""
        return unpack_rule(self._at(GRXCLSRULE, location))[1]

    def insert(self, rule):
        """Add rule; returns the location it got."""
        _count, size, special = self.table()
        if special:
            location = RX_CLS_LOC_ANY
        else:
            # Like ethtool without driver support: the last free slot.
            used = set(self.locations())
            free = [loc for loc in range(size - 1, -1, -1) if loc not in used]
            if not free:
                raise OSError(errno.ENOSPC, "the device's rule table (%d entries) is full" % size)
            location = free[0]
        buf = pack_rule(SRXCLSRLINS, rule, location)
        self._call(buf)
        return unpack_rule(buf)[0]

    def delete(self, location):
        self._at(SRXCLSRLDEL, location)
