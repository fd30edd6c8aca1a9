# SPDX-License-Identifier: GPL-2.0-or-later
"""ntuple rules over SIOCETHTOOL: struct ethtool_rxnfc packing and the
rule-table protocol, against a fake driver (support/fakes/ethtool.py,
FakeRuleTable) that reads and writes the caller's memory the way the
kernel's ethtool_get_rxnfc/ethtool_set_rxnfc do (no test device of the
project - veth, netdevsim, virtio-net - has an ntuple table; on them the
real ioctl answers EOPNOTSUPP, which the integration and lab tests
exercise).

Offsets asserted below were printed with offsetof() by a C program
compiled against this host's include/linux/ethtool.h.
"""

import errno
import struct

import pytest

from irqtune.kernel.netlink import ethtool_ntuple as nt
from support.fakes.ethtool import FakeRuleTable


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
