# SPDX-License-Identifier: GPL-2.0-or-later
"""ntuple rules over SIOCETHTOOL: struct ethtool_rxnfc packing and the
rule-table protocol, against a fake driver that reads and writes the
caller's memory the way the kernel's ethtool_get_rxnfc/ethtool_set_rxnfc
do (no test device of the project - veth, netdevsim, virtio-net - has an
ntuple table; on them the real ioctl answers EOPNOTSUPP, which the
integration and lab tests exercise).

Offsets asserted below were printed with offsetof() by a C program
compiled against this host's include/linux/ethtool.h.
"""

import ctypes
import errno
import struct

import pytest

from irqtune.netlink import ethtool_ntuple as nt


class FakeRuleTable:
    """A driver with a rule table of `size` slots."""

    def __init__(self, size=16, special=False):
        self.size = size
        self.special = special          # driver picks locations (RX_CLS_LOC_SPECIAL)
        self.rules = {}                 # location -> raw 168-byte flow spec

    def ioctl(self, fd, request, ifreq):
        assert request == nt.SIOCETHTOOL
        assert bytes(ifreq[:16]).rstrip(b"\0") == b"eth9"
        addr, = struct.unpack_from("P", ifreq, 16)
        cmd, = struct.unpack("=I", ctypes.string_at(addr, 4))
        view = (ctypes.c_char * nt.RXNFC_SIZE).from_address(addr)
        fs = nt.FS_OFFSET
        if cmd == nt.GRXCLSRLCNT:
            data = self.size | (nt.RX_CLS_LOC_SPECIAL if self.special else 0)
            struct.pack_into("=Q", view, 8, data)
            struct.pack_into("=I", view, nt.RULE_CNT_OFFSET, len(self.rules))
        elif cmd == nt.GRXCLSRLALL:
            count, = struct.unpack_from("=I", view, nt.RULE_CNT_OFFSET)
            assert count >= len(self.rules)
            locs = sorted(self.rules)
            out = (ctypes.c_char * (nt.RULE_LOCS_OFFSET + 4 * count)).from_address(addr)
            struct.pack_into("=I", out, nt.RULE_CNT_OFFSET, len(locs))
            struct.pack_into("=%dI" % len(locs), out, nt.RULE_LOCS_OFFSET, *locs)
        elif cmd == nt.GRXCLSRULE:
            loc, = struct.unpack_from("=I", view, fs + nt.FS_LOCATION)
            if loc not in self.rules:
                raise OSError(errno.ENOENT, "No such file or directory")
            view[fs:fs + 168] = self.rules[loc]
        elif cmd == nt.SRXCLSRLINS:
            loc, = struct.unpack_from("=I", view, fs + nt.FS_LOCATION)
            if loc == nt.RX_CLS_LOC_ANY:
                if not self.special:
                    raise OSError(errno.EINVAL, "Invalid argument")
                loc = max(set(range(self.size)) - set(self.rules))
                struct.pack_into("=I", view, fs + nt.FS_LOCATION, loc)
            if loc >= self.size:
                raise OSError(errno.EINVAL, "Invalid argument")
            self.rules[loc] = bytes(view[fs:fs + 168])
        elif cmd == nt.SRXCLSRLDEL:
            loc, = struct.unpack_from("=I", view, fs + nt.FS_LOCATION)
            if self.rules.pop(loc, None) is None:
                raise OSError(errno.ENOENT, "No such file or directory")
        else:
            raise OSError(errno.EOPNOTSUPP, "Operation not supported")


def test_layout_matches_the_kernel_header():
    # offsetof() values from include/uapi/linux/ethtool.h (x86-64)
    buf = nt.pack_rule(nt.SRXCLSRLINS, nt.FlowRule("tcp4", 5201, 3, "192.0.2.7"), 9)
    assert len(buf) == 192
    assert struct.unpack_from("=II", buf, 0) == (nt.SRXCLSRLINS, 0x01)
    assert struct.unpack_from("=I", buf, 16) == (0x01,)              # fs.flow_type
    assert bytes(buf[16 + 4 + 4:16 + 4 + 8]) == bytes([192, 0, 2, 7])  # h_u.tcp_ip4_spec.ip4dst
    assert struct.unpack_from("!H", buf, 16 + 4 + 10) == (5201,)       # h_u ... pdst
    assert struct.unpack_from("!H", buf, 16 + 76 + 10) == (0xFFFF,)    # m_u ... pdst: match
    assert struct.unpack_from("!H", buf, 16 + 76 + 8) == (0,)          # psrc: ignored
    assert struct.unpack_from("=QI", buf, 16 + 152) == (3, 9)          # ring_cookie, location


def test_ipv6_rule_round_trip():
    rule = nt.FlowRule("udp6", 9000, 5, "2001:db8::1")
    location, back = nt.unpack_rule(nt.pack_rule(nt.SRXCLSRLINS, rule, 4))
    assert (location, back) == (4, rule)
    assert nt.unpack_rule(nt.pack_rule(nt.SRXCLSRLINS, nt.FlowRule("tcp6", 80, 1), 0))[1] \
        == nt.FlowRule("tcp6", 80, 1)


def test_insert_picks_the_last_free_slot_without_driver_support():
    table = FakeRuleTable(size=8)
    rules = nt.NtupleRules("eth9", ioctl=table.ioctl)
    first = rules.insert(nt.FlowRule("tcp4", 5201, 3))
    second = rules.insert(nt.FlowRule("udp4", 5202, 2, "198.51.100.1"))
    assert (first, second) == (7, 6)
    assert rules.locations() == [6, 7]
    assert rules.get(6) == nt.FlowRule("udp4", 5202, 2, "198.51.100.1")
    rules.delete(7)
    assert rules.locations() == [6]
    with pytest.raises(OSError) as err:
        rules.get(7)
    assert err.value.errno == errno.ENOENT


def test_insert_lets_a_capable_driver_choose():
    table = FakeRuleTable(size=8, special=True)
    table.rules[7] = bytes(168)
    loc = nt.NtupleRules("eth9", ioctl=table.ioctl).insert(nt.FlowRule("tcp4", 1, 1))
    assert loc == 6 and 6 in table.rules


def test_full_table_is_enospc():
    table = FakeRuleTable(size=1)
    rules = nt.NtupleRules("eth9", ioctl=table.ioctl)
    rules.insert(nt.FlowRule("tcp4", 1, 1))
    with pytest.raises(OSError) as err:
        rules.insert(nt.FlowRule("tcp4", 2, 1))
    assert err.value.errno == errno.ENOSPC
