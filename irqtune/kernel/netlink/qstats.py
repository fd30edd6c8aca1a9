# SPDX-License-Identifier: GPL-2.0-or-later
"""qstats-get of the netdev family: per-queue packet counters (6.10+).

Attribute numbers from Documentation/netlink/specs/netdev.yaml (attribute
set "qstats"); pyroute2 names attributes by position, so the table keeps
the kernel's numbering with placeholders for the gap before rx-packets.
"""

from .genl import GenlFamily, netdev_genlmsg_base

CMD_QSTATS_GET = 12
SCOPE_QUEUE = 1
QUEUE_TYPE_RX = 0


class qstats_msg(netdev_genlmsg_base):
    nla_prefix = "NETDEV_A_QSTATS_"
    nla_map = (
        ("NETDEV_A_QSTATS_UNSPEC", "none"),
        ("NETDEV_A_QSTATS_IFINDEX", "uint32"),
        ("NETDEV_A_QSTATS_QUEUE_TYPE", "uint32"),
        ("NETDEV_A_QSTATS_QUEUE_ID", "uint32"),
        ("NETDEV_A_QSTATS_SCOPE", "uint"),
        ("NETDEV_A_QSTATS_UNUSED_5", "none"),
        ("NETDEV_A_QSTATS_UNUSED_6", "none"),
        ("NETDEV_A_QSTATS_UNUSED_7", "none"),
        ("NETDEV_A_QSTATS_RX_PACKETS", "uint"),
        ("NETDEV_A_QSTATS_RX_BYTES", "uint"),
    )


class QstatsFamily(GenlFamily):
    """Per-queue statistics of drivers that keep them (virtio_net, netdevsim,
    most current NIC drivers)."""

    family = "netdev"
    message = qstats_msg

    def rx_packets(self, ifindex):
        """{rx queue index: packets received} of a device's active rx queues
        (empty when the driver keeps no per-queue statistics)."""
        counts = {}
        for q in self.dump("dumping queue statistics of ifindex %d" % ifindex, CMD_QSTATS_GET,
                            ifindex=ifindex, scope=SCOPE_QUEUE):
            if q.get("queue-type") == QUEUE_TYPE_RX and "rx-packets" in q:
                counts[q["queue-id"]] = q["rx-packets"]
        return counts
