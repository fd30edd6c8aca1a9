# SPDX-License-Identifier: GPL-2.0-or-later
"""irqtune.shared.counters and irqtune.frontends.status: queue numbers from IRQ names, rates
and their summary."""

import pytest

from irqtune.kernel.kfs import KernelFs
from irqtune.shared.counters import NapiCounters, busy_poll_rx_packets, rates, rx_queue_of
from irqtune.frontends.status import format_rates


@pytest.mark.parametrize("name,queue", [
    ("virtio0-input.2", 2),            # virtio_net (lab guest /proc/interrupts)
    ("virtio0-output.2", None),
    ("virtio0-config", None),
    ("i40e-eth0-TxRx-3", 3),           # i40e
    ("ice-ens1f0-TxRx-5", 5),          # ice
    ("eth0-rx-1", 1),
    ("eth0-tx-1", None),
    ("", None),
])
def test_rx_queue_of(name, queue):
    assert rx_queue_of(name) == queue


def counters(irqs, packets):
    return [NapiCounters(8193 + i, i, 40 + i, irq, pkt)
            for i, (irq, pkt) in enumerate(zip(irqs, packets))]


def test_rates_per_napi_and_busy_share():
    before = counters([100, 100], [1000, 1000])
    after = counters([300, 100], [2000, 3000])
    rows, summary = rates(before, after, 2.0, busy_before=50, busy_after=1550)
    assert [(r["napi"], r["irq_s"], r["rx_s"]) for r in rows] == [(8193, 100, 500), (8194, 0, 1000)]
    assert rows[0]["pkts_per_irq"] == 5 and rows[1]["pkts_per_irq"] is None
    assert summary == {"rx_s": 1500, "busy_poll_s": 750, "busy_share": 0.5}
    text = format_rates("eth0", rows, summary)
    assert "50 %" in text and "8194" in text


def test_rates_without_queue_stats_or_new_napis():
    before = counters([5], [None])
    after = counters([5, 9], [None, None])
    rows, summary = rates(before, after, 1.0, 0, 0)
    assert [r["napi"] for r in rows] == [8193]
    assert rows[0]["rx_s"] is None and summary["busy_share"] is None


def test_busy_poll_counter(tmp_path):
    # Layout of /proc/net/netstat (6.18 host, abridged to the TcpExt rows).
    (tmp_path / "net").mkdir()
    (tmp_path / "net/netstat").write_text(
        "TcpExt: SyncookiesSent BusyPollRxPackets TCPAutoCorking\n"
        "TcpExt: 0 1234 7\n"
        "IpExt: InNoRoutes\nIpExt: 0\n")
    assert busy_poll_rx_packets(KernelFs(proc=str(tmp_path))) == 1234
