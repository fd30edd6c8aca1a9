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

from irqtune_bench.netlink import NAPI_ATTRS, NLM_F_ACK, Netdev, nla

NAPI_SET = 14
NUMBERS = {v: k for k, v in NAPI_ATTRS.items()}
WIDE = ("gro-flush-timeout", "irq-suspend-timeout")    # u64, nanoseconds


class RawGenl(Netdev):
    """The netdev family: napis(ifname), rx_queues(ifname) (the bench's
    reads) and set(napi_id, **values)."""

    def set(self, napi_id, **values):
        payload = nla(NUMBERS["id"], struct.pack("=I", napi_id))
        for name, value in values.items():
            name = name.replace("_", "-")
            payload += nla(NUMBERS[name], struct.pack("=Q" if name in WIDE else "=I", value))
        self._talk(self.family, NAPI_SET, NLM_F_ACK, payload)
