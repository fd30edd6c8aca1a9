# SPDX-License-Identifier: GPL-2.0-or-later
"""`irqtune status`: what the kernel offers and what each NAPI holds;
`--watch`: per-NAPI interrupt and busy-poll rates, from the counters of
irqtune.shared.counters."""

import sys
import time
from contextlib import suppress

from ..features.zerocopy import held_leases
from ..kernel.caps import detect_napi_capabilities
from ..kernel.errors import IrqtuneError
from ..kernel.names import LINE_MAX, shown
from ..kernel.napi_attrs import NAPI_ATTRS
from ..kernel.netdevs import interfaces
from ..kernel.netlink.netdev import NapiFamily
from ..shared.counters import busy_poll_rx_packets, rates, sample

COLUMNS = tuple(a.name for a in NAPI_ATTRS) + ("irq",)


def table(devices):
    known = interfaces()
    caps = detect_napi_capabilities()
    print("netdev family: %s, napi-set: %s, settable: %s"
          % (caps.netdev_family, caps.napi_set, ", ".join(sorted(caps.settable)) or "-"))
    print("kernel: %s" % caps.kernel.describe())
    for line in caps.lacking():
        print("missing: %s" % shown(line, LINE_MAX))
    if not caps.napi_get:
        return 0
    print("%-12s %6s " % ("device", "napi") + " ".join("%20s" % c for c in COLUMNS))
    with NapiFamily() as nl:
        for dev in devices or known:
            for napi in nl.napis(known[dev]):
                print("%-12s %6d " % (shown(dev), napi["id"])
                      + " ".join("%20s" % napi.get(c, "-") for c in COLUMNS))
    # rx queues leased to containers' netkit devices (Linux 7.1), by anyone
    for lease in held_leases({dev: known[dev] for dev in devices or known}):
        print("lease: %s" % shown(lease.describe(), LINE_MAX))
    return 0


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


def command(devices, watch_interval=None, count=None):
    """The table or the watch: exit 0, or 1 with one line on stderr."""
    try:
        if watch_interval is None:
            return table(devices)
        with suppress(KeyboardInterrupt):       # ^C ends the watch, not an error
            watch(devices, watch_interval, count, out=lambda s: print(s, flush=True))
        return 0
    except IrqtuneError as err:
        print("irqtune status: %s" % shown(err, LINE_MAX), file=sys.stderr)
        return 1
