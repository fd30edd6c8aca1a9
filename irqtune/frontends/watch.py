# SPDX-License-Identifier: GPL-2.0-or-later
"""`irqtune status --watch`: per-NAPI interrupt and busy-poll rates, from
the counters of irqtune.services.counters."""

import time

from ..kernel.names import shown
from ..services.counters import busy_poll_rx_packets, rates, sample


def _fmt(value, spec):
    return "-" if value is None else format(value, spec)


def format_rates(ifname, rows, summary):
    ifname = shown(ifname)
    lines = ["%-12s %6s %5s %5s %10s %10s %8s" % ("device", "napi", "queue", "irq", "irq/s",
                                                   "rx pkt/s", "pkt/irq")]
    for r in rows:
        lines.append("%-12s %6d %5s %5s %10s %10s %8s" % (
            ifname, r["napi"], _fmt(r["queue"], "d"), _fmt(r["irq"], "d"), _fmt(r["irq_s"], ".0f"),
            _fmt(r["rx_s"], ".0f"), _fmt(r["pkts_per_irq"], ".1f")))
    lines.append("%s: %s rx pkt/s, busy polling took %s pkt/s (%s; counted per network namespace)"
                 % (ifname, _fmt(summary["rx_s"], ".0f"), _fmt(summary["busy_poll_s"], ".0f"),
                    "-" if summary["busy_share"] is None else "%.0f %%" % (100 * summary["busy_share"])))
    return "\n".join(lines)


def watch(devices, interval=1.0, count=None, out=print):
    """Print rates every interval seconds (count times, None: forever)."""
    prev = {d: sample(d) for d in devices}
    busy = busy_poll_rx_packets()
    t = time.monotonic()
    n = 0
    while count is None or n < count:
        time.sleep(interval)
        now = time.monotonic()
        busy_now = busy_poll_rx_packets()
        for d in devices:
            cur = sample(d)
            rows, summary = rates(prev[d], cur, now - t, busy, busy_now)
            out(format_rates(d, rows, summary))
            prev[d] = cur
        out("")
        busy, t = busy_now, now
        n += 1
