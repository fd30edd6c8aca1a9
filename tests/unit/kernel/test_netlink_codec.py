# SPDX-License-Identifier: GPL-2.0-or-later
"""The netlink layer's two codecs read one declaration the same way.

Messages with integer attributes only (netdev's NAPIs, queues, queue
statistics) are coded with struct for speed; every other message by
pyroute2.  Both take their attribute numbers and kinds from the same
nla_map, so what one writes the other must read back - checked here
against the pyroute2 in use (0.7 system-wide, 0.9 in make check's venv).
"""

import sys

import pytest

from irqtune.kernel.netlink import genl
from irqtune.kernel.netlink.ethtool import channels_msg
from irqtune.kernel.netlink.netdev import CMD_NAPI_SET, napi_msg
from irqtune.kernel.netlink.netdev import qstats_msg

NAPI = {"id": 4242, "defer-hard-irqs": 100, "gro-flush-timeout": 2**40 + 5,
        "irq-suspend-timeout": 20000000, "threaded": 2}


def pyroute2_decode(msg_class, data):
    msg = msg_class(bytearray(data))
    msg.decode()
    return {name: value for name, value in msg["attrs"]}


def test_the_struct_codec_writes_what_pyroute2_reads():
    assert genl._flat_codec(napi_msg) is not None
    data = genl.encode(napi_msg, 30, CMD_NAPI_SET, 1, NAPI, 7, 1)
    assert pyroute2_decode(napi_msg, data) == {
        "NETDEV_A_NAPI_ID": 4242, "NETDEV_A_NAPI_DEFER_HARD_IRQS": 100,
        "NETDEV_A_NAPI_GRO_FLUSH_TIMEOUT": 2**40 + 5,
        "NETDEV_A_NAPI_IRQ_SUSPEND_TIMEOUT": 20000000, "NETDEV_A_NAPI_THREADED": 2}


def test_the_struct_codec_reads_what_pyroute2_writes():
    msg = napi_msg()
    msg["cmd"], msg["version"] = CMD_NAPI_SET, 1
    msg["attrs"] = [["NETDEV_A_NAPI_" + name.upper().replace("-", "_"), value]
                    for name, value in NAPI.items()]
    msg["header"].update(type=30, flags=1, sequence_number=7, pid=0)
    msg.encode()
    assert genl.decode(napi_msg, bytes(msg.data)) == NAPI


def test_a_uint_the_kernel_sends_in_4_bytes_is_read():
    # NLA_UINT: the kernel sends 4 bytes when the value fits
    attr = (8).to_bytes(2, sys.byteorder) + (6).to_bytes(2, sys.byteorder) \
        + (20000).to_bytes(4, sys.byteorder)
    header = genl._HEADER.pack(20 + len(attr), 30, 0, 1, 0, 11, 1, 0)
    assert genl.decode(napi_msg, header + attr) == {"gro-flush-timeout": 20000}
    assert pyroute2_decode(napi_msg, header + attr) == {"NETDEV_A_NAPI_GRO_FLUSH_TIMEOUT": 20000}


def test_numbers_follow_the_declaration_across_its_gap():
    table = genl.attr_table(qstats_msg)
    assert table["rx-packets"] == (8, "uint") and table["scope"] == (4, "uint")
    assert "unused-5" not in genl._flat_codec(qstats_msg)[0]
    data = genl.encode(qstats_msg, 30, 12, 1, {"ifindex": 3, "rx-packets": 9}, 1, 1)
    assert pyroute2_decode(qstats_msg, data) == {"NETDEV_A_QSTATS_IFINDEX": 3,
                                                 "NETDEV_A_QSTATS_RX_PACKETS": 9}


@pytest.mark.parametrize("msg_class", [napi_msg, channels_msg])
def test_an_unknown_attribute_is_refused_before_sending(msg_class):
    with pytest.raises(ValueError) as err:
        genl.encode(msg_class, 30, 1, 1, {"defer-hard-irq": 1}, 1, 1)
    assert "defer-hard-irq" in str(err.value)


def test_option_and_attribute_spellings_encode_alike():
    assert genl.encode(napi_msg, 30, CMD_NAPI_SET, 1, {"defer_hard_irqs": 5}, 1, 1) == \
        genl.encode(napi_msg, 30, CMD_NAPI_SET, 1, {"defer-hard-irqs": 5}, 1, 1)


def test_a_batch_takes_a_run_of_sequence_numbers():
    sequence = genl._Sequence()
    first = sequence.take(512)
    assert sequence.take(1) == first + 512
    sequence._next = 0xFFFFFFFF - 3
    assert sequence.take(8) == 1            # wraps rather than overflow the u32
