# SPDX-License-Identifier: GPL-2.0-or-later
"""A NAPI reader/writer independent of the library under test.

Plain AF_NETLINK sockets and struct, no pyroute2 and no irqtune code, so
that the tests (integration, netlink, crash harness, labs) check what the
kernel holds, not what the library believes.  It imports nothing but the
standard library - not even the rest of `support` - so that it stays
independent and lab guests can run it from the repository share.
Attribute numbers from the kernel's netdev.yaml.
"""

import os
import socket
import struct

GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
NLM_F_REQUEST, NLM_F_ACK, NLM_F_DUMP = 1, 4, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
QUEUE_GET, NAPI_GET, NAPI_SET = 10, 11, 14
QUEUE_TYPE_RX = 0
ATTRS = {1: "ifindex", 2: "id", 3: "irq", 4: "pid", 5: "defer-hard-irqs",
         6: "gro-flush-timeout", 7: "irq-suspend-timeout", 8: "threaded"}
NUMBERS = {v: k for k, v in ATTRS.items()}


def _nla(kind, payload):
    data = struct.pack("=HH", 4 + len(payload), kind) + payload
    return data + b"\0" * (-len(data) % 4)


def _parse(data):
    out, off = {}, 0
    while off + 4 <= len(data):
        length, kind = struct.unpack_from("=HH", data, off)
        if length < 4:
            break
        out[kind & 0x3FFF] = data[off + 4:off + length]
        off += (length + 3) & ~3
    return out


class RawGenl:
    def __init__(self, family="netdev"):
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 16)
        self.sock.bind((0, 0))
        self.seq = 0
        reply = self._talk(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 0,
                           _nla(CTRL_ATTR_FAMILY_NAME, family.encode() + b"\0"))
        self.family = struct.unpack("=H", reply[0][CTRL_ATTR_FAMILY_ID][:2])[0]

    def close(self):
        self.sock.close()

    def _talk(self, msg_type, cmd, flags, payload):
        self.seq += 1
        body = struct.pack("=BBH", cmd, 1, 0) + payload
        self.sock.send(struct.pack("=IHHII", 16 + len(body), msg_type,
                                   NLM_F_REQUEST | flags, self.seq, 0) + body)
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
                replies.append(_parse(data[off + 20:off + length]))
                if not flags & (NLM_F_DUMP | NLM_F_ACK):
                    return replies
                off += (length + 3) & ~3

    def napis(self, ifname):
        """[{attr name: int}] of a device's NAPIs, sorted by id."""
        ifindex = socket.if_nametoindex(ifname)
        out = []
        for attrs in self._talk(self.family, NAPI_GET, NLM_F_DUMP,
                                _nla(1, struct.pack("=I", ifindex))):
            out.append({ATTRS[k]: int.from_bytes(v, "little")
                        for k, v in attrs.items() if k in ATTRS})
        return sorted(out, key=lambda n: n["id"])

    def rx_queues(self, ifname):
        """{rx queue index: napi id} for drivers that link queues to NAPIs."""
        ifindex = socket.if_nametoindex(ifname)
        out = {}
        for attrs in self._talk(self.family, QUEUE_GET, NLM_F_DUMP,
                                _nla(2, struct.pack("=I", ifindex))):
            num = {k: int.from_bytes(v, "little") for k, v in attrs.items()}
            if num.get(3) == QUEUE_TYPE_RX and 4 in num:
                out[num[1]] = num[4]
        return out

    def set(self, napi_id, **values):
        payload = _nla(2, struct.pack("=I", napi_id))
        for name, value in values.items():
            kind = NUMBERS[name.replace("_", "-")]
            fmt = "=Q" if kind in (6, 7) else "=I"
            payload += _nla(kind, struct.pack(fmt, value))
        self._talk(self.family, NAPI_SET, NLM_F_ACK, payload)
