# SPDX-License-Identifier: GPL-2.0-or-later
"""Queue leases in the netlink layer: queue-create's request and reply, the
lease nest of a lender's queue-get, and whether the kernel has queue-create.

The wire shapes are built here by hand with struct from
include/uapi/linux/netdev.h of Linux 7.2.13 (Debian's linux-source-7.2):
queue attributes id 1, ifindex 2, type 3, napi-id 4, lease 8 (nested);
lease attributes ifindex 1, queue 2 (nested queue-id: id 1, type 3),
netns-id 3 (s32); NETDEV_CMD_QUEUE_CREATE 16.  The reply's layout follows
net/core/netdev-genl.c: queue-create answers with the id only,
netdev_nl_queue_fill_lease() writes queue, then ifindex, then netns-id.
"""

import struct

from irqtune.kernel import caps
from irqtune.kernel.netlink.genl import NLA_F_NESTED
from irqtune.kernel.netlink.netdev import (CMD_QUEUE_CREATE, CMD_QUEUE_GET, LeaseFamily,
                                           QueueLease)

FAMILY_ID = 30


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


def test_queue_create_sends_the_lease_nest_the_kernel_parses():
    fam = Scripted(genl_message(CMD_QUEUE_CREATE, 1, u32(1, 1)) + ack(1))
    assert fam.create(7, 3, 2, netns_id=0) == 1
    sent = fam.sent[0]
    assert struct.unpack_from("=HBB", sent, 4)[0] == FAMILY_ID
    assert sent[16] == CMD_QUEUE_CREATE
    attrs = sent[20:]
    assert attrs == (u32(2, 7) + u32(3, 0)
                     + nest(8, u32(1, 3), nest(2, u32(1, 2), u32(3, 0)), s32(3, 0)))


def test_queue_create_without_a_namespace_id_leaves_the_attribute_out():
    fam = Scripted(genl_message(CMD_QUEUE_CREATE, 1, u32(1, 2)) + ack(1))
    assert fam.create(7, 3, 5) == 2
    assert fam.sent[0][20:] == u32(2, 7) + u32(3, 0) + nest(8, u32(1, 3), nest(2, u32(1, 5),
                                                                               u32(3, 0)))


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

