# SPDX-License-Identifier: GPL-2.0-or-later
"""A NIC as ethtool shows it, for the unit tests and the crash harness.

FakeNic answers the ethtool netlink requests the zero-copy rx tuner makes
and follows what Linux 7.2 does (net/ethtool/rings.c, features.c, rss.c,
channels.c, drivers/net/netdevsim/ethtool.c): header split configured
"auto" is reported as the driver's state (netdevsim: on), a rings set
notifies only when the configuration changed, features outside
hw_features silently stay as they are, a default RSS table is respread on
channel changes while a user-set one is kept and blocks dropping the
queues it uses, and an empty RSS table restores the default.

FakeRuleTable is a driver's ntuple rule table behind SIOCETHTOOL: it reads
and writes the caller's struct ethtool_rxnfc the way the kernel's
ethtool_get_rxnfc/ethtool_set_rxnfc do (no test device of the project -
veth, netdevsim, virtio-net - has an ntuple table).

ZeroCopyHost is one of each as the zero-copy rx tuner's eth0, and the
tuner on them.
"""

import ctypes
import errno
import struct

from irqtune.features.zerocopy import ZeroCopyConfig, ZeroCopyRxTuner
from irqtune.kernel.netlink import ethtool_ntuple as nt
from irqtune.kernel.netlink.ethtool_ntuple import NtupleRules
from irqtune.kernel.netlink.genl import NetlinkRequestError
from irqtune.shared.ledger import Ledger


class FakeNic:
    def __init__(self, combined=(8, 2), rings=True, hds=True, ntuple_hw=True, rss=True,
                 refuse=None, split=True):
        self.max, self.count = combined
        self.rings_supported = rings
        self.split_supported = split      # virtio-net: rings readable, no header split
        self.hds_supported = hds
        self.split_config = 0         # auto
        self.hds = 256
        self.hw = {"rx-gro", "rx-ntuple-filter"} if ntuple_hw else {"rx-gro"}
        self.wanted = {"rx-gro"}
        self.rss_size = 16 if rss else 0
        self.indir = None             # None: the driver's default spread
        self.refuse = refuse or {}    # method name -> (errno, extack)
        self.leased = {}              # rx queue -> its lease (support.fakes.leases)
        self.calls = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def _check(self, name):
        self.calls.append(name)
        if name in self.refuse:
            raise NetlinkRequestError(name, *self.refuse[name])

    def channels(self, ifindex):
        return {"combined-max": self.max, "combined-count": self.count}

    def set_channels(self, ifindex, combined):
        self._check("set_channels")
        if combined > self.max:
            raise NetlinkRequestError("channels", errno.EINVAL, "requested channel count exceeds maximum")
        if any(queue >= combined for queue in self.leased):
            # net/ethtool/channels.c: netdev_queue_busy() on each dropped queue
            raise NetlinkRequestError("channels", errno.EINVAL,
                                      "Device queue in use due to queue leasing")
        if self.indir is not None and max(self.indir) >= combined:
            raise NetlinkRequestError("channels", errno.EINVAL,
                                      "requested channel counts are too low for existing "
                                      "indirection table settings")
        self.count = combined

    def rings(self, ifindex):
        if not self.rings_supported:
            raise NetlinkRequestError("rings", errno.EOPNOTSUPP, None)
        out = {"rx": 512}
        if self.split_supported:
            out["tcp-data-split"] = self.split_config or 2   # netdevsim: auto shows on
        if self.hds_supported:
            out.update({"hds-thresh": self.hds, "hds-thresh-max": 4096})
        return out

    def set_rings(self, ifindex, **values):
        self._check("set_rings")
        if not self.rings_supported:
            raise NetlinkRequestError("rings", errno.EOPNOTSUPP, "setting TCP data split is not supported")
        changed = False
        if "tcp-data-split" in values and not self.split_supported:
            raise NetlinkRequestError("rings", errno.EOPNOTSUPP, "setting TCP data split is not supported")
        if "tcp-data-split" in values:
            changed |= values["tcp-data-split"] != self.split_config
            self.split_config = values["tcp-data-split"]
        if "hds-thresh" in values:
            if values["hds-thresh"] > 4096:
                raise NetlinkRequestError("rings", errno.EINVAL, "requested ring size exceeds maximum")
            changed |= values["hds-thresh"] != self.hds
            self.hds = values["hds-thresh"]
        return changed

    def features(self, ifindex):
        return {"hw": set(self.hw), "wanted": set(self.wanted),
                "active": self.wanted & (self.hw | {"highdma"})}

    def set_features(self, ifindex, changes):
        self._check("set_features")
        for name, on in changes.items():
            if name in self.hw:
                (self.wanted.add if on else self.wanted.discard)(name)

    def rss(self, ifindex):
        self._check("rss")
        if not self.rss_size:
            raise NetlinkRequestError("rss", errno.EOPNOTSUPP, None)
        if self.indir is None:
            return {"indir": [i % self.count for i in range(self.rss_size)], "hfunc": 1}
        return {"indir": list(self.indir), "hfunc": 1}

    def set_rss_indir(self, ifindex, table):
        self._check("set_rss_indir")
        if not self.rss_size:
            raise NetlinkRequestError("rss", errno.EOPNOTSUPP, None)
        if any(q >= self.count for q in table):
            raise NetlinkRequestError("rss", errno.EINVAL, "entry 0: queue out of range")
        self.indir = list(table) if table else None

    def snapshot(self):
        return (self.count, self.split_config, self.hds, sorted(self.wanted),
                None if self.indir is None else tuple(self.indir))


class FakeRuleTable:
    """A driver with a rule table of `size` slots."""

    def __init__(self, size=16, special=False):
        self.size = size
        self.special = special          # driver picks locations (RX_CLS_LOC_SPECIAL)
        self.rules = {}                 # location -> raw 168-byte flow spec

    def ioctl(self, fd, request, ifreq):
        assert request == nt.SIOCETHTOOL
        assert bytes(ifreq[:16]).rstrip(b"\0") == b"eth9"
        addr, = struct.unpack_from("P", ifreq, 16)
        cmd, = struct.unpack("=I", ctypes.string_at(addr, 4))
        view = (ctypes.c_char * nt.RXNFC_SIZE).from_address(addr)
        fs = nt.FS_OFFSET
        if cmd == nt.GRXCLSRLCNT:
            data = self.size | (nt.RX_CLS_LOC_SPECIAL if self.special else 0)
            struct.pack_into("=Q", view, 8, data)
            struct.pack_into("=I", view, nt.RULE_CNT_OFFSET, len(self.rules))
        elif cmd == nt.GRXCLSRLALL:
            count, = struct.unpack_from("=I", view, nt.RULE_CNT_OFFSET)
            assert count >= len(self.rules)
            locs = sorted(self.rules)
            out = (ctypes.c_char * (nt.RULE_LOCS_OFFSET + 4 * count)).from_address(addr)
            struct.pack_into("=I", out, nt.RULE_CNT_OFFSET, len(locs))
            struct.pack_into("=%dI" % len(locs), out, nt.RULE_LOCS_OFFSET, *locs)
        elif cmd == nt.GRXCLSRULE:
            loc, = struct.unpack_from("=I", view, fs + nt.FS_LOCATION)
            if loc not in self.rules:
                raise OSError(errno.ENOENT, "No such file or directory")
            view[fs:fs + 168] = self.rules[loc]
        elif cmd == nt.SRXCLSRLINS:
            loc, = struct.unpack_from("=I", view, fs + nt.FS_LOCATION)
            if loc == nt.RX_CLS_LOC_ANY:
                if not self.special:
                    raise OSError(errno.EINVAL, "Invalid argument")
                loc = max(set(range(self.size)) - set(self.rules))
                struct.pack_into("=I", view, fs + nt.FS_LOCATION, loc)
            if loc >= self.size:
                raise OSError(errno.EINVAL, "Invalid argument")
            self.rules[loc] = bytes(view[fs:fs + 168])
        elif cmd == nt.SRXCLSRLDEL:
            loc, = struct.unpack_from("=I", view, fs + nt.FS_LOCATION)
            if self.rules.pop(loc, None) is None:
                raise OSError(errno.ENOENT, "No such file or directory")
        else:
            raise OSError(errno.EOPNOTSUPP, "Operation not supported")


class ZeroCopyHost:
    """One fake NIC "eth0" (ifindex 7) plus its rule table, and a zero-copy
    rx tuner on them (tuner(**options))."""

    def __init__(self, tmp_path, **nic):
        self.nic = FakeNic(**nic)
        self.table = FakeRuleTable(size=64)
        self.ifindex = {"eth0": 7}
        self.state_dir = str(tmp_path)

    def tuner(self, **options):
        config, errors = ZeroCopyConfig.from_options(options)
        assert errors == []
        return ZeroCopyRxTuner(config, ledger=Ledger("zerocopy_rx-test", self.state_dir),
                               nic=lambda: self.nic,
                               rules=lambda ifname: NtupleRules("eth9", ioctl=self.table.ioctl),
                               ifindex=self.ifindex.get, ifname=self.ifname)

    def ifname(self, ifindex):
        return {i: n for n, i in self.ifindex.items()}.get(ifindex)
