# SPDX-License-Identifier: GPL-2.0-or-later
"""RxConfigFamily against ethtool netlink replies recorded from real kernels.

tests/unit/kernel/ethtool_replies/<source>/*.json hold the receive buffers exactly
as a kernel sent them (recorded with ethtool_replies/record.py; each file
says which kernel and device).  The family's transport is replaced by one
that answers from those buffers, so decoding, sequence matching and
error/extack handling run on the kernel's own bytes.
"""

import errno
import glob
import json
import os
import struct

import pytest

from irqtune.kernel.netlink import ethtool_rx as ex
from irqtune.kernel.netlink.ethtool import features_msg, rings_msg, rss_msg
from irqtune.kernel.netlink.genl import NetlinkRequestError, decode, encode
from support.fakes.replay import Replay

HERE = os.path.join(os.path.dirname(__file__), "ethtool_replies")


def fixture(source, name):
    with open(os.path.join(HERE, source, name + ".json")) as f:
        return json.load(f)


def sources():
    return sorted(os.path.basename(d) for d in glob.glob(os.path.join(HERE, "*"))
                  if os.path.isdir(d))


class Replayed(Replay, ex.RxConfigFamily):
    """RxConfigFamily answering from one recorded file."""


def test_veth_features_decode_from_the_verbose_bitsets():
    fam = Replayed(fixture("veth-6.18", "features_get"))
    features = fam.features(3)
    assert "rx-gro-list" in features["hw"]            # changeable on veth
    assert "rx-gro-list" not in features["active"]    # off by default
    assert "rx-ntuple-filter" not in features["hw"]   # veth has no ntuple table
    assert features["nochange"] == {"vlan-challenged"}
    assert {"rx-gro", "tx-scatter-gather"} <= features["active"] <= features["hw"] | {"highdma"}
    # the request asked for ifindex 3 in a header nest, verbose bitsets
    cmd, = struct.unpack_from("=B", fam.sent[0], 16)
    assert cmd == ex.CMD_FEATURES_GET
    head = decode(features_msg, fam.sent[0])["header"]
    assert head.get_attr("ETHTOOL_A_HEADER_DEV_INDEX") == 3


def test_veth_rings_get_is_eopnotsupp():
    fam = Replayed(fixture("veth-6.18", "rings_get"))
    with pytest.raises(NetlinkRequestError) as err:
        fam.rings(3)
    assert err.value.errno == errno.EOPNOTSUPP


def test_veth_rings_set_carries_the_kernels_extack():
    fam = Replayed(fixture("veth-6.18", "rings_set_split"))
    with pytest.raises(NetlinkRequestError) as err:
        fam.set_rings(3, **{"tcp-data-split": 2, "hds-thresh": 0})
    assert err.value.errno == errno.EOPNOTSUPP
    assert err.value.extack.message == "setting TCP data split is not supported"
    assert "tcp-data-split 2" in str(err.value)


def test_veth_has_no_rss_table():
    with pytest.raises(NetlinkRequestError) as err:
        Replayed(fixture("veth-6.18", "rss_get")).rss(3)
    assert err.value.errno == errno.EOPNOTSUPP


def test_veth_feature_set_is_acked():
    # the kernel acks a request for a feature veth cannot change; only a
    # read-back shows it stayed off (the tuner does that read)
    assert Replayed(fixture("veth-6.18", "features_set_ntuple")).set_features(
        3, {"rx-ntuple-filter": True}) is None


@pytest.mark.parametrize("source", [s for s in sources() if s.startswith("netdevsim")])
def test_netdevsim_rings_have_header_split_and_hds_thresh(source):
    rings = Replayed(fixture(source, "rings_get")).rings(1)
    assert rings["tcp-data-split"] == ex.TCP_DATA_SPLIT["on"]   # "auto", shown as on
    assert rings["hds-thresh"] == 0 and rings["hds-thresh-max"] > 0
    after = Replayed(fixture(source, "rings_get_after_set")).rings(1)
    assert after["tcp-data-split"] == ex.TCP_DATA_SPLIT["on"]
    assert Replayed(fixture(source, "rings_set_split")).set_rings(
        1, **{"tcp-data-split": 2, "hds-thresh": 0}) is None     # acked; no monitor here
    features = Replayed(fixture(source, "features_get")).features(1)
    assert "rx-ntuple-filter" not in features["hw"] | features["active"]
    assert {"rx-lro", "tx-tcp-segmentation"} <= features["active"]
    with pytest.raises(NetlinkRequestError) as err:
        Replayed(fixture(source, "rss_get")).rss(1)
    assert err.value.errno == errno.EOPNOTSUPP                     # no get_rxfh


def request(msg_class, cmd, **attrs):
    """What the layer sends for a request (family id 20, sequence 1)."""
    return encode(msg_class, 20, cmd, 1, attrs, 1, 1)


def test_encoded_rings_decode_to_the_same_values():
    values = {"tcp-data-split": 2, "hds-thresh": 0, "rx": 1024}
    assert decode(rings_msg, request(rings_msg, ex.CMD_RINGS_SET, **values)) == values
    with pytest.raises(ValueError):
        request(rings_msg, ex.CMD_RINGS_SET, **{"tcp-data-spilt": 2})


def test_feature_changes_are_a_masked_verbose_bitset():
    sent = request(features_msg, ex.CMD_FEATURES_SET, wanted=ex.feature_changes(
        {"rx-ntuple-filter": True, "rx-gro-list": False}))
    wanted = decode(features_msg, sent)["wanted"]
    # with a mask (no NOMASK): the listed bits change, VALUE marks the set ones
    assert not wanted.get_attr("ETHTOOL_A_BITSET_NOMASK")
    bits = wanted.get_attr("ETHTOOL_A_BITSET_BITS").get_attrs("ETHTOOL_A_BITSET_BITS_BIT")
    assert [b.get_attr("ETHTOOL_A_BITSET_BIT_NAME") for b in bits] == \
        ["rx-gro-list", "rx-ntuple-filter"]
    assert ex.bitset_names(wanted) == {"rx-ntuple-filter"}
    # the kernel's strict validation wants NLA_F_NESTED on every nest
    (wanted_type, bitset), = _nlas(sent[20:])
    (bits_type, bits), = _nlas(bitset)
    assert (wanted_type, bits_type) == (0x8000 | 3, 0x8000 | 3)
    assert [t for t, _ in _nlas(bits)] == [0x8000 | 1, 0x8000 | 1]


def _nlas(data):
    out, offset = [], 0
    while offset + 4 <= len(data):
        length, nla_type = struct.unpack_from("=HH", data, offset)
        out.append((nla_type, data[offset + 4:offset + length]))
        offset += (length + 3) & ~3
    return out


def test_indirection_table_encoding():
    sent = request(rss_msg, ex.CMD_RSS_SET, indir=struct.pack("=4I", 0, 1, 0, 1))
    assert ex.rss_values(decode(rss_msg, sent))["indir"] == [0, 1, 0, 1]
    # an empty table is an empty attribute: the driver's default spread
    sent = request(rss_msg, ex.CMD_RSS_SET, indir=b"")
    assert _nlas(sent[20:]) == [(4, b"")]


def test_replies_of_other_requests_are_ignored():
    recorded = fixture("veth-6.18", "features_get")
    fam = Replayed(recorded)
    # ahead of the answer: the same reply, but to another sequence number,
    # with features that would be wrong
    stale = bytearray(bytes.fromhex(recorded["replies"][0]))
    struct.pack_into("=I", stale, 8, 1)
    fam.buffers.insert(0, (stale.replace(b"rx-gro\0", b"rx-grO\0"), False))
    active = fam.features(3)["active"]
    assert "rx-gro" in active and "rx-grO" not in active
