# SPDX-License-Identifier: GPL-2.0-or-later
"""Zero-copy receive: the kernel I/O of each preparation step.

Each apply step reads a feature through the ethtool netlink family (or
the ntuple ioctl for flow rules), records the original in the device's
ledger entry and saves it before changing anything, makes the change and
reads it back; a driver that cannot is a Refused.  The restore steps put
one feature back.  Which steps run, in which order, and what a refusal
means for the rest is ZeroCopyRxTuner's business (tuner.py): NicSteps is
its mixin and uses its config, _rules (ifname -> NtupleRules), _report
(a refusal to log once) and _save_state (the ledger, before a change).
"""

import errno
import logging

from ...kernel.errors import UnsupportedError
from ...kernel.netlink.ethtool import channel_count
from ...kernel.netlink.ethtool_ntuple import FlowRule
from ...kernel.netlink.ethtool_rx import TCP_DATA_SPLIT, TCP_DATA_SPLIT_NAMES
from ...kernel.netlink.genl import NetlinkRequestError
from .plan import Refused, as_rule, channel_kind, refusal, rule_fields, rx_queue_count, spread

# The tuner's logger: the steps log what the tuner does.
log = logging.getLogger(__name__)

NTUPLE = "rx-ntuple-filter"


class NicSteps:
    """The apply and restore steps of ZeroCopyRxTuner (see the module)."""

    def _read_rss(self, nic, ifindex):
        """The original main-context table: "default" when it is the
        driver's even spread over the current rx queues."""
        rss = nic.rss(ifindex)
        table = rss.get("indir")
        if not table:
            raise Refused("the driver has no RSS indirection table", True)
        channels = nic.channels(ifindex)
        if table == spread(len(table), max(1, rx_queue_count(channels))):
            return {"default": True, "size": len(table)}
        return {"indir": table}

    def _apply_channels(self, ifname, nic, ifindex, saved, target):
        """Raise channels so the reserved queues come on top of the ones
        serving regular traffic; returns the rx queue count it leaves (the
        current one when the driver refuses the change, which is reported
        under "channels" while the reservation goes on within it)."""
        current = nic.channels(ifindex)
        try:
            kind = channel_kind(current)
        except UnsupportedError as err:
            raise Refused(str(err), True) from None
        have = channel_count(current, kind + "-count")
        original = saved.setdefault("channels", {}).setdefault(kind, have)
        self._save_state()
        maximum = channel_count(current, kind + "-max")
        want = self.config.channels or (original + self.config.queues)
        if maximum and want > maximum:
            if self.config.channels:
                raise Refused("channels %d is above the device maximum %d" % (want, maximum))
            want = maximum
        target["channels"] = {kind: want}
        if want != have:
            try:
                nic.set_channels(ifindex, **{kind: want})
                log.info("%s: %s channels %d -> %d", ifname, kind, have, want)
            except NetlinkRequestError as err:
                self._report(ifname, "channels", refusal("%s channels %d" % (kind, want), err))
                return rx_queue_count(current)
        return rx_queue_count(nic.channels(ifindex))

    def _apply_split(self, nic, ifindex, saved):
        rings = nic.rings(ifindex)
        reported = rings.get("tcp-data-split", 0)
        want = TCP_DATA_SPLIT["on" if self.config.header_split else "off"]
        first = "tcp-data-split" not in saved.get("rings", {})
        # The reply shows the driver's state, not its configuration: when it
        # shows `want` already, the configuration is "auto" (netdevsim
        # reports auto as on) or `want`, and only the change below tells
        # which (the kernel notifies a configuration change).  The ledger
        # holds "auto", the kernel's default, until then: a process killed
        # right after the change restores auto, wrong only where `want`
        # had been set explicitly - no order of writes can tell the two
        # apart once the notification is lost.
        unsure = first and reported == want
        if first:
            saved.setdefault("rings", {})["tcp-data-split"] = \
                TCP_DATA_SPLIT["auto"] if unsure else reported
            self._save_state()
        try:
            changed = nic.set_rings(ifindex, **{"tcp-data-split": want})
        except NetlinkRequestError:
            if first:       # nothing changed: nothing to put back on restore
                del saved["rings"]["tcp-data-split"]
                self._save_state()
            raise
        if unsure and not changed:
            saved["rings"]["tcp-data-split"] = want     # set explicitly before us
            self._save_state()
        after = nic.rings(ifindex).get("tcp-data-split", 0)
        if after != want:
            raise Refused("the driver kept tcp-data-split %s" % TCP_DATA_SPLIT_NAMES.get(after, after),
                          after == 0)
        return True

    def _apply_hds(self, nic, ifindex, saved):
        rings = nic.rings(ifindex)
        if "hds-thresh" not in rings:
            raise Refused("the driver does not report hds-thresh (Linux >= 6.14 and a "
                          "driver with header-split thresholds)", True)
        saved.setdefault("rings", {}).setdefault("hds-thresh", rings["hds-thresh"])
        self._save_state()
        if rings["hds-thresh"] != self.config.hds_thresh:
            nic.set_rings(ifindex, **{"hds-thresh": self.config.hds_thresh})
        return True

    def _apply_ntuple(self, nic, ifindex, saved):
        features = nic.features(ifindex)
        want = self.config.ntuple
        held = (NTUPLE in features.get("active", ())) == want
        if not held and NTUPLE not in features.get("hw", ()):
            raise Refused("the driver cannot change %s (not among its changeable features)"
                          % NTUPLE, True)
        saved.setdefault("features", {}).setdefault(NTUPLE, NTUPLE in features.get("wanted", ()))
        self._save_state()
        if held:
            return True
        nic.set_features(ifindex, {NTUPLE: want})
        if (NTUPLE in nic.features(ifindex).get("active", ())) != want:
            raise Refused("the kernel kept %s %s (a dependency of another feature?)"
                          % (NTUPLE, "off" if want else "on"))
        return True

    def _apply_rss(self, nic, ifindex, saved, target):
        table = nic.rss(ifindex).get("indir") or []
        want = spread(len(table), target["reserved"][0])
        target["indir"] = want
        if table != want:
            try:
                nic.set_rss_indir(ifindex, want)
            except NetlinkRequestError as err:
                if err.errno != errno.EOPNOTSUPP:
                    raise
                del saved["rss"]        # unchanged by us: nothing to put back
                self._save_state()
                raise Refused("the table can be read but not set (EOPNOTSUPP): a kernel "
                              "without ethtool RSS_SET (Linux < 6.17) or a driver without "
                              "set_rxfh", True) from None
        return True

    def _apply_rules(self, ifname, saved, target):
        rules = self._rules(ifname)
        reserved = target["reserved"]
        mine = saved.setdefault("rules", [])
        wanted = [FlowRule(spec.flow, spec.dst_port, reserved[i % len(reserved)], spec.dst_ip)
                  for i, spec in enumerate(self.config.rules)]
        target["rules"] = wanted
        self._settle_pending_rules(rules, mine)
        have = {}
        for entry in mine:
            rule = self._rule_at(rules, entry["location"])
            if rule is not None and rule.as_dict() == rule_fields(entry):
                have[rule] = entry["location"]
        for rule in wanted:
            if rule in have:
                continue
            # On disk before the insert, whose location only the driver
            # knows: a process killed in between leaves an entry without a
            # location, found again by its fields (_settle_pending_rules);
            # slots that held the same rule already are someone else's.
            entry = dict(rule.as_dict(), location=None,
                         foreign=self._locations_of(rules, rule))
            mine.append(entry)
            self._save_state()
            location = rules.insert(rule)
            mine[:] = [e for e in mine if e is entry or e["location"] != location]
            entry["location"] = location
            del entry["foreign"]
            self._save_state()
            log.info("%s: flow rule %s at location %d", ifname, rule.describe(), location)
        return True

    def _locations_of(self, rules, rule):
        """Slots holding rule now."""
        return [loc for loc in rules.locations() if self._rule_at(rules, loc) == rule]

    def _settle_pending_rules(self, rules, entries):
        """Entries saved before an insert that was never confirmed (the
        process was killed): the rule is at a slot that did not hold it
        before, or it was never inserted and the entry goes."""
        for entry in [e for e in entries if e.get("location") is None]:
            placed = [loc for loc in self._locations_of(rules, as_rule(entry))
                      if loc not in entry.get("foreign", ())]
            if placed:
                entry["location"] = placed[0]
                entry.pop("foreign", None)
            else:
                entries.remove(entry)

    @staticmethod
    def _rule_at(rules, location):
        try:
            return rules.get(location)
        except OSError as err:
            if err.errno in (errno.ENOENT, errno.EINVAL):
                return None
            raise

    def _restore_rules(self, ifname, entries):
        rules = self._rules(ifname)
        self._settle_pending_rules(rules, entries)
        for entry in entries:
            if self._rule_at(rules, entry["location"]) == as_rule(entry):
                rules.delete(entry["location"])
            else:
                log.info("%s: flow rule slot %d no longer holds the rule irqtune added; "
                         "left alone", ifname, entry["location"])
