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

The measured window of `irqtune doctor` (measure) counts a few seconds of
the current traffic per NAPI of the devices in scope; the busy-polled
share is that of those devices together.  Devices whose driver keeps no
per-queue statistics (veth) are counted per device from /proc/net/dev.
"""

import re
import time
from dataclasses import dataclass, field

from ..kernel.errors import IrqtuneError
from ..kernel.irqs import nic_queue_irqs, read_interrupts
from ..kernel.kfs import KFS
from ..kernel.names import shown
from ..kernel.netdevs import ifindex_of
from ..kernel.netlink import netdev

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
    ifindex = ifindex_of(ifname)
    if ifindex is None:     # named on the command line, then removed or renamed
        raise IrqtuneError("device %s: no such device in this network namespace (any more)"
                           % shown(ifname, quote=True))
    with netdev.NapiFamily() as nl:
        napis = nl.napis(ifindex)
    with netdev.QueueFamily() as ql:
        queue_of = {napi: q for q, napi in ql.rx_queue_napis(ifindex).items()}
    try:
        with netdev.QstatsFamily() as qs:
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


# The longest window the doctor measures.
MAX_SECONDS = 60.0


@dataclass
class Window:
    seconds: float
    napis: list = field(default_factory=list)     # dicts: device, napi, irq, irq_s, rx_s
    devices: dict = field(default_factory=dict)   # device: rx packets/s
    busy_poll_s: float = 0.0

    @property
    def rx_s(self):
        return sum(self.devices.values())

    @property
    def busy_share(self):
        return min(1.0, self.busy_poll_s / self.rx_s) if self.rx_s else None


def device_rx_packets(kfs=KFS):
    """{device: rx packets} of this thread's network namespace (/proc/net/dev)."""
    counts = {}
    text = kfs.read_text(kfs.proc_path("thread-self/net/dev"))
    for line in text.splitlines()[2:]:
        name, _, fields = line.partition(":")
        if fields.split():
            counts[name.strip()] = int(fields.split()[1])
    return counts


def _snapshot(devices, kfs):
    counters = {}
    for dev in devices:
        try:
            counters[dev] = sample(dev, kfs)
        except (OSError, IrqtuneError):
            counters[dev] = []
    return counters, device_rx_packets(kfs), busy_poll_rx_packets(kfs)


def measure(devices, seconds, kfs=KFS):
    """Window over seconds (bounded by MAX_SECONDS) for the named devices."""
    seconds = min(max(seconds, 0.5), MAX_SECONDS)
    before, dev_before, busy_before = _snapshot(devices, kfs)
    t0 = time.monotonic()
    time.sleep(seconds)
    after, dev_after, busy_after = _snapshot(devices, kfs)
    elapsed = max(time.monotonic() - t0, 1e-3)
    window = Window(elapsed, busy_poll_s=max(0, busy_after - busy_before) / elapsed)
    for dev in devices:
        rows, summary = rates(before[dev], after[dev], elapsed, busy_before, busy_after)
        for r in rows:
            window.napis.append(dict(r, device=dev))
        if any(r["rx_s"] is not None for r in rows):
            window.devices[dev] = summary["rx_s"]
        elif dev in dev_before and dev in dev_after:
            window.devices[dev] = max(0, dev_after[dev] - dev_before[dev]) / elapsed
    return window
