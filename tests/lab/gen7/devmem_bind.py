# SPDX-License-Identifier: GPL-2.0-or-later
"""Run in the guest: bind a udmabuf to rx queues with netdev bind-rx.

    PYTHONPATH=/irqtune/bench python3 devmem_bind.py IFNAME QUEUE [QUEUE...]

Does what a devmem TCP application does first (tools/testing/selftests/
drivers/net/hw/ncdevmem.c): a sealed memfd turned into a dmabuf by
/dev/udmabuf, then netdev `bind-rx` (cmd 13) with the ifindex, the queues
and the dmabuf fd.  Plain sockets and struct - no pyroute2, no irqtune.
Prints one JSON object: {"ok": true, "id": n} or {"ok": false, "errno": n,
"error": "EOPNOTSUPP", "extack": "..."}; the binding ends with the process.
"""

import errno
import fcntl
import json
import os
import socket
import struct
import sys

# the attribute codec of the raw reader the bench and the tests share
# (library-independent: standard library only)
from irqtune_bench.netlink import nla, parse

SOL_NETLINK, NETLINK_EXT_ACK = 270, 11
GENL_ID_CTRL, CTRL_CMD_GETFAMILY, CTRL_ATTR_FAMILY_ID, CTRL_ATTR_FAMILY_NAME = 0x10, 3, 1, 2
NLMSG_ERROR, NLM_F_REQUEST, NLM_F_ACK = 2, 1, 4
NLM_F_CAPPED, NLM_F_ACK_TLVS, NLMSGERR_ATTR_MSG = 0x100, 0x200, 1
NETDEV_CMD_BIND_RX = 13
DMABUF_IFINDEX, DMABUF_QUEUES, DMABUF_FD, DMABUF_ID = 1, 2, 3, 4
QUEUE_ID, QUEUE_TYPE, QUEUE_TYPE_RX = 1, 3, 0
NLA_F_NESTED = 0x8000
F_ADD_SEALS, F_SEAL_SHRINK = 1033, 0x0002
# _IOW('u', 0x42, struct udmabuf_create): 24 bytes
UDMABUF_CREATE = (1 << 30) | (24 << 16) | (ord("u") << 8) | 0x42
UDMABUF_FLAGS_CLOEXEC = 1
SIZE = 64 * 4096


def talk(sock, family, cmd, payload, seq):
    """(attrs of the reply or None, errno, extack)."""
    body = struct.pack("=BBH", cmd, 1, 0) + payload
    sock.send(struct.pack("=IHHII", 16 + len(body), family, NLM_F_REQUEST | NLM_F_ACK, seq, 0)
              + body)
    reply = None
    while True:
        data = sock.recv(1 << 16)
        off = 0
        while off + 16 <= len(data):
            length, kind, flags, mseq, _ = struct.unpack_from("=IHHII", data, off)
            if mseq == seq and kind == NLMSG_ERROR:
                code = -struct.unpack_from("=i", data, off + 16)[0]
                extack = None
                if flags & NLM_F_ACK_TLVS:
                    echoed = 16 if (flags & NLM_F_CAPPED or not code) else \
                        struct.unpack_from("=I", data, off + 20)[0]
                    tlvs = parse(data[off + 20 + echoed:off + length])
                    if NLMSGERR_ATTR_MSG in tlvs:
                        extack = tlvs[NLMSGERR_ATTR_MSG].rstrip(b"\0").decode()
                return reply, code, extack
            if mseq == seq:
                reply = parse(data[off + 20:off + length])
            off += (length + 3) & ~3


def udmabuf():
    memfd = os.memfd_create("irqtune-devmem", os.MFD_ALLOW_SEALING)
    os.ftruncate(memfd, SIZE)
    fcntl.fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK)
    dev = os.open("/dev/udmabuf", os.O_RDWR)
    arg = bytearray(struct.pack("=IIQQ", memfd, UDMABUF_FLAGS_CLOEXEC, 0, SIZE))
    return fcntl.ioctl(dev, UDMABUF_CREATE, arg)


def main(ifname, *queues):
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 16)
    sock.bind((0, 0))
    sock.setsockopt(SOL_NETLINK, NETLINK_EXT_ACK, 1)
    reply, code, extack = talk(sock, GENL_ID_CTRL, CTRL_CMD_GETFAMILY,
                               nla(CTRL_ATTR_FAMILY_NAME, b"netdev\0"), 1)
    family = struct.unpack("=H", reply[CTRL_ATTR_FAMILY_ID][:2])[0]
    dmabuf = udmabuf()
    payload = nla(DMABUF_IFINDEX, struct.pack("=I", socket.if_nametoindex(ifname)))
    payload += nla(DMABUF_FD, struct.pack("=I", dmabuf))
    for q in queues:
        payload += nla(DMABUF_QUEUES | NLA_F_NESTED,
                       nla(QUEUE_ID, struct.pack("=I", int(q)))
                       + nla(QUEUE_TYPE, struct.pack("=I", QUEUE_TYPE_RX)))
    reply, code, extack = talk(sock, family, NETDEV_CMD_BIND_RX, payload, 2)
    if code:
        print(json.dumps({"ok": False, "errno": code, "error": errno.errorcode.get(code, str(code)),
                          "extack": extack}))
    else:
        print(json.dumps({"ok": True, "id": struct.unpack("=I", reply[DMABUF_ID][:4])[0]}))


if __name__ == "__main__":
    main(*sys.argv[1:])
