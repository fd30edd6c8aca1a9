# SPDX-License-Identifier: GPL-2.0-or-later
"""Zero-copy receive: reserved rx queues leased to containers' netkit devices.

A lease (netdev queue-create, Linux 7.1) gives a netkit device - a
container's interface - a new rx queue backed by one of the physical
device's reserved queues, so that the container can bind devmem or
io_uring zero-copy receive to it.  The lessee is named by device name in
a named network namespace (/run/netns/NAME, `ip netns`): an administrator
writes that into a profile before the container exists, and the lease is
made when both ends do - at apply, or on a later re-check (apply_new).

Only the lender's queue-get shows a lease (the lessee's ifindex in its
namespace, and that namespace's id in the lender's), so a lease is known
as ours by the ledger entry made before the request: lender queue,
namespace and device by name, the lessee's ifindex.  The kernel has no
operation that ends a lease: it ends when the lessee device is
unregistered, its namespace deleted, or the lender removed.  Releasing a
lease is therefore deleting the netkit device it went to - only when every
lease that device holds is one this tuner made; a lease whose device went
away is forgotten.  Channels can only be restored after the release: the
kernel refuses to drop a leased queue (EINVAL).

LeaseSteps is ZeroCopyRxTuner's mixin and uses its config, _leases (a
LeaseKernel or a fake), _report, _save_state and originals.
"""

import errno
import logging
import os
import socket
from dataclasses import dataclass

from ...kernel import netns
from ...kernel.caps import queue_leases_missing
from ...kernel.errors import NOT_PERMITTED, IrqtuneError, describe_os_error
from ...kernel.names import shown
from ...kernel.netlink import netdev
from ...kernel.values import format_index_list
from ...shared.tuner import Check
from .plan import Refused

log = logging.getLogger(__name__)

LEASES = "queue leases"


class LeaseKernel:
    """The kernel I/O of leases; unit tests pass a fake with these methods."""

    missing = staticmethod(queue_leases_missing)

    @staticmethod
    def lender_leases(ifindex):
        """{lender rx queue: QueueLease} as the lender's queue-get shows them."""
        with netdev.LeaseFamily() as fam:
            return fam.leases(ifindex)

    @staticmethod
    def lessee(namespace, device):
        """The device's ifindex in the named namespace; None while either is missing."""
        if not netns.exists(namespace):
            return None

        def find(_own):
            try:
                return socket.if_nametoindex(device)
            except OSError:
                return None
        return netns.run_in(namespace, find)

    @staticmethod
    def netns_id(namespace):
        """The id the lender's (this thread's) namespace knows the named one by."""
        try:
            fd = os.open(netns.namespace_path(namespace), os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            return netns.peer_id(fd)
        finally:
            os.close(fd)

    @staticmethod
    def create(namespace, ifindex, lender, queue):
        """queue-create from inside the namespace: the lessee's new queue id."""
        def lease(own):
            nsid = netns.peer_id(own, assign=True)
            with netdev.LeaseFamily() as fam:
                return fam.create(ifindex, lender, queue, nsid)
        return netns.run_in(namespace, lease)

    @staticmethod
    def delete(namespace, ifindex):
        """Unregister the lessee inside its namespace."""
        return netns.run_in(namespace, lambda _own: netns.delete_link(ifindex))


# What the kernel's refusals of queue-create mean to the administrator
# (net/core/netdev-genl.c, netdev_queues.c, drivers/net/netkit.c of 7.2):
# by the kernel's message where it gives one, else by errno.
ADVICE = {
    "Lease device does not support queue management operations":
        "the NIC's driver has no queue management ops (virtio-net, igb): lease from one "
        "that has them (mlx5, bnxt, fbnic, gve; netdevsim)",
    "Lease device is a virtual device": "lease from a physical NIC",
    "Device does not support queue creation": "the lessee must be a netkit device",
    "Device is not a virtual device": "the lessee must be a netkit device",
    "netkit maximum queue limit reached":
        "the netkit device has no rx queue left: create it with more (ip link add ... type "
        "netkit peer name DEV numrxqueues N)",
    "netkit can only lease against the peer device":
        "name the netkit peer inside the container, not the pair's primary",
    "Leasing queues from different devices not supported":
        "lease to this netkit device from one NIC only",
    "Device queue in use due to queue leasing": "it is leased already",
    "Device queue in use by memory provider": "memory is bound to it (devmem, io_uring zcrx)",
    "Device queue in use by AF_XDP": "an AF_XDP socket uses it",
}
MEANINGS = {
    **NOT_PERMITTED,
    errno.EBUSY: "the queue is in use (%s)",
    errno.EINVAL: "refused (%s)",
    errno.EOPNOTSUPP: "not possible (%s)",
    errno.ERANGE: "the NIC has no such rx queue (%s): lease one below its channel count",
    errno.ENODEV: "a device went away meanwhile (%s)",
    errno.ENONET: "the lender's namespace is unknown there (%s)",
}


def lease_refusal(err):
    """One line: what the kernel said (errno, its message) and what to do."""
    words = describe_os_error(err, MEANINGS)
    message = getattr(getattr(err, "extack", None), "message", None)
    advice = ADVICE.get(message)
    return "%s: %s" % (words, advice) if advice else words


@dataclass(frozen=True)
class HeldLease:
    """A lease of a device's rx queue as irqtune status, the doctor and the
    metrics show it; netns and lessee are None when they have no name here."""
    device: str
    queue: int
    napi: int
    netns: str
    netns_id: int
    lessee: str
    lessee_ifindex: int
    lessee_queue: int

    def describe(self):
        if self.netns_id is None:
            where = shown(self.lessee) if self.lessee else "ifindex %d" % self.lessee_ifindex
        elif self.netns is None:
            where = "ifindex %d in namespace id %d" % (self.lessee_ifindex, self.netns_id)
        else:
            where = "%s/%s" % (shown(self.netns), shown(self.lessee) if self.lessee
                               else "ifindex %d" % self.lessee_ifindex)
        return "%s rx queue %d -> %s rx queue %s, NAPI %s" % (
            shown(self.device), self.queue, where, self.lessee_queue,
            "-" if self.napi is None else self.napi)


def held_leases(devices):
    """[HeldLease] of the rx queues of devices ({name: ifindex}) that are
    leased (Linux 7.1), whoever made them; [] on older kernels."""
    names = netns.named_ids()
    found = []
    with netdev.LeaseFamily() as fam:
        for device, ifindex in sorted(devices.items()):
            for queue, lease in sorted(fam.leases(ifindex).items()):
                where = names.get(lease.netns_id) if lease.netns_id is not None else None
                if lease.netns_id is None:
                    lessee = _own_name(lease.ifindex)
                elif where is not None:
                    lessee = netns.device_name(where, lease.ifindex)
                else:
                    lessee = None
                found.append(HeldLease(device, queue, lease.napi, where, lease.netns_id, lessee,
                                       lease.ifindex, lease.queue))
    return found


def _own_name(ifindex):
    try:
        return socket.if_indextoname(ifindex)
    except OSError:
        return None


def _far(lease):
    """A lease's far end as the lender sees it (no name: only an ifindex)."""
    return "ifindex %d%s" % (lease.ifindex, "" if lease.netns_id is None
                             else " in namespace id %d" % lease.netns_id)


class LeaseSteps:
    """The lease steps of ZeroCopyRxTuner (see the module)."""

    def _lease_specs(self, ifname, target):
        """The configured leases whose queue is reserved; the others are refused."""
        reserved = target.get("reserved") or []
        specs = []
        for spec in self.config.leases:
            if spec.queue in reserved:
                specs.append(spec)
            else:
                self._report(ifname, spec.feature, Refused(
                    "queue %d is not among the reserved rx queues (%s): lease one of those, "
                    "or reserve more (queues)" % (spec.queue,
                                                  format_index_list(reserved) or "none")))
        return specs

    def _apply_leases(self, ifname, ifindex, saved, target):
        """Make the configured leases whose two ends exist; settle entries a
        killed process left; forget leases that ended.  Returns the count held."""
        why = self._leases_unsupported()
        if why:
            raise Refused(why, True)
        specs = self._lease_specs(ifname, target)
        entries = saved.setdefault("leases", [])
        present = self._leases.lender_leases(ifindex)
        if self._settle_leases(ifname, entries, present):
            self._save_state()
        held = 0
        for spec in specs:
            entry = next((e for e in entries if e["queue"] == spec.queue), None)
            if entry is not None and (entry["netns"], entry["device"]) != (spec.netns, spec.device):
                # made by irqtune for an earlier value of the option: still
                # ours to end on unapply, and in the way until then
                self._report(ifname, spec.feature, Refused(
                    "queue %d is leased to %s/%s, as irqtune set it before the option changed; "
                    "that lease ends when the profile is unapplied"
                    % (spec.queue, entry["netns"], entry["device"])))
            elif entry is not None or self._lease_one(ifname, ifindex, spec, entries, present):
                held += 1
        return held

    def _lease_one(self, ifname, ifindex, spec, entries, present):
        feature = spec.feature
        lessee = self._leases.lessee(spec.netns, spec.device)
        if lessee is None:
            self.waiting.add(ifname, feature, "waiting for %s to exist (made when it appears)"
                             % spec.lessee, logging.INFO)
            return False
        self.waiting.resolve(ifname, feature)
        other = present.get(spec.queue)
        if other is not None:
            if self._points_at(other, spec.netns, lessee):
                return True      # someone else leased it where we want it: theirs to end
            self._report(ifname, feature, Refused(
                "queue %d is leased already to %s, not by irqtune" % (spec.queue, _far(other))))
            return False
        entry = {"queue": spec.queue, "netns": spec.netns, "device": spec.device,
                 "ifindex": lessee, "lessee_queue": None}
        entries.append(entry)
        self._save_state()              # before the request: a kill leaves it pending
        try:
            entry["lessee_queue"] = self._leases.create(spec.netns, lessee, ifindex, spec.queue)
        except (OSError, IrqtuneError) as err:
            entries.remove(entry)
            self._save_state()
            self._report(ifname, feature, Refused(lease_refusal(err)))
            return False
        self._save_state()
        for book in (self.problems, self.lacking):
            book.resolve(ifname, feature)
        log.info("%s: rx queue %d leased to %s (its rx queue %d)", ifname, spec.queue,
                 spec.lessee, entry["lessee_queue"])
        return True

    def _points_at(self, lease, namespace, lessee):
        """Whether a lender's lease goes to ifindex lessee of the named namespace."""
        return lease.ifindex == lessee and lease.netns_id == self._leases.netns_id(namespace)

    def _ours(self, entry, present):
        lease = present.get(entry["queue"])
        if lease is None or not self._points_at(lease, entry["netns"], entry["ifindex"]):
            return False
        return entry["lessee_queue"] in (None, lease.queue)

    def _settle_leases(self, ifname, entries, present):
        """Pending entries (a process killed during queue-create) are kept
        when the lease is there, dropped when not; leases that ended (the
        netkit device or its namespace went away) are forgotten.  Returns
        whether an entry changed."""
        changed = False
        for entry in list(entries):
            if self._ours(entry, present):
                if entry["lessee_queue"] is None:
                    entry["lessee_queue"] = present[entry["queue"]].queue
                    changed = True
                continue
            entries.remove(entry)
            changed = True
            if entry["lessee_queue"] is not None:
                log.info("%s: the lease of rx queue %d to %s/%s ended (the device or its "
                         "namespace went away); forgotten", ifname, entry["queue"],
                         entry["netns"], entry["device"])
        return changed

    def _leases_unsupported(self):
        if not hasattr(self, "_lease_support"):
            self._lease_support = self._leases.missing()
        return self._lease_support

    def _verify_leases(self, ifname, ifindex, target):
        """One Check per configured lease of a reserved queue."""
        if self._leases_unsupported() or LEASES in self.lacking.of(ifname):
            return []
        checks = []
        present = self._leases.lender_leases(ifindex)
        for spec in [s for s in self.config.leases if s.queue in (target.get("reserved") or [])]:
            what = "rx queue %d lease" % spec.queue
            want = spec.lessee
            lessee = self._leases.lessee(spec.netns, spec.device)
            lease = present.get(spec.queue)
            if lessee is None:
                checks.append(Check(what, "waiting for %s" % want, want, lease is None,
                                    "" if lease is None else "leased to " + _far(lease)))
                continue
            if lease is None:
                current, ok = "missing", False
            elif self._points_at(lease, spec.netns, lessee):
                current, ok = want, True
            else:
                current, ok = _far(lease), False
            note = "" if ok else self.problems.of(ifname).get(
                spec.feature, "leased by someone else" if lease else "the lease ended")
            checks.append(Check(what, current, want, ok, note))
        return checks

    def _release_leases(self, ifname, ifindex, saved):
        """Delete the netkit devices holding this tuner's leases - only
        those holding no lease of anyone else - and forget what ended."""
        entries = saved.get("leases") or []
        try:
            present = self._leases.lender_leases(ifindex)
        except (OSError, IrqtuneError) as err:
            log.error("%s: cannot read the leases of its rx queues: %s", ifname,
                      describe_os_error(err))
            return
        self._settle_leases(ifname, entries, present)
        by_device = {}
        for entry in entries:
            by_device.setdefault((entry["netns"], entry["ifindex"]), []).append(entry)
        for (namespace, lessee), mine in sorted(by_device.items()):
            queues = {e["queue"] for e in mine}
            held = {q for q, lease in present.items() if self._points_at(lease, namespace, lessee)}
            name = "%s/%s" % (namespace, mine[0]["device"])
            if held - queues:
                log.error("%s: the leases of rx queues %s to %s stay: that device also holds "
                          "rx queues %s leased by someone else (delete it to end them all)",
                          ifname, format_index_list(sorted(queues)), name,
                          format_index_list(sorted(held - queues)))
                continue
            try:
                self._leases.delete(namespace, lessee)
            except (OSError, IrqtuneError) as err:
                log.error("%s: cannot end the leases of rx queues %s to %s: %s", ifname,
                          format_index_list(sorted(queues)), name, describe_os_error(err))
                continue
            log.info("%s: leases of rx queues %s ended: %s deleted (the kernel ends a "
                     "lease only with its device)", ifname, format_index_list(sorted(queues)),
                     name)
            for entry in mine:
                entries.remove(entry)
