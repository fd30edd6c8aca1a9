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
(`lacking`, per device - not the contract's `unsupported`, which is what
the kernel cannot do and fails verify); a driver that refuses a value
(EINVAL with its extack) is named once too, and verify shows the
difference.  The steps' kernel I/O is in steps.py (NicSteps), verify's
reads and comparisons in checks.py (NicChecks).
"""

import logging

from ...kernel.errors import IrqtuneError, describe_os_error
from ...kernel.netlink.ethtool import change_channels
from ...kernel.netlink.ethtool_ntuple import NtupleRules
from ...kernel.netlink.ethtool_rx import RxConfigFamily
from ...shared.ledger import take_device
from ...shared.overlay import overlaid
from ...shared.tuner import Check, DeviceTuner, Refusals, on_kernel_name, verify_on_kernel_name
from .checks import NicChecks
from .config import OPTIONS, OVERLAY_PREFIX, ZeroCopyConfig
from .leases import LEASES, LeaseKernel, LeaseSteps
from .plan import Refused, ranges, refusal, reserve
from .steps import NTUPLE, NicSteps

log = logging.getLogger(__name__)


class ZeroCopyRxTuner(LeaseSteps, NicSteps, NicChecks, DeviceTuner):
    """Applies one ZeroCopyConfig to devices; see the module text.

    originals: {ifname: {"ifindex": n, "channels": {"combined": 2},
        "rings": {"tcp-data-split": 0, "hds-thresh": 256},
        "features": {"rx-ntuple-filter": False},
        "rss": {"default": True} | {"indir": [...]},
        "rules": [{"location": n, "flow": ..., "dst_port": ..., "queue": ...}],
        "leases": [{"queue": n, "netns": ..., "device": ..., "ifindex": n,
                    "lessee_queue": n or None (requested, not confirmed)}]}}

    nic: a factory returning a context manager with the RxConfigFamily
    methods; rules: ifname -> NtupleRules; both are fakes in unit tests.
    napi: None, or (ifname, reserved queue list) -> a NapiTuner scoped to
    those queues, for per-NAPI values on the reserved queues only.
    leases: the kernel side of queue leases (leases.LeaseKernel; a fake in
    unit tests).
    """

    def __init__(self, config, ledger=None, nic=None, rules=None, ifindex=None, napi=None,
                 ifname=None, leases=None):
        super().__init__(ledger, ifindex, ifname)
        self.config = config
        self._nic = nic or RxConfigFamily
        self._rules = rules or NtupleRules
        self._napi_factory = napi
        self._leases = leases or LeaseKernel
        self.napi = {}          # ifname -> NapiTuner of its reserved queues
        self.targets = {}       # ifname -> {"channels": {...}, "reserved": [..], "indir": [...]}
        self.problems = Refusals(log)     # refused values (verify fails)
        self.lacking = Refusals(log)      # features missing in the driver
        self.waiting = Refusals(log)      # leases whose container is not there yet
        self.originals = self._load_state()

    @property
    def needs_watching(self):
        """Flow rules are lost on driver resets, NAPIs of some drivers are
        recreated with defaults, and containers to lease queues to start
        later (see apply_new)."""
        return bool(self.config.rules or self.config.leases) or self._napi_factory is not None

    def _books(self):
        return [self.napi, self.targets, self.problems.by_device, self.lacking.by_device,
                self.waiting.by_device]

    def _drop(self, ifname):
        napi = self.napi.pop(ifname, None)
        if napi is not None:
            napi.forget(ifname)
        super()._drop(ifname)

    def _kin_fits(self, entry):
        # the per-device NAPI ledgers beside ours ("ids") are NapiTuners'
        return "ids" not in entry

    def _report(self, ifname, feature, refused):
        """Log a refusal the first time it is seen for this device and feature."""
        book, other = (self.lacking, self.problems) if refused.unsupported else \
            (self.problems, self.lacking)
        other.resolve(ifname, feature)
        book.add(ifname, feature, str(refused))

    def _step(self, ifname, feature, func, *args):
        """Run one apply step; a refusal is reported and the next step runs,
        a success forgets the feature's earlier refusal."""
        try:
            result = func(*args)
        except Refused as err:
            self._report(ifname, feature, err)
            return None
        except OSError as err:     # NetlinkRequestError too
            self._report(ifname, feature, refusal(feature, err))
            return None
        for book in (self.problems, self.lacking):
            book.resolve(ifname, feature)
        return result

    def apply(self, *ifnames):
        """Each device prepared, or a logged error when the kernel has no
        ethtool netlink family at all (CONFIG_ETHTOOL_NETLINK off) or the
        socket fails: nothing of this tuner may reach TuneD as an exception."""
        done = []
        for name in ifnames:
            try:
                done.append("%s: %s" % (name, self._apply_device(name)))
            except (IrqtuneError, OSError) as err:
                self._report(name, "ethtool netlink", Refused(describe_os_error(err), True))
                done.append("%s: nothing applied" % name)
        return "; ".join(done)

    def _apply_device(self, ifname):
        ifindex = self._ifindex(ifname)
        if ifindex is None:
            return "device gone"
        saved = self._originals_of(ifname, ifindex)
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
                    reserved = self._step(ifname, "queues", reserve, count, self.config.queues)
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
            if self._step(ifname, "flow rules", self._apply_rules, ifname, saved, target):
                done.append("%d flow rules" % len(self.config.rules))
        if self._napi_factory is not None and target.get("reserved"):
            done.append("%d NAPIs of reserved queues set" % self._apply_napi(ifname, target))
        if self.config.leases and target.get("reserved"):
            held = self._step(ifname, LEASES, self._apply_leases, ifname, ifindex, saved, target)
            if held:
                done.append("%d rx queues leased" % held)
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
        again = self._lease_again(ifname, ifindex, saved, target)
        retuned = self.napi[ifname].apply_new(ifname) if ifname in self.napi else 0
        if retuned:
            again.append("%d NAPIs of reserved queues set again" % retuned)
        if (not (self.config.rules and target.get("reserved"))
                or "flow rules" in self.lacking.of(ifname)):
            # nothing to put back; and a read that succeeds on a driver
            # without flow rules must not clear that it has none
            return ", ".join(again)
        rules = self._rules(ifname)
        self._step(ifname, "flow rules", self._settle_pending_rules, rules,
                   saved.get("rules", []))
        missing = [e for e in saved.get("rules", [])
                   if self._step(ifname, "flow rules", self._rule_at, rules, e["location"]) is None]
        if missing:
            self._step(ifname, "flow rules", self._apply_rules, ifname, saved, target)
            self._save_state()
            again.append("%d flow rules inserted again" % len(missing))
        return ", ".join(again)

    def _lease_again(self, ifname, ifindex, saved, target):
        """Leases to containers that appeared since, and forgetting those
        that ended: [what changed]."""
        if (not (self.config.leases and target.get("reserved"))
                or LEASES in self.lacking.of(ifname)):
            return []
        before = {e["queue"] for e in saved.get("leases", [])}
        self._step(ifname, LEASES, self._apply_leases, ifname, ifindex, saved, target)
        made = {e["queue"] for e in saved.get("leases", [])} - before
        return ["rx queues %s leased" % ranges(sorted(made))] if made else []

    @verify_on_kernel_name
    def verify(self, ifname):
        """[Check] of everything applied; what the driver lacks
        (self.lacking) is named in the log and left out."""
        for feature, why in sorted(self.lacking.of(ifname).items()):
            log.info("verify: %s: %s: not checked: %s", ifname, feature, why)
        try:
            return self._verify(ifname)
        except (IrqtuneError, OSError) as err:
            return [Check("zero-copy receive preparation", None, "readable", False,
                          describe_os_error(err))]

    @on_kernel_name
    def restore(self, ifname):
        try:
            self._restore(ifname)
        except (IrqtuneError, OSError) as err:
            log.error("%s: cannot restore the zero-copy receive preparation: %s", ifname,
                      describe_os_error(err))

    def _restore(self, ifname):
        # NAPI values first: drivers with persistent NAPI config keep a
        # dropped queue's values in its slot for the next channel raise.
        napi = self.napi.pop(ifname, None)
        if napi is not None:
            napi.restore_all()
        self._drop(ifname)
        saved, ifindex = take_device(self.originals, ifname, self._ifindex)
        if saved is None:
            self._save_state(before_change=False)
            return
        if saved.get("leases"):       # before channels: a leased queue cannot be dropped
            self._undo(ifname, "queue leases", self._release_leases, ifname, ifindex, saved)
        if saved.get("rules"):
            self._undo(ifname, "flow rules", self._restore_rules, ifname, saved["rules"])
        with self._nic() as nic:
            rss = saved.get("rss")
            if rss is not None:
                self._undo(ifname, "RSS table", nic.set_rss_indir, ifindex,
                           [] if rss.get("default") else rss["indir"])
            for name, wanted in saved.get("features", {}).items():
                self._undo(ifname, name, nic.set_features, ifindex, {name: wanted})
            rings = saved.get("rings", {})
            for name in ("hds-thresh", "tcp-data-split"):
                if name in rings:
                    self._undo(ifname, name, nic.set_rings, ifindex, **{name: rings[name]})
            if saved.get("channels"):
                self._undo(ifname, "channels", change_channels, nic, ifindex, saved["channels"])
        log.info("%s: zero-copy receive preparation undone", ifname)
        self._save_state(before_change=False)

    def _undo(self, ifname, what, func, *args, **kwargs):
        try:
            func(*args, **kwargs)
        except OSError as err:
            log.error("%s: cannot restore %s: %s", ifname, what, refusal(what, err))


def build(options, env, napi=None):
    """(ZeroCopyRxTuner, [OptionError]) from the zerocopy_rx plugin's
    options, laid over by its variables_file's zerocopy_<option>= lines.

    napi: None, or the feature (irqtune.shared.options.Feature) that sets
    per-NAPI values on the reserved queues: its options are laid over too,
    its build gives make(queues=, ledger=) -> a tuner of those queues, or
    None; each device's has its own ledger (the reserved queues differ).
    """
    options = overlaid(options, OPTIONS + (napi.options if napi else ()), OVERLAY_PREFIX,
                       env.expand)
    config, errors = ZeroCopyConfig.from_options(options)
    make, more = napi.build(options, env) if napi else (None, [])
    napi_of = None if make is None else lambda ifname, queues: make(
        queues=queues, ledger=env.ledger("zerocopy_rx-%s-napi-%s" % (env.instance, ifname)))
    return ZeroCopyRxTuner(config, ledger=env.ledger("zerocopy_rx-" + env.instance,
                                                     kin="zerocopy_rx-"), napi=napi_of), errors + more
