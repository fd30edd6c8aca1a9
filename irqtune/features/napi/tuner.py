# SPDX-License-Identifier: GPL-2.0-or-later
"""The NAPI tuner: applies a NapiConfig, verifies and restores it.

Values go per NAPI through netdev napi-set where the kernel has it (6.13+),
else through the device-wide sysfs files, which are the only interface
older kernels have (and which, on 6.13+, overwrite every NAPI of the
device - so they are never written when napi-set can do the job).
"""

import errno
import logging
from dataclasses import replace
from functools import partial

from ...kernel.caps import detect_napi_capabilities
from ...kernel.errors import OptionError, describe_os_error
from ...kernel.kfs import KFS
from ...kernel.names import option_name
from ...kernel.napi_attrs import BY_NAME, DEFER_HARD_IRQS, GRO_FLUSH_TIMEOUT, IRQ_SUSPEND_TIMEOUT
from ...kernel.netlink.genl import NetlinkRequestError
from ...kernel.netlink.netdev import NapiFamily, QueueFamily
from ...kernel.values import format_index_list
from ...shared.ledger import positioned
from ...shared.measure import follow
from ...shared.options import parse_options
from ...shared.tuner import Check, DeviceTuner, on_kernel_name, verify_on_kernel_name
from .config import OPTIONS, QUEUE_VALUES, NapiConfig, parse_queues

log = logging.getLogger(__name__)


class NapiTuner(DeviceTuner):
    """Applies one NapiConfig to devices and restores what was there.

    originals: {ifname: {"ifindex": n, "napi": {position: {attr: v}},
    "ids": [NAPI id seen], "sysfs": {attr: v}}}
    - the first value seen for each NAPI/file, before any change; it is
    never overwritten while the tuning is active, so re-applying (NAPI churn,
    a daemon restart with persisted state) cannot mistake tuned values for
    originals.

    A NAPI is known by its device and its position among the device's NAPIs
    in id order, not by its id: drivers without persistent NAPI config
    (veth, many others) recreate NAPIs with new ids on down/up or a channel
    change, and the kernel may hand the new NAPI the old struct with a tuned
    irq-suspend-timeout still in it. The recreated NAPI inherits the
    original of the one it replaced.
    """

    def __init__(self, config, caps, queues=None, ledger=None, kfs=KFS, ifindex=None,
                 ifname=None, follower=None):
        super().__init__(ledger, ifindex, ifname)
        self.config = config
        self.caps = caps
        self.queues = queues
        self.kfs = kfs
        # the values that follow measured services (irqtune.shared.measure.follow.Follower)
        self.follower = follower
        self.tuned = {}             # {device: None} applied and not restored: what tick sets
        self.originals = self._load_state()
        self.per_napi, self.per_device, self.unsupported = self._plan()

    def _books(self):
        return [self.tuned]

    def describe(self, result):
        return "set %d NAPIs" % result

    def _plan(self):
        """Split the wanted attributes by how they can be set on this kernel."""
        per_napi, per_device, unsupported = {}, {}, {}
        fallback_why = None
        for attr, value in self.config.attrs().items():
            missing, spec = self.caps.missing(attr, value), BY_NAME[attr]
            if missing is None:
                per_napi[attr] = value
            elif spec.sysfs_file and self.queues is None and \
                    (spec.sysfs_max is None or value <= spec.sysfs_max):
                per_device[attr] = value
                fallback_why = missing
            elif self.queues is not None and spec.sysfs_file:
                unsupported[attr] = "queues= needs per-NAPI control, but " + missing
            else:
                unsupported[attr] = missing
        for attr, why in unsupported.items():
            log.warning("%s not applied: %s", option_name(attr), why)
        if per_device:
            log.warning("%s: no per-NAPI control on this kernel (%s), using the device-wide "
                        "sysfs files", ", ".join(option_name(a) for a in per_device), fallback_why)
        effective = dict(per_napi, **per_device)
        if effective.get(IRQ_SUSPEND_TIMEOUT.name) and not (
                effective.get(DEFER_HARD_IRQS.name) and effective.get(GRO_FLUSH_TIMEOUT.name)):
            log.warning("%s is set without both %s and %s: suspension has no effect without "
                        "deferral", IRQ_SUSPEND_TIMEOUT.option, DEFER_HARD_IRQS.option,
                        GRO_FLUSH_TIMEOUT.option)
        return per_napi, per_device, unsupported

    def _from_ledger(self, originals):
        for saved in originals.values():
            saved["napi"] = {int(k): v for k, v in saved.get("napi", {}).items()}
            saved["ids"] = set(saved.get("ids", ()))
        return originals

    def _to_ledger(self):
        return {name: dict(dev, ids=sorted(dev["ids"])) for name, dev in self.originals.items()}

    def _saved(self, ifname, ifindex=None):
        ifindex = self._ifindex(ifname) if ifindex is None else ifindex
        return self._originals_of(ifname, ifindex, ids=set(), napi={}, sysfs={})

    def _napis_in_scope(self, nl, ifnames):
        """{ifname: [(position, NAPI)]} for the devices whose scope can be served.

        Without a queue scope one dump of the namespace serves many devices.
        """
        if self.queues is not None:
            scoped = {ifname: self._queue_scoped_napis(nl, ifname) for ifname in ifnames}
            return {ifname: napis for ifname, napis in scoped.items() if napis is not None}
        by_index = {self._ifindex(name): name for name in ifnames}
        by_index.pop(None, None)
        return {by_index[ifindex]: positioned(found)
                for ifindex, found in _napis_of(nl, by_index).items()}

    def _queue_scoped_napis(self, nl, ifname):
        ifindex = self._ifindex(ifname)
        if ifindex is None:
            return None
        napis = nl.napis(ifindex)
        with QueueFamily() as qf:
            links = qf.rx_queue_napis(ifindex)
        if napis and not links:
            log.error("%s: queues=%s: the driver does not link rx queues to NAPIs, "
                      "so NAPIs cannot be chosen by queue; nothing set on %s",
                      ifname, ",".join(map(str, self.queues)), ifname)
            return None
        absent = [q for q in self.queues if q not in links]
        if absent and links:
            log.warning("%s: rx queues %s do not exist or have no NAPI",
                        ifname, ",".join(map(str, absent)))
        wanted = {links[q] for q in self.queues if q in links}
        return [(pos, n) for pos, n in positioned(napis) if n["id"] in wanted]

    def apply(self, *ifnames):
        """Tune every NAPI in scope of the devices; returns how many NAPIs were set."""
        self.tuned.update(dict.fromkeys(ifnames))
        count = self._apply_napis(ifnames) if self.per_napi else 0
        for ifname in ifnames:
            for attr, value in self.per_device.items():
                self._apply_sysfs(ifname, attr, value)
        self._save_state()
        return count

    @on_kernel_name
    def apply_new(self, *ifnames):
        """Tune NAPIs that appeared since the last apply (driver reset, link up).

        Drivers without persistent NAPI config create NAPIs with new ids and
        device-default values; known ids are left for verify to judge.
        """
        return self._apply_napis(ifnames, only_new=True) if self.per_napi else 0

    def _apply_napis(self, ifnames, only_new=False):
        changes, owner = {}, {}
        with NapiFamily() as nl:
            for ifname, napis in self._napis_in_scope(nl, ifnames).items():
                dev = self._saved(ifname, napis[0][1]["ifindex"] if napis else None)
                saved = dev["napi"]
                for pos, napi in napis:
                    if only_new and napi["id"] in dev["ids"]:
                        continue
                    dev["ids"].add(napi["id"])
                    # first value wins per value: the position may carry
                    # originals of other values already (another profile's or
                    # instance's, taken over after a crash)
                    book = saved.setdefault(pos, {})
                    for attr in self.per_napi:
                        book.setdefault(attr, napi.get(attr))
                    diff = {a: v for a, v in self.per_napi.items() if napi.get(a) != v}
                    if diff:
                        changes[napi["id"]] = diff
                        owner[napi["id"]] = ifname
            self._save_state()      # originals reach the disk before anything changes
            errors = nl.set_napis(changes)
        for napi_id, err in errors.items():
            if err.errno == errno.ENOENT:
                # Gone between the dump and the set: the device was removed,
                # or its driver recreated the NAPI - then the link event
                # brings the new one to apply_new.
                log.info("%s: NAPI %d went away before it was set", owner[napi_id], napi_id)
            else:
                log.error("%s: NAPI %d: %s", owner[napi_id], napi_id, err)
        return len(changes) - len(errors)

    def _apply_sysfs(self, ifname, attr, value):
        path = self._sysfs_path(ifname, attr)
        try:
            current = self.kfs.read_int(path)
            self._saved(ifname)["sysfs"].setdefault(attr, current)
            self._save_state()
            if current != value:
                self.kfs.write_int(path, value)
        except OSError as err:
            log.error("%s: cannot set %s through %s: %s", ifname, option_name(attr), path,
                      describe_os_error(err, with_path=False))

    def tick(self, lock):
        """On the plugin's periodic re-check: the auto values' services are
        measured when a window is due (irqtune.shared.measure.follow.Follower; the
        window runs without lock, so verify need not wait for it) and a
        change is set on every device tuned, under lock - nothing when the
        devices were restored meanwhile (the profile is being unapplied).
        Returns the Change, for the plugin's one log line, or None."""
        if self.follower is None:
            return None
        change = self.follower.tick()
        if change is None:
            return None
        with lock:
            if not self.tuned:
                return None
            self._retarget(change.targets(), sorted(self.tuned))
        return change

    def _retarget(self, values, ifnames):
        """New targets {attr: value}, set on every NAPI in scope of the
        devices, or their sysfs files where the kernel has no napi-set; a
        value the kernel cannot take (unsupported) stays out.  The
        originals are not touched - the first value seen wins - so restore
        is as before; verify checks these values from now on."""
        for attr, value in values.items():
            for planned in (self.per_napi, self.per_device):
                if attr in planned:
                    planned[attr] = value
        self.config = replace(self.config, **{option_name(a): v for a, v in values.items()})
        return self.apply(*[self.kernel_name(name) for name in ifnames])

    @property
    def needs_watching(self):
        # only NAPIs come back with defaults; sysfs values are per device
        return bool(self.per_napi)

    @verify_on_kernel_name
    def verify(self, ifname):
        """[Check] for every value in scope."""
        results = []
        if self.per_napi:
            try:
                with NapiFamily() as nl:
                    napis = self._napis_in_scope(nl, [ifname]).get(ifname)
            except NetlinkRequestError as err:
                napis = []
                if err.errno != errno.ENODEV:        # ENODEV: the device is gone
                    log.error("%s: %s", ifname, err)
                    results.append(Check("NAPIs", None, "readable", False, str(err)))
            if napis is None and self._ifindex(ifname) is not None:
                # queues= on a driver that links no rx queue to a NAPI:
                # nothing was set, which is not "nothing to check"
                results.append(Check("queues", "no rx queue linked to a NAPI",
                                     format_index_list(self.queues), False,
                                     "the driver does not link rx queues to NAPIs, so NAPIs "
                                     "cannot be chosen by queue; nothing is set"))
            for _, napi in napis or ():
                for attr, value in self.per_napi.items():
                    results.append(Check.compare("NAPI %d %s" % (napi["id"], option_name(attr)),
                                                 napi.get(attr), value))
        for attr, value in self.per_device.items():
            try:
                current = self.kfs.read_int(self._sysfs_path(ifname, attr))
            except (OSError, ValueError):
                current = None
            results.append(Check.compare(option_name(attr), current, value))
        return results

    @on_kernel_name
    def restore(self, ifname):
        """Put back the originals of one device, then forget them.

        Used when the device leaves the instance while it still exists
        (`tuned-adm instance_acquire_devices`, hotplug remove): forgetting
        without restoring would hand the tuned values to the next instance
        as its originals.  A device that is gone only has its originals
        dropped.
        """
        self._drop(ifname)
        dev = self.originals.pop(ifname, None)
        if dev is None:
            return
        self._restore({ifname: dev})
        self._save_state(before_change=False)

    def restore_all(self):
        """Put back every saved original and forget them."""
        self.tuned = {}
        self._restore(self.originals)
        self.originals = {}
        self._remove_ledger()

    def _restore(self, originals):
        """Write back, in one napi-set batch, only the values that differ.

        A NAPI gets the original saved for its position on its device, also
        when the driver recreated it meanwhile; positions with no NAPI now
        (link down, fewer channels) have nothing to restore.  Devices are
        found by the ifindex their originals were saved with, in the dump
        itself: one renamed meanwhile still gets them, one removed and
        created again under the same name (a new ifindex) does not, and no
        name needs looking up.
        """
        by_index = {dev["ifindex"]: dev["napi"] for dev in originals.values()
                    if dev["napi"] and dev.get("ifindex") is not None}
        if by_index:
            with NapiFamily() as nl:
                changes = {}
                for ifindex, found in _napis_of(nl, by_index).items():
                    for pos, napi in positioned(found):
                        values = by_index[ifindex].get(pos, {})
                        diff = {a: v for a, v in values.items()
                                if v is not None and napi.get(a) != v}
                        if diff:
                            changes[napi["id"]] = diff
                for napi_id, err in nl.set_napis(changes).items():
                    log.error("NAPI %d: cannot restore: %s", napi_id, err)
        for name, dev in originals.items():
            now = self._name_now(name, dev) if dev["sysfs"] else None
            for attr, value in dev["sysfs"].items() if now else ():
                # Only what differs: on 6.13+ a write also resets every NAPI.
                path = self._sysfs_path(now, attr)
                try:
                    if self.kfs.read_int(path) != value:
                        self.kfs.write_int(path, value)
                except (OSError, ValueError) as err:
                    log.error("%s: cannot restore %s: %s", now, option_name(attr),
                              describe_os_error(err, with_path=False))

    def _sysfs_path(self, ifname, attr):
        return self.kfs.net_path(ifname, BY_NAME[attr].sysfs_file)


def _napis_of(nl, ifindexes):
    """{ifindex: [NAPI]} of the devices: one device's own dump (none when
    it is gone: ENODEV), or one dump of the namespace for several."""
    found = {ifindex: [] for ifindex in ifindexes}
    try:
        if len(found) == 1:
            napis = nl.napis(next(iter(found)))
        else:
            napis = nl.all_napis() if found else []
    except NetlinkRequestError as err:
        if err.errno != errno.ENODEV:
            raise
        napis = []
    for napi in napis:
        if napi.get("ifindex") in found:
            found[napi["ifindex"]].append(napi)
    return found


def build(options, env):
    """(NapiTuner or None, [OptionError]) from the napi plugin's options.

    The re-check interval comes first: gro_flush_timeout=auto and
    irq_suspend_timeout=auto measure on it (irqtune.shared.measure.follow,
    which starts them at the series' values).  A bad value is left out; a
    bad queues leaves no tuner, as a scope left out would widen to every NAPI.
    """
    given, errors = parse_options([o for o in OPTIONS if o.name == "recheck_interval"], options)
    recheck = given.get("recheck_interval", NapiTuner.recheck_interval)
    config, more = NapiConfig.from_options(options, allow_auto=True)
    errors += more
    try:
        queues = parse_queues(options.get("queues"))
    except OptionError as err:
        return None, errors + [err]
    values, more = follow.from_options(config, options, recheck)
    tuner = NapiTuner(config, detect_napi_capabilities(env.kfs), queues=queues, kfs=env.kfs,
                      ledger=env.ledger("napi-" + env.instance, kin="napi-"), follower=values)
    tuner.recheck_interval = recheck
    return tuner, errors + more


def build_for_queues(options, env):
    """For a feature that reserves queues (zerocopy_rx's napi_* options,
    QUEUE_VALUES): (make(queues=, ledger=) -> NapiTuner of those queues,
    or None when no value is set, [OptionError])."""
    config, errors = NapiConfig.from_options(options, declared=QUEUE_VALUES)
    if not config.attrs():
        return None, errors
    return partial(NapiTuner, config, detect_napi_capabilities(env.kfs), kfs=env.kfs), errors
