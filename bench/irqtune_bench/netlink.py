# SPDX-License-Identifier: GPL-2.0-or-later
"""What the kernel's netdev family says, read without the library under
test: plain AF_NETLINK sockets and struct (no pyroute2, no irqtune code),
so the bench's read-back checks what the kernel holds, not what irqtune
believes.  The bench only reads.  Attribute numbers from the kernel's
Documentation/netlink/specs/netdev.yaml.

The test suites' independent reader (tests/support/rawnapi.py) is this
module plus a napi-set, so it stays standard library only and its
request loop reads a write's acknowledgement too.
"""

import os
import socket
import struct

GENL_ID_CTRL, CTRL_CMD_GETFAMILY = 0x10, 3
CTRL_ATTR_FAMILY_ID, CTRL_ATTR_FAMILY_NAME = 1, 2
NLM_F_REQUEST, NLM_F_ACK, NLM_F_DUMP = 1, 4, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
QUEUE_GET, NAPI_GET, QSTATS_GET = 10, 11, 12
QUEUE_TYPE_RX = 0
NAPI_ATTRS = {1: "ifindex", 2: "id", 3: "irq", 4: "pid", 5: "defer-hard-irqs",
              6: "gro-flush-timeout", 7: "irq-suspend-timeout", 8: "threaded"}
QSTATS_IFINDEX, QSTATS_QUEUE_TYPE, QSTATS_QUEUE_ID, QSTATS_SCOPE, QSTATS_RX_PACKETS = 1, 2, 3, 4, 8
QSTATS_SCOPE_QUEUE = 1


def nla(kind, payload):
    data = struct.pack("=HH", 4 + len(payload), kind) + payload
    return data + b"\0" * (-len(data) % 4)


def parse(data):
    out, off = {}, 0
    while off + 4 <= len(data):
        length, kind = struct.unpack_from("=HH", data, off)
        if length < 4:
            break
        out[kind & 0x3FFF] = data[off + 4:off + length]
        off += (length + 3) & ~3
    return out


def _numbers(attrs):
    return {k: int.from_bytes(v, "little") for k, v in attrs.items()}


class Netdev:
    """The netdev generic netlink family: dumps only."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 16)   # NETLINK_GENERIC
        self.sock.bind((0, 0))
        self.seq = 0
        reply = self._talk(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 0,
                           nla(CTRL_ATTR_FAMILY_NAME, b"netdev\0"))
        self.family = struct.unpack("=H", reply[0][CTRL_ATTR_FAMILY_ID][:2])[0]

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _talk(self, msg_type, cmd, flags, payload):
        self.seq += 1
        body = struct.pack("=BBH", cmd, 1, 0) + payload
        self.sock.send(struct.pack("=IHHII", 16 + len(body), msg_type, NLM_F_REQUEST | flags,
                                   self.seq, 0) + body)
        replies = []
        while True:
            data = self.sock.recv(1 << 16)
            off = 0
            while off < len(data):
                length, kind, _, _, _ = struct.unpack_from("=IHHII", data, off)
                if kind == NLMSG_DONE:
                    return replies
                if kind == NLMSG_ERROR:
                    code = struct.unpack_from("=i", data, off + 16)[0]
                    if code:
                        raise OSError(-code, os.strerror(-code))
                    return replies
                replies.append(parse(data[off + 20:off + length]))
                if not flags & (NLM_F_DUMP | NLM_F_ACK):   # else: to the done or the ack
                    return replies
                off += (length + 3) & ~3

    def napis(self, ifname):
        """[{attr name: int}] of a device's NAPIs (napi-get), sorted by id."""
        ifindex = struct.pack("=I", socket.if_nametoindex(ifname))
        out = [{NAPI_ATTRS[k]: v for k, v in _numbers(attrs).items() if k in NAPI_ATTRS}
               for attrs in self._talk(self.family, NAPI_GET, NLM_F_DUMP, nla(1, ifindex))]
        return sorted(out, key=lambda n: n["id"])

    def rx_queues(self, ifname):
        """{rx queue index: napi id} (queue-get) of drivers that link them."""
        ifindex = struct.pack("=I", socket.if_nametoindex(ifname))
        out = {}
        for attrs in self._talk(self.family, QUEUE_GET, NLM_F_DUMP, nla(2, ifindex)):
            num = _numbers(attrs)
            if num.get(3) == QUEUE_TYPE_RX and 4 in num:
                out[num[1]] = num[4]
        return out

    def rx_packets_per_queue(self, ifname):
        """{rx queue: packets} from qstats-get, queue scope ({} where the
        driver keeps no per-queue statistics there)."""
        payload = (nla(QSTATS_IFINDEX, struct.pack("=I", socket.if_nametoindex(ifname)))
                   + nla(QSTATS_SCOPE, struct.pack("=I", QSTATS_SCOPE_QUEUE)))
        try:
            replies = self._talk(self.family, QSTATS_GET, NLM_F_DUMP, payload)
        except OSError:
            return {}
        out = {}
        for attrs in replies:
            num = _numbers(attrs)
            if num.get(QSTATS_QUEUE_TYPE) == QUEUE_TYPE_RX and QSTATS_RX_PACKETS in num:
                out[num[QSTATS_QUEUE_ID]] = num[QSTATS_RX_PACKETS]
        return out
