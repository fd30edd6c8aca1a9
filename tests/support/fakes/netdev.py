# SPDX-License-Identifier: GPL-2.0-or-later
"""An in-memory netdev generic netlink family for unit tests: napi-get,
napi-set, queue-get and qstats-get of a kernel with napi-set (6.13+).

The NAPI dicts have the shape irqtune.kernel.netlink.netdev decodes from what
this project's build host (Linux 6.18.44, QEMU x86, virtio-net) answers:
``{'id': 257, 'ifindex': 4, 'threaded': 0, 'defer-hard-irqs': 0,
'irq-suspend-timeout': 0, 'gro-flush-timeout': 0}`` - no 'irq' (virtio-net
does not call netif_napi_set_irq()), rx queue 0 linked to NAPI 257.  As
the kernel does, a dump lists a device's NAPIs newest first
(netif_napi_add() puts them at the head of dev->napi_list), a dump or
queue-get of an ifindex no device has answers ENODEV, and napi-set of an
id no NAPI has answers ENOENT.

install(monkeypatch) makes the library's family classes (as the NAPI
tuner, irqtune.shared.counters and irqtune.frontends.metrics import them) this fake.
"""

import errno

from irqtune.kernel.caps import NapiCapabilities
from irqtune.kernel.errors import NetlinkRequestError

DEFAULTS = {"threaded": 0, "defer-hard-irqs": 0, "irq-suspend-timeout": 0,
            "gro-flush-timeout": 0}


class FakeNetdev:
    def __init__(self):
        self.devices = {}       # ifindex -> [NAPI dict], oldest first
        self.queues = {}        # ifindex -> {rx queue: NAPI id}
        self.qstats = {}        # ifindex -> {rx queue: packets received}
        self.leased = {}        # ifindex -> {rx queue: QueueLease} (queue-get's lease nests)
        self.sets = []          # [(NAPI id, {attr: value})] napi-set requests
        self.fail = {}          # method name -> errno, injected
        self._next_id = 257

    # -- the kernel side ----------------------------------------------------

    def add_device(self, ifindex, count, linked=True, **values):
        """A device with count NAPIs (new ids), rx queue i on NAPI i when linked;
        values: attributes by their netlink names with "_" for "-"."""
        napis = []
        for _ in range(count):
            napi = dict(DEFAULTS, id=self._next_id, ifindex=ifindex)
            napi.update({k.replace("_", "-"): v for k, v in values.items()})
            napis.append(napi)
            self._next_id += 1
        self.devices[ifindex] = napis
        self.queues[ifindex] = {q: n["id"] for q, n in enumerate(napis)} if linked else {}
        return [n["id"] for n in napis]

    def remove_device(self, ifindex):
        self.devices.pop(ifindex)
        self.queues.pop(ifindex, None)

    def napi(self, napi_id):
        for napis in self.devices.values():
            for napi in napis:
                if napi["id"] == napi_id:
                    return napi
        return None

    def values(self, ifindex, attr):
        """[value of attr] of the device's NAPIs in id order."""
        return [n[attr] for n in self.devices[ifindex]]

    # -- the families' methods ------------------------------------------------

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def close(self):
        pass

    def _check(self, method, what):
        if method in self.fail:
            raise NetlinkRequestError(what, self.fail[method])

    def napis(self, ifindex):
        self._check("napis", "dumping NAPIs of ifindex %d" % ifindex)
        if ifindex not in self.devices:
            raise NetlinkRequestError("dumping NAPIs of ifindex %d" % ifindex, errno.ENODEV)
        return [dict(n) for n in reversed(self.devices[ifindex])]

    def all_napis(self):
        self._check("all_napis", "dumping NAPIs")
        return [dict(n) for napis in self.devices.values() for n in reversed(napis)]

    def set_napis(self, changes):
        errors = {}
        for napi_id, values in changes.items():
            self.sets.append((napi_id, dict(values)))
            napi = self.napi(napi_id)
            if napi is None:
                errors[napi_id] = NetlinkRequestError("setting NAPI %d" % napi_id, errno.ENOENT)
            else:
                napi.update(values)
        return errors

    def rx_queue_napis(self, ifindex):
        self._check("rx_queue_napis", "dumping queues of ifindex %d" % ifindex)
        if ifindex not in self.devices:
            raise NetlinkRequestError("dumping queues of ifindex %d" % ifindex, errno.ENODEV)
        return dict(self.queues[ifindex])

    def leases(self, ifindex):
        return dict(self.leased.get(ifindex, {}))

    def rx_packets(self, ifindex):
        return dict(self.qstats.get(ifindex, {}))

    # -- wiring ----------------------------------------------------------------

    def install(self, monkeypatch):
        """The library's NapiFamily, QueueFamily, QstatsFamily and LeaseFamily
        are this fake."""
        from irqtune.features.napi import tuner
        from irqtune.kernel.netlink import netdev
        family = lambda: self                              # noqa: E731
        for module, name in ((tuner, "NapiFamily"), (tuner, "QueueFamily"),
                             (netdev, "NapiFamily"), (netdev, "QueueFamily"),
                             (netdev, "QstatsFamily"), (netdev, "LeaseFamily")):
            monkeypatch.setattr(module, name, family)
        return self


# What napi-set accepts: a kernel with all of it (6.17+) and one with
# napi-get only.
FULL = NapiCapabilities(netdev_family=True, napi_get=True, napi_set=True,
                        settable=frozenset({"defer-hard-irqs", "gro-flush-timeout",
                                            "irq-suspend-timeout", "threaded"}))
OLD_KERNEL = NapiCapabilities(netdev_family=True, napi_get=True)   # 6.8 - 6.12
