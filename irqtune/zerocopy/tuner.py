# SPDX-License-Identifier: GPL-2.0-or-later
"""Prepares NICs for zero-copy receive (devmem TCP, io_uring zcrx) and gives
everything back.

Per device, in this order: channels (raised so the last `queues` rx queues
can be reserved), header split and hds-thresh (RINGS_SET),
rx-ntuple-filter (FEATURES_SET), the RSS indirection table spread over the
queues that are not reserved (RSS_SET), flow rules steering configured
ports to the reserved queues (SIOCETHTOOL).  Restore runs the other way
round: rules, RSS, features, rings, channels - RSS before channels because
the kernel refuses to drop queues a user-set table points at.

Originals are read before anything changes (the RSS table before the
channel change, which respreads a default table) and kept in memory and in
a Ledger.  Only rules this tuner inserted are ever deleted, and only
while the slot still holds the rule it put there.

A driver that cannot do something (EOPNOTSUPP, a feature it cannot change,
no RSS table) is named once per device and feature and left out of verify
(`unsupported`); a driver that refuses a value (EINVAL with its extack) is
named once too, and verify shows the difference.
"""

import errno
import logging
import socket

from ..errors import IrqtuneError, UnsupportedError
from ..netlink.ethtool_rx import TCP_DATA_SPLIT, TCP_DATA_SPLIT_NAMES
from ..netlink.genl import NetlinkRequestError
from ..ledger import device_entry, ifindex_of, ifname_of, take_device
from ..tuner import Check, DeviceTuner, on_kernel_name
from .plan import (Refused, as_rule, channel_kind, ranges, refusal, rule_fields,
                   rule_key, rx_queue_count, spread)
from ..channels.plan import count as _n

log = logging.getLogger(__name__)

NTUPLE = "rx-ntuple-filter"
SPLIT_ON = TCP_DATA_SPLIT["on"]


class ZeroCopyRxTuner(DeviceTuner):
    """Applies one ZeroCopyConfig to devices; see the module text.

    originals: {ifname: {"ifindex": n, "channels": {"combined": 2},
        "rings": {"tcp-data-split": 0, "hds-thresh": 256},
        "features": {"rx-ntuple-filter": False},
        "rss": {"default": True} | {"indir": [...]},
        "rules": [{"location": n, "flow": ..., "dst_port": ..., "queue": ...}]}}

    nic: a factory returning a context manager with the RxConfigFamily
    methods; rules: ifname -> NtupleRules; both are fakes in unit tests.
    napi: None, or (ifname, reserved queue list) -> a NapiTuner scoped to
    those queues, for per-NAPI values on the reserved queues only.
    """

    def __init__(self, config, ledger=None, nic=None, rules=None, ifindex=None, napi=None,
                 ifname=None):
        self.config = config
        self.ledger = ledger
        self._nic = nic or _ethtool_family
        self._rules = rules or _ntuple_rules
        self._ifindex = ifindex or ifindex_of
        self._ifname = ifname or ifname_of
        self._napi_factory = napi
        self.napi = {}          # ifname -> NapiTuner of its reserved queues
        self.targets = {}       # ifname -> {"channels": {...}, "reserved": [..], "indir": [...]}
        self.problems = {}      # ifname -> {feature: reason}: refused values (verify fails)
        self.unsupported = {}   # ifname -> {feature: reason}: missing in the driver
        self.originals = self._load_state()

    @property
    def tunes_napis(self):
        return self._napi_factory is not None

    @property
    def needs_watching(self):
        """Flow rules are lost on driver resets, and NAPIs of some drivers
        are recreated with defaults (see apply_new)."""
        return bool(self.config.rules) or self.tunes_napis

    # -- plumbing ---------------------------------------------------------

    def _load_state(self):
        if self.ledger is None:
            return {}
        return self.ledger.load_devices(self._ifindex, self._ifname)

    def _save_state(self, before_change=True):
        """The ledger on disk; see irqtune.ledger for the error policy."""
        if self.ledger is not None:
            (self.ledger.save if before_change else self.ledger.update)(self.originals)

    def _device_books(self):
        return [self.originals, self.napi, self.targets, self.problems, self.unsupported]

    def _saved(self, ifname, ifindex):
        return device_entry(self.originals, ifname, ifindex)

    def _report(self, ifname, feature, refused):
        """Log a refusal the first time it is seen for this device and feature."""
        book = self.unsupported if refused.unsupported else self.problems
        other = self.problems if refused.unsupported else self.unsupported
        other.get(ifname, {}).pop(feature, None)
        known = book.setdefault(ifname, {})
        if known.get(feature) != str(refused):
            log.warning("%s: %s: %s; left as it is", ifname, feature, refused)
        known[feature] = str(refused)

    def _resolved(self, ifname, feature):
        self.problems.get(ifname, {}).pop(feature, None)
        self.unsupported.get(ifname, {}).pop(feature, None)

    def _step(self, ifname, feature, func, *args):
        """Run one apply step; a refusal is reported and the next step runs."""
        try:
            result = func(*args)
        except Refused as err:
            self._report(ifname, feature, err)
            return None
        except NetlinkRequestError as err:
            self._report(ifname, feature, refusal(feature, err))
            return None
        except OSError as err:
            self._report(ifname, feature, refusal(feature, err))
            return None
        self._resolved(ifname, feature)
        return result

    # -- apply ------------------------------------------------------------

    def apply(self, *ifnames):
        return "; ".join("%s: %s" % (name, self._guarded(name, self._apply_device, name))
                         for name in ifnames)

    def _guarded(self, ifname, func, *args):
        """func(*args), or a logged error when the kernel has no ethtool
        netlink family at all (CONFIG_ETHTOOL_NETLINK off) or the socket
        fails: nothing of this tuner may reach TuneD as an exception."""
        try:
            return func(*args)
        except (IrqtuneError, OSError) as err:
            self._report(ifname, "ethtool netlink", Refused(str(err), True))
            return "nothing applied"

    def _apply_device(self, ifname):
        ifindex = self._ifindex(ifname)
        if ifindex is None:
            return "device gone"
        saved = self._saved(ifname, ifindex)
        target = self.targets[ifname] = {}
        done = []
        with self._nic() as nic:
            if self.config.queues is not None:
                if self.config.rss and "rss" not in saved:
                    rss_before = self._step(ifname, "rss", self._read_rss, nic, ifindex)
                    if rss_before is not None:
                        saved["rss"] = rss_before
                        self._save_state()
                count = self._step(ifname, "channels", self._apply_channels, ifname, nic,
                                   ifindex, saved, target)
                if count is not None:
                    done.append("%d rx queues" % count)
                    reserved = self._step(ifname, "queues", self._reserve, count)
                    if reserved:
                        target["reserved"] = reserved
                        done.append("reserved %s" % ranges(reserved))
            if self.config.header_split is not None:
                if self._step(ifname, "tcp-data-split", self._apply_split, nic, ifindex, saved):
                    done.append("header split " + ("on" if self.config.header_split else "off"))
            if self.config.hds_thresh is not None:
                if self._step(ifname, "hds-thresh", self._apply_hds, nic, ifindex, saved):
                    done.append("hds-thresh %d" % self.config.hds_thresh)
            if self.config.ntuple is not None:
                if self._step(ifname, NTUPLE, self._apply_ntuple, nic, ifindex, saved):
                    done.append("ntuple " + ("on" if self.config.ntuple else "off"))
            if self.config.rss and target.get("reserved") and "rss" in saved:
                if self._step(ifname, "rss", self._apply_rss, nic, ifindex, saved, target):
                    done.append("RSS over queues 0-%d" % (target["reserved"][0] - 1))
        if self.config.rules and target.get("reserved"):
            added = self._step(ifname, "flow rules", self._apply_rules, ifname, saved, target)
            if added is not None:
                done.append("%d flow rules" % len(self.config.rules))
        if self._napi_factory is not None and target.get("reserved"):
            done.append("%d NAPIs of reserved queues set" % self._apply_napi(ifname, target))
        self._save_state()
        return ", ".join(done) or "nothing applied"

    def _apply_napi(self, ifname, target):
        tuner = self.napi.get(ifname)
        if tuner is not None and list(tuner.queues) != target["reserved"]:
            tuner.restore_all()       # other queues reserved now (channel change)
            tuner = None
        if tuner is None:
            tuner = self.napi[ifname] = self._napi_factory(ifname, target["reserved"])
        return tuner.apply(ifname)

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
        have = _n(current, kind + "-count")
        original = saved.setdefault("channels", {}).setdefault(kind, have)
        self._save_state()
        maximum = _n(current, kind + "-max")
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

    def _reserve(self, count):
        n = self.config.queues
        if count < n + 1:
            raise Refused("reserving %d rx queues needs at least %d and the device has %d "
                          "(its channel maximum)" % (n, n + 1, count))
        return list(range(count - n, count))

    def _apply_split(self, nic, ifindex, saved):
        rings = nic.rings(ifindex)
        reported = rings.get("tcp-data-split", 0)
        want = SPLIT_ON if self.config.header_split else TCP_DATA_SPLIT["off"]
        first = "tcp-data-split" not in saved.get("rings", {})
        if first:
            saved.setdefault("rings", {})["tcp-data-split"] = reported
            self._save_state()
        try:
            changed = nic.set_rings(ifindex, **{"tcp-data-split": want})
        except NetlinkRequestError:
            if first:       # nothing changed: nothing to put back on restore
                del saved["rings"]["tcp-data-split"]
                self._save_state()
            raise
        if first and changed and reported == want:
            # The reply shows the driver's state, not its configuration: a
            # configuration change although the reply already showed `want`
            # means the configuration was "auto" (netdevsim reports auto as on).
            saved["rings"]["tcp-data-split"] = TCP_DATA_SPLIT["auto"]
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
        if (NTUPLE in features.get("active", ())) == want:
            saved.setdefault("features", {}).setdefault(NTUPLE, NTUPLE in features.get("wanted", ()))
            self._save_state()
            return True
        if NTUPLE not in features.get("hw", ()):
            raise Refused("the driver cannot change %s (not among its changeable features)"
                          % NTUPLE, True)
        saved.setdefault("features", {}).setdefault(NTUPLE, NTUPLE in features.get("wanted", ()))
        self._save_state()
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
                if err.code != errno.EOPNOTSUPP:
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
        wanted = [spec.on_queue(reserved[i % len(reserved)])
                  for i, spec in enumerate(self.config.rules)]
        target["rules"] = wanted
        have = {}
        for entry in mine:
            rule = self._rule_at(rules, entry["location"])
            if rule is not None and rule.as_dict() == rule_fields(entry):
                have[rule] = entry["location"]
        for rule in wanted:
            if rule in have:
                continue
            location = rules.insert(rule)
            entry = dict(rule.as_dict(), location=location)
            mine[:] = [e for e in mine if e["location"] != location] + [entry]
            self._save_state()
            log.info("%s: flow rule %s at location %d", ifname, rule.describe(), location)
        return True

    @staticmethod
    def _rule_at(rules, location):
        try:
            return rules.get(location)
        except OSError as err:
            if err.errno in (errno.ENOENT, errno.EINVAL):
                return None
            raise

    @on_kernel_name
    def apply_new(self, ifname):
        """After a link event or on a timer: a device re-created under a new
        ifindex is prepared again with new originals, and flow rules a
        driver reset dropped are inserted again.  Rings, features and the
        RSS table live in the kernel's device configuration, which survives
        driver resets; a change to them is someone's deliberate act that
        verify reports rather than a tug of war."""
        ifindex = self._ifindex(ifname)
        if ifindex is None:
            return ""
        saved = self.originals.get(ifname)
        if saved is None or saved.get("ifindex") != ifindex:
            return self.apply(ifname)
        target = self.targets.get(ifname, {})
        retuned = self.napi[ifname].apply_new(ifname) if ifname in self.napi else 0
        if not (self.config.rules and target.get("reserved")):
            return "%d NAPIs of reserved queues set again" % retuned if retuned else ""
        rules = self._rules(ifname)
        missing = [e for e in saved.get("rules", [])
                   if self._step(ifname, "flow rules", self._rule_at, rules, e["location"]) is None]
        if not missing:
            return ""
        self._step(ifname, "flow rules", self._apply_rules, ifname, saved, target)
        self._save_state()
        return "%d flow rules inserted again" % len(missing)

    # -- verify -----------------------------------------------------------

    @on_kernel_name
    def verify(self, ifname):
        """[Check] of everything applied; what the driver lacks
        (self.unsupported[ifname]) is named in the log and left out."""
        for feature, why in sorted(self.unsupported.get(ifname, {}).items()):
            log.info("verify: %s: %s: not checked: %s", ifname, feature, why)
        try:
            return self._verify(ifname)
        except (IrqtuneError, OSError) as err:
            return [Check("zero-copy receive preparation", None, "readable", False, str(err))]

    def _verify(self, ifname):
        ifindex = self._ifindex(ifname)
        if ifindex is None:
            return []
        target = self.targets.get(ifname, {})
        problems = self.problems.get(ifname, {})
        skip = self.unsupported.get(ifname, {})
        checks = []

        def check(what, feature, current, expected):
            ok = current == expected
            checks.append(Check(what, current, expected, ok,
                                "" if ok else problems.get(feature, "changed since it was set")))

        def read(feature, func, *args):
            try:
                return func(*args)
            except (NetlinkRequestError, OSError) as err:
                checks.append(Check(feature, None, "readable", False, str(refusal(feature, err))))
                return None

        with self._nic() as nic:
            if "channels" in target and "channels" not in skip:
                channels = read("channels", nic.channels, ifindex)
                for kind, want in target["channels"].items() if channels is not None else ():
                    check("%s channels" % kind, "channels", _n(channels, kind + "-count"), want)
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
                if rss is not None:
                    table = rss.get("indir") or []
                    ok = table == target["indir"]
                    checks.append(Check("RSS indirection table", "queues " + ranges(set(table)),
                                        "queues " + ranges(set(target["indir"])), ok,
                                        "" if ok else problems.get("rss", "changed since it was set")))
        if ifname in self.napi:
            checks.extend(self.napi[ifname].verify(ifname))
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

    # -- restore ----------------------------------------------------------

    @on_kernel_name
    def restore(self, ifname):
        try:
            self._restore(ifname)
        except (IrqtuneError, OSError) as err:
            log.error("%s: cannot restore the zero-copy receive preparation: %s", ifname, err)

    def _restore(self, ifname):
        # NAPI values first: drivers with persistent NAPI config keep a
        # dropped queue's values in its slot for the next channel raise.
        napi = self.napi.pop(ifname, None)
        if napi is not None:
            napi.restore_all()
        self.targets.pop(ifname, None)
        self.problems.pop(ifname, None)
        self.unsupported.pop(ifname, None)
        saved, ifindex = take_device(self.originals, ifname, self._ifindex)
        if saved is None:
            self._save_state(before_change=False)
            return
        if saved.get("rules"):
            self._undo(ifname, "flow rules", self._restore_rules, ifname, saved["rules"])
        with self._nic() as nic:
            if "rss" in saved:
                self._undo(ifname, "RSS table", self._restore_rss, nic, ifindex, saved["rss"])
            for name, wanted in saved.get("features", {}).items():
                self._undo(ifname, name, nic.set_features, ifindex, {name: wanted})
            rings = saved.get("rings", {})
            if "hds-thresh" in rings:
                self._undo(ifname, "hds-thresh", nic.set_rings, ifindex,
                           **{"hds-thresh": rings["hds-thresh"]})
            if "tcp-data-split" in rings:
                self._undo(ifname, "tcp-data-split", nic.set_rings, ifindex,
                           **{"tcp-data-split": rings["tcp-data-split"]})
            if saved.get("channels"):
                self._undo(ifname, "channels", self._restore_channels, nic, ifindex,
                           saved["channels"])
        log.info("%s: zero-copy receive preparation undone", ifname)
        self._save_state(before_change=False)

    def _undo(self, ifname, what, func, *args, **kwargs):
        try:
            func(*args, **kwargs)
        except (NetlinkRequestError, OSError) as err:
            log.error("%s: cannot restore %s: %s", ifname, what, refusal(what, err))

    def _restore_rules(self, ifname, entries):
        rules = self._rules(ifname)
        for entry in entries:
            if self._rule_at(rules, entry["location"]) == as_rule(entry):
                rules.delete(entry["location"])
            else:
                log.info("%s: flow rule slot %d no longer holds the rule irqtune added; "
                         "left alone", ifname, entry["location"])

    @staticmethod
    def _restore_rss(nic, ifindex, original):
        nic.set_rss_indir(ifindex, [] if original.get("default") else original["indir"])

    @staticmethod
    def _restore_channels(nic, ifindex, counts):
        current = nic.channels(ifindex)
        changes = {k: v for k, v in counts.items() if _n(current, k + "-count") != v}
        if changes:
            nic.set_channels(ifindex, **changes)

    @on_kernel_name
    def forget(self, ifname):
        napi = self.napi.pop(ifname, None)
        if napi is not None:
            napi.forget(ifname)
        self.targets.pop(ifname, None)
        self.problems.pop(ifname, None)
        self.unsupported.pop(ifname, None)
        if self.originals.pop(ifname, None) is not None:
            self._save_state(before_change=False)



def nic_name(ifindex):
    try:
        return socket.if_indextoname(ifindex)
    except OSError:
        return "ifindex %d" % ifindex


def _ethtool_family():
    from ..netlink.ethtool_rx import RxConfigFamily
    return RxConfigFamily()


def _ntuple_rules(ifname):
    from ..netlink.ethtool_ntuple import NtupleRules
    return NtupleRules(ifname)
