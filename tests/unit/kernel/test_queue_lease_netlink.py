# SPDX-License-Identifier: GPL-2.0-or-later
"""Queue leases in the netlink layer: queue-create's request and reply, the
lease nest of a lender's queue-get, the kernel's refusals, and whether the
kernel has queue-create.

Replies are the kernel's, recorded in the 7.2 lab guest (Linux 7.2.13,
netdevsim lending, netkit peers in a namespace) with
netdev_replies/record_leases.py into netdev_replies/netdevsim-netkit-7.2/
(each file names its source, kernel, devices and ifindexes).  The requests
are checked against bytes built here with struct from
include/uapi/linux/netdev.h of that kernel: queue attributes id 1,
ifindex 2, type 3, napi-id 4, lease 8 (nested); lease attributes ifindex
1, queue 2 (nested queue-id: id 1, type 3), netns-id 3 (s32);
NETDEV_CMD_QUEUE_CREATE 16.
"""

import errno
import json
import os
import struct

import pytest
from support.fakes.replay import Replay

from irqtune.features.zerocopy.leases import lease_refusal
from irqtune.features.zerocopy.plan import refusal
from irqtune.kernel.errors import NetlinkRequestError
from irqtune.kernel.netlink.ethtool_rx import RxConfigFamily

from irqtune.kernel import caps
from irqtune.kernel.netlink.genl import NLA_F_NESTED
from irqtune.kernel.netlink.netdev import (CMD_QUEUE_CREATE, CMD_QUEUE_GET, LeaseFamily,
                                           QueueLease)

FAMILY_ID = 30
HERE = os.path.join(os.path.dirname(__file__), "netdev_replies", "netdevsim-netkit-7.2")


def recorded(name):
    with open(os.path.join(HERE, name + ".json")) as f:
        return json.load(f)


class ReplayedLeases(Replay, LeaseFamily):
    pass


class ReplayedEthtool(Replay, RxConfigFamily):
    pass


def u32(kind, value):
    return struct.pack("=HHI", 8, kind, value)


def s32(kind, value):
    return struct.pack("=HHi", 8, kind, value)


def nest(kind, *attrs):
    body = b"".join(attrs)
    return struct.pack("=HH", 4 + len(body), kind | NLA_F_NESTED) + body


def genl_message(cmd, seq, *attrs, msg_type=FAMILY_ID, flags=0):
    body = b"".join(attrs)
    return struct.pack("=IHHIIBBH", 20 + len(body), msg_type, flags, seq, 0, cmd, 1, 0) + body


def done(seq):
    return struct.pack("=IHHIIi", 20, 3, 2, seq, 0, 0)


def ack(seq):
    return struct.pack("=IHHIIi", 36, 2, 0x100, seq, 0, 0) + bytes(16)


class Scripted(LeaseFamily):
    """LeaseFamily answering with prepared buffers (sequence numbers
    rewritten to the request's)."""

    def __init__(self, *buffers):
        self.family_id, self.groups = FAMILY_ID, {}
        self.buffers = list(buffers)
        self.sent = []

    def _send(self, data):
        self.sent.append(data)

    def _recv(self):
        seq = struct.unpack_from("=I", self.sent[-1], 8)[0]
        data, offset = bytearray(self.buffers.pop(0)), 0
        while offset + 16 <= len(data):
            struct.pack_into("=I", data, offset + 8, seq)
            offset += (struct.unpack_from("=I", data, offset)[0] + 3) & ~3
        return bytes(data)

    def close(self):
        pass


def test_queue_create_without_a_namespace_id_leaves_the_attribute_out():
    fam = Scripted(genl_message(CMD_QUEUE_CREATE, 1, u32(1, 2)) + ack(1))
    assert fam.create(7, 3, 5) == 2
    assert fam.sent[0][20:] == u32(2, 7) + u32(3, 0) + nest(8, u32(1, 3), nest(2, u32(1, 5),
                                                                               u32(3, 0)))


def test_the_kernels_reply_to_queue_create_is_the_lessees_new_queue():
    rec = recorded("queue_create")
    fam = ReplayedLeases(rec)
    assert fam.create(rec["lessee_ifindex"], rec["lender_ifindex"], 1, rec["netns_id"]) == 1
    assert fam.sent[0][20:] == (u32(2, 5) + u32(3, 0) + nest(8, u32(1, 4), nest(2, u32(1, 1),
                                                                                u32(3, 0)),
                                                             s32(3, 0)))


def test_the_lenders_queue_get_shows_the_lease_with_the_lessees_namespace_id():
    rec = recorded("queue_get_leased")
    assert ReplayedLeases(rec).leases(rec["lender_ifindex"]) == {1: QueueLease(5, 1, 0, 14)}
    rec = recorded("queue_get_after_delete")           # the netkit device deleted
    assert ReplayedLeases(rec).leases(rec["lender_ifindex"]) == {}


@pytest.mark.parametrize("name, code, words", [
    ("queue_create_busy", errno.EBUSY,
     "the queue is in use (EBUSY: Device queue in use due to queue leasing): it is leased "
     "already"),
    ("queue_create_range", errno.ERANGE,
     "the NIC has no such rx queue (ERANGE: in attribute lease): lease one below its channel "
     "count"),
    ("queue_create_veth", errno.EINVAL,
     "refused (EINVAL: Device does not support queue creation): the lessee must be a netkit "
     "device"),
    ("queue_create_limit", errno.EINVAL,
     "refused (EINVAL: netkit maximum queue limit reached): the netkit device has no rx queue "
     "left: create it with more (ip link add ... type netkit peer name DEV numrxqueues N)"),
    ("queue_create_no_queue_ops", errno.EINVAL,
     "refused (EINVAL: Lease device does not support queue management operations): the NIC's "
     "driver has no queue management ops (virtio-net, igb): lease from one that has them "
     "(mlx5, bnxt, fbnic, gve; netdevsim)"),
    ("queue_create_virtual_lender", errno.EINVAL,
     "refused (EINVAL: Lease device is a virtual device): lease from a physical NIC"),
    ("queue_create_primary", errno.EOPNOTSUPP,
     "not possible (EOPNOTSUPP: netkit can only lease against the peer device): name the "
     "netkit peer inside the container, not the pair's primary"),
])
def test_each_refusal_of_queue_create_becomes_one_line_saying_what_to_do(name, code, words):
    rec = recorded(name)
    with pytest.raises(NetlinkRequestError) as err:
        ReplayedLeases(rec).create(5, rec.get("lender_ifindex", 2), 1, 0)
    assert err.value.errno == code == rec["error"]["errno"]
    assert err.value.extack.message == rec["error"]["extack"]
    line = lease_refusal(err.value)
    assert line == words, line


def test_a_channel_change_that_drops_a_leased_queue_is_one_line():
    rec = recorded("channels_set_leased")
    with pytest.raises(NetlinkRequestError) as err:
        ReplayedEthtool(rec).set_channels(rec["lender_ifindex"], combined=1)
    assert (err.value.errno, err.value.extack.message) == (
        errno.EINVAL, "Device queue in use due to queue leasing")
    assert str(refusal("combined channels 1", err.value)) == (
        "a leased rx queue is in the way (EINVAL: Device queue in use due to queue leasing): "
        "the kernel ends a lease only with its netkit device")


def test_leases_of_a_lender_come_from_the_lease_nests_of_its_rx_queues():
    def queue(qid, qtype, *more):
        return genl_message(CMD_QUEUE_GET, 1, u32(1, qid), u32(3, qtype), u32(2, 3),
                            u32(4, 8192 + qid), *more, flags=2)
    dump = (queue(0, 0)
            + queue(1, 0, nest(8, nest(2, u32(1, 1), u32(3, 0)), u32(1, 9), s32(3, 0)))
            + queue(2, 0, nest(8, nest(2, u32(1, 2), u32(3, 0)), u32(1, 11)))
            + queue(1, 1) + done(1))
    assert Scripted(dump).leases(3) == {1: QueueLease(9, 1, 0, 8193),
                                        2: QueueLease(11, 2, None, 8194)}


def test_the_kernel_has_queue_create_when_the_family_lists_its_policy(monkeypatch):
    class Control:
        ops = {}

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

        def op_policy(self, family, op):
            assert family == "netdev"
            return self.ops.get(op)

    monkeypatch.setattr(caps, "_family_exists", lambda: True)
    monkeypatch.setattr(caps, "ControlFamily", Control)
    assert caps.queue_leases_missing() == caps.NO_QUEUE_CREATE
    assert "Linux >= 7.1" in caps.NO_QUEUE_CREATE
    Control.ops = {CMD_QUEUE_CREATE: {2: {"type": 3, "max": None}}}
    assert caps.queue_leases_missing() is None
    monkeypatch.setattr(caps, "_family_exists", lambda: False)
    assert "no netdev generic netlink family" in caps.queue_leases_missing()

