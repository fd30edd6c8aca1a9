# SPDX-License-Identifier: GPL-2.0-or-later
"""QueueFamily.rx_queue_napis and QstatsFamily.rx_packets on netdev netlink
replies recorded from a real kernel (netdev_replies/<source>/*.json,
recorded with netdev_replies/record.py; each file names the kernel and
device): this project's build host, Linux 6.18.44, virtio-net eth0 with one
queue pair.  Its queue-get dump lists rx queue 0 (linked to NAPI 257)
and tx queue 0 with the same id; its qstats-get dump lists both queues
too, the tx one with tx counters only.  Only the rx entries may be taken:
the fakes (support/fakes/netdev.py) stand in for these methods whole, so
the queue-type filter is tested here and nowhere else.
"""

import json
import os

from support.fakes.replay import Replay

from irqtune.kernel.netlink.genl import decode
from irqtune.kernel.netlink.netdev import (CMD_QSTATS_GET, CMD_QUEUE_GET, QUEUE_TYPE_RX,
                                           SCOPE_QUEUE, QstatsFamily, QueueFamily, qstats_msg,
                                           queue_msg)

HERE = os.path.join(os.path.dirname(__file__), "netdev_replies")
SOURCE = "virtio-net-6.18"


def recorded(name):
    with open(os.path.join(HERE, SOURCE, name + ".json")) as f:
        return json.load(f)


class ReplayedQueues(Replay, QueueFamily):
    pass


class ReplayedQstats(Replay, QstatsFamily):
    pass


def test_rx_queue_napis_takes_the_rx_queues_of_a_dump_that_lists_tx_queues_too():
    fam = ReplayedQueues(recorded("queue_get"))
    assert fam.rx_queue_napis(4) == {0: 257}
    assert decode(queue_msg, fam.sent[0])["ifindex"] == 4


def test_rx_packets_takes_the_rx_queues_of_a_dump_that_lists_tx_queues_too():
    fam = ReplayedQstats(recorded("qstats_get"))
    packets = fam.rx_packets(4)
    assert packets == {0: 37985}
    request = decode(qstats_msg, fam.sent[0])
    assert (request["ifindex"], request["scope"]) == (4, SCOPE_QUEUE)


def test_the_recordings_list_a_tx_queue_beside_the_rx_queue():
    """What makes the two tests above able to fail: each dump holds a
    queue of another type with the same queue id."""
    queues = ReplayedQueues(recorded("queue_get"))
    types = sorted((q["id"], q["type"]) for q in queues.dump("q", CMD_QUEUE_GET, ifindex=4))
    assert types == [(0, QUEUE_TYPE_RX), (0, 1)]
    stats = ReplayedQstats(recorded("qstats_get"))
    types = sorted((q["queue-id"], q["queue-type"])
                   for q in stats.dump("s", CMD_QSTATS_GET, ifindex=4, scope=SCOPE_QUEUE))
    assert types == [(0, QUEUE_TYPE_RX), (0, 1)]
