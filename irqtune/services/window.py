# SPDX-License-Identifier: GPL-2.0-or-later
"""The measured window of `irqtune doctor`: what the kernel counted in a
few seconds of the current traffic, per NAPI of the devices in scope.

The counters are those of `irqtune status --watch` (irqtune.services.counters): queue
vector interrupts (/proc/interrupts), per-queue rx packets (netdev
qstats) and TcpExt:BusyPollRxPackets, which the kernel keeps per network
namespace only - so the busy-polled share is that of the devices in scope
together.  Devices whose driver keeps no per-queue statistics (veth) are
counted per device from /proc/net/dev instead.
"""

import time
from dataclasses import dataclass, field

from ..kernel.errors import IrqtuneError
from ..kernel.kfs import KFS
from .counters import busy_poll_rx_packets, rates, sample

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


def measure(devices, seconds, kfs=KFS, clock=time.monotonic, sleep=time.sleep):
    """Window over seconds (bounded by MAX_SECONDS) for the named devices."""
    seconds = min(max(seconds, 0.5), MAX_SECONDS)
    before, dev_before, busy_before = _snapshot(devices, kfs)
    t0 = clock()
    sleep(seconds)
    after, dev_after, busy_after = _snapshot(devices, kfs)
    elapsed = max(clock() - t0, 1e-3)
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
