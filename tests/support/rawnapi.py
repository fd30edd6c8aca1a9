# SPDX-License-Identifier: GPL-2.0-or-later
"""A NAPI reader/writer independent of the library under test.

Plain AF_NETLINK sockets and struct, no pyroute2 and no irqtune code, so
that the tests (integration, netlink, crash harness, labs) check what the
kernel holds, not what the library believes.  The reading is the bench's
(bench/irqtune_bench/netlink.py, the read-back `irqtune-bench` checks its
modes by, which imports only the standard library too); this adds the
napi-set the tests put values in with.  It imports nothing else - not
even the rest of `support` - so it stays independent and lab guests run
it from the repository share (tests/ and bench/ on their PYTHONPATH).
Attribute numbers from the kernel's netdev.yaml.
"""

import struct

import socket

from irqtune_bench.netlink import (NAPI_ATTRS, NLM_F_ACK, NLM_F_DUMP, QUEUE_GET, QUEUE_TYPE_RX,
                                   Netdev, nla, parse)

NAPI_SET = 14
QUEUE_LEASE, LEASE_IFINDEX, LEASE_QUEUE, LEASE_NETNS_ID = 8, 1, 2, 3
NUMBERS = {v: k for k, v in NAPI_ATTRS.items()}
WIDE = ("gro-flush-timeout", "irq-suspend-timeout")    # u64, nanoseconds


class RawGenl(Netdev):
    """The netdev family: napis(ifname), rx_queues(ifname) (the bench's
    reads), set(napi_id, **values) and the leases of a lender's queues."""

    def rx_leases(self, ifname):
        """{rx queue: {"ifindex", "queue", "netns-id" (absent: same namespace)}}
        of the lender's leased rx queues (queue-get, Linux 7.1)."""
        ifindex = struct.pack("=I", socket.if_nametoindex(ifname))
        out = {}
        for attrs in self._talk(self.family, QUEUE_GET, NLM_F_DUMP, nla(2, ifindex)):
            if QUEUE_LEASE not in attrs or int.from_bytes(attrs[3], "little") != QUEUE_TYPE_RX:
                continue
            lease = parse(attrs[QUEUE_LEASE])
            far = {"ifindex": struct.unpack("=I", lease[LEASE_IFINDEX])[0],
                   "queue": struct.unpack("=I", parse(lease[LEASE_QUEUE])[1])[0]}
            if LEASE_NETNS_ID in lease:
                far["netns-id"] = struct.unpack("=i", lease[LEASE_NETNS_ID])[0]
            out[struct.unpack("=I", attrs[1])[0]] = far
        return out

    def queue_ids(self, ifname, queue_type=QUEUE_TYPE_RX):
        """The queue ids of one type a device lists (queue-get)."""
        ifindex = struct.pack("=I", socket.if_nametoindex(ifname))
        return sorted(struct.unpack("=I", a[1])[0]
                      for a in self._talk(self.family, QUEUE_GET, NLM_F_DUMP, nla(2, ifindex))
                      if int.from_bytes(a[3], "little") == queue_type)

    def set(self, napi_id, **values):
        payload = nla(NUMBERS["id"], struct.pack("=I", napi_id))
        for name, value in values.items():
            name = name.replace("_", "-")
            payload += nla(NUMBERS[name], struct.pack("=Q" if name in WIDE else "=I", value))
        self._talk(self.family, NAPI_SET, NLM_F_ACK, payload)
