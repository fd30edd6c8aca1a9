# SPDX-License-Identifier: GPL-2.0-or-later
"""Client for the netdev generic netlink family: NAPI and queue objects,
per-queue packet counters (qstats-get, 6.10+) and queue leases
(queue-create, 7.1+).

Attribute numbers follow Documentation/netlink/specs/netdev.yaml; pyroute2
names attributes by their position in nla_map, so the tables below must
keep the kernel's order (with placeholders for the gap before qstats'
rx-packets); the NAPI attributes irqtune tunes come from
irqtune.kernel.napi_attrs.
"""

from dataclasses import dataclass

from pyroute2.netlink import NLA_F_NESTED, nla

from ..names import nla_name
from ..napi_attrs import NAPI_ATTRS
from .genl import GenlFamily, NetlinkRequestError, netdev_genlmsg_base

CMD_NAPI_GET = 11
CMD_QUEUE_GET = 10
CMD_QSTATS_GET = 12
CMD_NAPI_SET = 14
CMD_QUEUE_CREATE = 16

QUEUE_TYPE_RX = 0
SCOPE_QUEUE = 1


class napi_msg(netdev_genlmsg_base):
    nla_prefix = "NETDEV_A_NAPI_"
    nla_map = (
        ("NETDEV_A_NAPI_UNSPEC", "none"),
        ("NETDEV_A_NAPI_IFINDEX", "uint32"),
        ("NETDEV_A_NAPI_ID", "uint32"),
        ("NETDEV_A_NAPI_IRQ", "uint32"),
        ("NETDEV_A_NAPI_PID", "uint32"),
    ) + tuple((nla_name("NETDEV_A_NAPI_", a.name), a.nla_type) for a in NAPI_ATTRS)


class queue_msg(netdev_genlmsg_base):
    nla_prefix = "NETDEV_A_QUEUE_"
    nla_map = (
        ("NETDEV_A_QUEUE_UNSPEC", "none"),
        ("NETDEV_A_QUEUE_ID", "uint32"),
        ("NETDEV_A_QUEUE_IFINDEX", "uint32"),
        ("NETDEV_A_QUEUE_TYPE", "uint32"),
        ("NETDEV_A_QUEUE_NAPI_ID", "uint32"),
    )


class lease_msg(netdev_genlmsg_base):
    """The queue attribute set with its lease nest (Linux 7.1): queue-get
    replies of a lender's queues and queue-create.  queue_msg leaves the
    nests out, so that the queue dumps keep the struct codec."""

    nla_prefix = "NETDEV_A_QUEUE_"
    nla_map = (
        ("NETDEV_A_QUEUE_UNSPEC", "none"),
        ("NETDEV_A_QUEUE_ID", "uint32"),
        ("NETDEV_A_QUEUE_IFINDEX", "uint32"),
        ("NETDEV_A_QUEUE_TYPE", "uint32"),
        ("NETDEV_A_QUEUE_NAPI_ID", "uint32"),
        ("NETDEV_A_QUEUE_DMABUF", "uint32"),
        ("NETDEV_A_QUEUE_IO_URING", "none"),
        ("NETDEV_A_QUEUE_XSK", "none"),
        ("NETDEV_A_QUEUE_LEASE", "lease"),
    )

    class lease(nla):
        nla_flags = NLA_F_NESTED
        nla_map = (
            ("NETDEV_A_LEASE_UNSPEC", "none"),
            ("NETDEV_A_LEASE_IFINDEX", "uint32"),
            ("NETDEV_A_LEASE_QUEUE", "queue_id"),
            ("NETDEV_A_LEASE_NETNS_ID", "int32"),
        )

        class queue_id(nla):
            """The queue-id subset: the queue set's numbers (id 1, type 3)."""
            nla_flags = NLA_F_NESTED
            nla_map = (
                ("NETDEV_A_QUEUE_UNSPEC", "none"),
                ("NETDEV_A_QUEUE_ID", "uint32"),
                ("NETDEV_A_QUEUE_IFINDEX", "none"),
                ("NETDEV_A_QUEUE_TYPE", "uint32"),
            )


@dataclass(frozen=True)
class QueueLease:
    """The far end of a lease as the lender's queue-get shows it: the
    lessee's ifindex and queue in the lessee's namespace, and that
    namespace's id in the lender's (None when both share one); napi is the
    lender queue's NAPI."""

    ifindex: int
    queue: int
    netns_id: int = None
    napi: int = None


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


class NapiFamily(GenlFamily):
    """NAPI objects: napi-get (do/dump) and napi-set."""

    family = "netdev"
    message = napi_msg
    set_commands = frozenset({CMD_NAPI_SET})

    def napis(self, ifindex):
        """Every enabled NAPI of a device, as attribute dicts keyed 'id', ..."""
        return self.dump("dumping NAPIs of ifindex %d" % ifindex, CMD_NAPI_GET, ifindex=ifindex)

    def napi(self, napi_id):
        return self.do("reading NAPI %d" % napi_id, CMD_NAPI_GET, id=napi_id)

    def set_napis(self, changes):
        """napi-set for many NAPIs: {id: {attr: value}} -> {id: NetlinkRequestError}."""
        ids = list(changes)
        results = self.do_batch(CMD_NAPI_SET, [dict(changes[i], id=i) for i in ids])
        return {napi_id: NetlinkRequestError("setting NAPI %d" % napi_id, *result)
                for napi_id, result in zip(ids, results) if result is not None}

    def all_napis(self):
        """Every enabled NAPI of the network namespace, in one dump."""
        return self.dump("dumping NAPIs", CMD_NAPI_GET)


class QueueFamily(GenlFamily):
    """Queue objects: queue-get dump, for the rx queue -> NAPI links."""

    family = "netdev"
    message = queue_msg

    def rx_queue_napis(self, ifindex):
        """{rx queue index: NAPI id} for queues the driver linked to a NAPI."""
        return {q["id"]: q["napi-id"] for q in self.dump("dumping queues of ifindex %d" % ifindex,
                                                         CMD_QUEUE_GET, ifindex=ifindex)
                if q.get("type") == QUEUE_TYPE_RX and "napi-id" in q}


class QstatsFamily(GenlFamily):
    """Per-queue statistics of drivers that keep them (virtio_net, netdevsim,
    most current NIC drivers)."""

    family = "netdev"
    message = qstats_msg

    def rx_packets(self, ifindex):
        """{rx queue index: packets received} of a device's active rx queues
        (empty when the driver keeps no per-queue statistics)."""
        return {q["queue-id"]: q["rx-packets"]
                for q in self.dump("dumping queue statistics of ifindex %d" % ifindex,
                                   CMD_QSTATS_GET, ifindex=ifindex, scope=SCOPE_QUEUE)
                if q.get("queue-type") == QUEUE_TYPE_RX and "rx-packets" in q}


class LeaseFamily(GenlFamily):
    """Queue leases (Linux 7.1): queue-create gives a virtual device
    (netkit) a new rx queue backed by a physical device's rx queue, and the
    physical device's queue-get shows the lease.  The request is made in
    the lessee's network namespace: its ifindex is looked up there, the
    lender's in the namespace netns_id names there (the caller's own when
    None).  The kernel has no operation that ends a lease: it ends when the
    lessee device is unregistered (or its namespace, or the lender)."""

    family = "netdev"
    message = lease_msg
    set_commands = frozenset({CMD_QUEUE_CREATE})

    def create(self, ifindex, lender, queue, netns_id=None):
        """The lessee's new rx queue id, backed by lender's rx queue."""
        lease = [["NETDEV_A_LEASE_IFINDEX", lender],
                 ["NETDEV_A_LEASE_QUEUE", {"attrs": [["NETDEV_A_QUEUE_ID", queue],
                                                     ["NETDEV_A_QUEUE_TYPE", QUEUE_TYPE_RX]]}]]
        if netns_id is not None:
            lease.append(["NETDEV_A_LEASE_NETNS_ID", netns_id])
        reply = self.do("leasing rx queue %d of ifindex %d to ifindex %d" % (queue, lender, ifindex),
                        CMD_QUEUE_CREATE, ifindex=ifindex, type=QUEUE_TYPE_RX,
                        lease={"attrs": lease})
        return reply["id"]

    def leases(self, ifindex):
        """{rx queue index: QueueLease} of a lender's leased rx queues."""
        found = {}
        for q in self.dump("dumping queues of ifindex %d" % ifindex, CMD_QUEUE_GET,
                           ifindex=ifindex):
            lease = q.get("lease")
            if q.get("type") != QUEUE_TYPE_RX or lease is None:
                continue
            far = lease.get_attr("NETDEV_A_LEASE_QUEUE")
            found[q["id"]] = QueueLease(lease.get_attr("NETDEV_A_LEASE_IFINDEX"),
                                        far.get_attr("NETDEV_A_QUEUE_ID") if far else None,
                                        lease.get_attr("NETDEV_A_LEASE_NETNS_ID"),
                                        q.get("napi-id"))
        return found
