# SPDX-License-Identifier: GPL-2.0-or-later
"""The kernel side of queue leases, for the unit tests: named namespaces
holding netkit devices, and a FakeNic lending its rx queues.

FakeLeases follows Linux 7.2 (net/core/netdev-genl.c
netdev_nl_queue_create_doit, net/core/netdev_queues.c, drivers/net/netkit.c):
the lessee must be a virtual device with queue creation (netkit's peer),
with an rx queue left (numrxqueues); the lender a device with queue
management ops; a leased queue is busy (EBUSY) and cannot be dropped by a
channel change (FakeNic, EINVAL); a lease ends only when its netkit device
goes away.  Its errnos and extack texts are the kernel's.
"""

import errno

from irqtune.kernel.errors import Extack
from irqtune.kernel.netlink.genl import NetlinkRequestError
from irqtune.kernel.netlink.netdev import QueueLease


class Netkit:
    def __init__(self, ifindex, rx_max=2, kind="netkit"):
        self.ifindex = ifindex
        self.rx_max = rx_max          # numrxqueues
        self.rx_real = 1
        self.kind = kind              # "netkit", "netkit-primary" or "veth"


class FakeLeases:
    def __init__(self, nic, lender_ops=True, missing=None):
        self.nic = nic
        self.lender_ops = lender_ops
        self._missing = missing
        self.namespaces = {}          # name -> (nsid as the lender sees it, {device: Netkit})
        self.leases = nic.leased      # lender rx queue -> QueueLease
        self.created = []
        self.deleted = []
        self.fail_create = None       # an exception for the next create

    def missing(self):
        return self._missing

    def add(self, namespace, device, ifindex, nsid=3, **kw):
        self.namespaces.setdefault(namespace, (nsid, {}))[1][device] = Netkit(ifindex, **kw)

    def lender_leases(self, ifindex):
        return dict(self.leases)

    def lessee(self, namespace, device):
        dev = self.namespaces.get(namespace, (None, {}))[1].get(device)
        return dev.ifindex if dev else None

    def netns_id(self, namespace):
        return self.namespaces[namespace][0] if namespace in self.namespaces else None

    def create(self, namespace, ifindex, lender, queue):
        if self.fail_create is not None:
            err, self.fail_create = self.fail_create, None
            raise err
        nsid, devices = self.namespaces[namespace]
        dev = next(d for d in devices.values() if d.ifindex == ifindex)
        what = "leasing rx queue %d of ifindex %d to ifindex %d" % (queue, lender, ifindex)

        def refused(code, message=None):
            return NetlinkRequestError(what, code, Extack(message))
        if dev.kind == "veth":
            raise refused(errno.EINVAL, "Device does not support queue creation")
        if not self.lender_ops:
            raise refused(errno.EINVAL, "Lease device does not support queue management operations")
        if queue >= self.nic.count:
            raise refused(errno.ERANGE)
        if queue in self.leases:
            raise refused(errno.EBUSY, "Device queue in use due to queue leasing")
        if dev.kind == "netkit-primary":
            raise refused(errno.EOPNOTSUPP, "netkit can only lease against the peer device")
        if dev.rx_real + 1 > dev.rx_max:
            raise refused(errno.EINVAL, "netkit maximum queue limit reached")
        dev.rx_real += 1
        self.leases[queue] = QueueLease(ifindex, dev.rx_real - 1, nsid)
        self.created.append((namespace, ifindex, queue))
        return dev.rx_real - 1

    def delete(self, namespace, ifindex):
        """The netkit device (both ends) goes, and with it its leases."""
        devices = self.namespaces[namespace][1]
        name = next(n for n, d in devices.items() if d.ifindex == ifindex)
        del devices[name]
        nsid = self.namespaces[namespace][0]
        for queue, lease in list(self.leases.items()):
            if lease.ifindex == ifindex and lease.netns_id == nsid:
                del self.leases[queue]
        self.deleted.append((namespace, name))

    def lease_by_someone(self, queue, ifindex, nsid):
        self.leases[queue] = QueueLease(ifindex, 1, nsid)
