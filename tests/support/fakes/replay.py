# SPDX-License-Identifier: GPL-2.0-or-later
"""A generic netlink family's transport answering from replies the kernel
gave, recorded (tests/unit/kernel/ethtool_replies, netdev_replies: each
file's "replies" are the receive buffers in hex, byte for byte).  Mixed in
before a family class of irqtune.kernel.netlink, it stands in for the
socket: what the family sends is kept in `sent`, and each receive returns
the next recorded buffer with its sequence numbers made the request's."""

import struct


class Replay:
    """A generic netlink family's transport answering from one recorded
    file (mixed in before the family class; the netdev families' tests use
    it too)."""

    def __init__(self, recorded):
        # (buffer, whether its sequence numbers become the request's)
        self.buffers = [(bytearray(bytes.fromhex(b)), True) for b in recorded["replies"]]
        first = self.buffers[0][0]
        prid = struct.unpack_from("=H", first, 4)[0]
        if prid == 2:     # first message is an error: its echoed request has the id
            prid = struct.unpack_from("=H", first, 24)[0]
        self.family_id, self.groups = prid, {}     # no monitor socket in replays
        self.sent = []

    def _send(self, data):
        self.sent.append(data)

    def _recv(self):
        # The recording's sequence number becomes this request's.
        seq = struct.unpack_from("=I", self.sent[-1], 8)[0]
        data, patch = self.buffers.pop(0)
        offset = 0
        while patch and offset + 16 <= len(data):
            length = struct.unpack_from("=I", data, offset)[0]
            struct.pack_into("=I", data, offset + 8, seq)
            offset += (length + 3) & ~3
        return bytes(data)

    def close(self):
        pass
