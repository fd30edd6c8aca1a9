# SPDX-License-Identifier: GPL-2.0-or-later
"""Zero-copy receive: what verify reads back and compares, per feature.

One Check per feature applied to the device (channels, header split,
hds-thresh, rx-ntuple-filter, the RSS table, the per-NAPI values of the
reserved queues, each queue lease (leases.py), each flow rule); a feature the driver lacks is left out,
a refused value carries its refusal as the Check's note.  NicChecks is
ZeroCopyRxTuner's mixin and uses its config, targets, problems, lacking,
originals, napi, _nic, _rules and _ifindex (tuner.py).
"""

from ...kernel.netlink.ethtool import channel_count
from ...kernel.netlink.ethtool_rx import TCP_DATA_SPLIT_NAMES
from ...shared.tuner import Check
from .plan import ranges, refusal, rule_key
from .steps import NTUPLE


class NicChecks:
    """verify's reads and comparisons for ZeroCopyRxTuner (see the module)."""

    def _verify(self, ifname):
        ifindex = self._ifindex(ifname)
        if ifindex is None:
            return []
        target = self.targets.get(ifname, {})
        problems = self.problems.of(ifname)
        skip = self.lacking.of(ifname)
        checks = []

        def check(what, feature, current, expected, ok=None):
            ok = current == expected if ok is None else ok
            checks.append(Check(what, current, expected, ok,
                                "" if ok else problems.get(feature, "changed since it was set")))

        def read(feature, func, *args):
            try:
                return func(*args)
            except OSError as err:
                checks.append(Check(feature, None, "readable", False, str(refusal(feature, err))))
                return None

        with self._nic() as nic:
            if "channels" in target and "channels" not in skip:
                channels = read("channels", nic.channels, ifindex)
                for kind, want in target["channels"].items() if channels is not None else ():
                    check("%s channels" % kind, "channels",
                          channel_count(channels, kind + "-count"), want)
            rings = {}
            if not {"tcp-data-split", "hds-thresh"} <= set(skip) and \
                    (self.config.header_split is not None or self.config.hds_thresh is not None):
                rings = read("rings", nic.rings, ifindex) or {}
            if self.config.header_split is not None and "tcp-data-split" not in skip:
                want = "on" if self.config.header_split else "off"
                check("tcp-data-split", "tcp-data-split",
                      TCP_DATA_SPLIT_NAMES.get(rings.get("tcp-data-split", 0)), want)
            if self.config.hds_thresh is not None and "hds-thresh" not in skip:
                check("hds-thresh", "hds-thresh", rings.get("hds-thresh"), self.config.hds_thresh)
            if self.config.ntuple is not None and NTUPLE not in skip:
                features = read(NTUPLE, nic.features, ifindex)
                if features is not None:
                    check(NTUPLE, NTUPLE, "on" if NTUPLE in features.get("active", ()) else "off",
                          "on" if self.config.ntuple else "off")
            if "indir" in target and "rss" not in skip:
                rss = read("RSS indirection table", nic.rss, ifindex)
                if rss is not None:     # shown as the queues, compared entry by entry
                    table = rss.get("indir") or []
                    check("RSS indirection table", "rss", "queues " + ranges(set(table)),
                          "queues " + ranges(set(target["indir"])), table == target["indir"])
        if ifname in self.napi:
            checks.extend(self.napi[ifname].verify(ifname))
        if self.config.leases and target.get("reserved"):
            checks.extend(self._verify_leases(ifname, ifindex, target))
        if target.get("rules") and "flow rules" not in skip:
            rules = self._rules(ifname)
            at = {rule_key(e): e["location"] for e in self.originals.get(ifname, {}).get("rules", [])}
            for rule in target["rules"]:
                location = at.get(rule_key(rule.as_dict()))
                try:
                    present = location is not None and self._rule_at(rules, location) == rule
                except OSError:
                    present = False
                check("flow rule " + rule.describe(), "flow rules",
                      "present" if present else "missing", "present")
        return checks
