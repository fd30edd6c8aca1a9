# SPDX-License-Identifier: GPL-2.0-or-later
"""Per-NAPI counters the kernel keeps, and rates between two samples:
what `irqtune status --watch`, the doctor's window and the metrics show.

An administrator cannot see IRQ suspension directly; its observables are
counters the kernel already keeps:

- interrupts of each NAPI's queue vector (/proc/interrupts): they fall
  towards zero while an opted-in epoll loop keeps the NAPI's IRQ suspended;
- rx packets of each NAPI's queue (netdev qstats, per queue): the traffic
  keeps flowing meanwhile, so packets per interrupt rise;
- packets taken by busy polling (TcpExt:BusyPollRxPackets): the kernel
  counts them per network namespace, not per NAPI, so their share is
  shown per device against the device's rx packets.

A NAPI's queue vector is napi-get's ``irq`` where the driver reports it,
else the queue vector whose name carries the rx queue number
(``virtio0-input.2``, ``eth0-TxRx-2``).
"""

import re
import socket
from dataclasses import dataclass

from ..kernel.errors import IrqtuneError
from ..kernel.interrupts import read_interrupts
from ..kernel.irqs import nic_queue_irqs
from ..kernel.kfs import KFS
from ..kernel.names import shown
from ..kernel.netlink import netdev, qstats

_RX_QUEUE = re.compile(r"(?i)(?:input|rx|txrx|combined|queue|que|ch|fp)[-_.]?(\d+)\b")
_TX_ONLY = re.compile(r"(?i)(?:^|[^a-z])(?:output|tx)[-_.]?\d+")


@dataclass
class NapiCounters:
    napi_id: int
    queue: object       # rx queue index, or None when the driver links none
    irq: object         # queue vector, or None when none was found
    interrupts: int
    rx_packets: object  # None when the driver keeps no per-queue statistics


def rx_queue_of(name):
    """The rx queue number in an IRQ action name, or None (tx-only names)."""
    if not name or (_TX_ONLY.search(name) and not re.search(r"(?i)txrx|combined", name)):
        return None
    m = _RX_QUEUE.search(name)
    return int(m.group(1)) if m else None


def busy_poll_rx_packets(kfs=KFS):
    """TcpExt:BusyPollRxPackets of the caller's network namespace."""
    text = kfs.read_text(kfs.proc_path("net/netstat"))
    rows = [line.split() for line in text.splitlines() if line.startswith("TcpExt:")]
    if len(rows) < 2:
        return 0
    return int(dict(zip(rows[0][1:], rows[1][1:])).get("BusyPollRxPackets", 0))


def sample(ifname, kfs=KFS):
    """[NapiCounters] of ifname's NAPIs now."""
    try:
        ifindex = socket.if_nametoindex(ifname)
    except OSError:     # named on the command line, then removed or renamed
        raise IrqtuneError("device %s: no such device in this network namespace (any more)"
                           % shown(ifname, quote=True)) from None
    with netdev.NapiFamily() as nl:
        napis = nl.napis(ifindex)
    with netdev.QueueFamily() as ql:
        queue_of = {napi: q for q, napi in ql.rx_queue_napis(ifindex).items()}
    try:
        with qstats.QstatsFamily() as qs:
            packets = qs.rx_packets(ifindex)
    except IrqtuneError:   # drivers without per-queue stats: EOPNOTSUPP
        packets = {}
    counts = {irq: info.count for irq, info in read_interrupts(kfs).items()}
    irq_of_queue = {}
    for q in nic_queue_irqs(ifname, kfs, napi=()):
        queue = rx_queue_of(q.name)
        if queue is not None:
            irq_of_queue.setdefault(queue, q.irq)
    out = []
    for n in sorted(napis, key=lambda n: n["id"]):
        queue = queue_of.get(n["id"])
        irq = n.get("irq", irq_of_queue.get(queue))
        out.append(NapiCounters(n["id"], queue, irq, counts.get(irq, 0) if irq is not None else 0,
                                packets.get(queue)))
    return out


def rates(before, after, seconds, busy_before, busy_after):
    """Rows of per-NAPI rates between two samples, and the device summary."""
    old = {c.napi_id: c for c in before}
    rows = []
    rx_total = 0.0
    for c in after:
        prev = old.get(c.napi_id)
        if prev is None:
            continue
        irq_s = (c.interrupts - prev.interrupts) / seconds
        rx_s = None
        if c.rx_packets is not None and prev.rx_packets is not None:
            rx_s = max(0, c.rx_packets - prev.rx_packets) / seconds
            rx_total += rx_s
        rows.append({"napi": c.napi_id, "queue": c.queue, "irq": c.irq, "irq_s": irq_s,
                     "rx_s": rx_s, "pkts_per_irq": (rx_s / irq_s) if rx_s is not None and irq_s else None})
    busy_s = (busy_after - busy_before) / seconds
    share = min(1.0, busy_s / rx_total) if rx_total else None
    return rows, {"rx_s": rx_total, "busy_poll_s": busy_s, "busy_share": share}
