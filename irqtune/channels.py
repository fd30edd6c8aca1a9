# SPDX-License-Identifier: GPL-2.0-or-later
"""Housekeeping-limited NIC queues: channel counts and queue IRQ affinity.

On a host whose CPUs are mostly isolated, a NIC should have no more queues
than there are housekeeping CPUs, and its queue IRQs should fire on those
CPUs only; otherwise moving every vector onto the few housekeeping CPUs
exhausts their interrupt vectors.  HousekeepingTuner does both for a set of
devices, saves what it changes (in memory and in a Ledger) and restores
it exactly.

Order matters: originals of the queue IRQ affinities are read before the
channel count changes (drivers re-spread their IRQs on a channel change),
channels are set, then the queue IRQs are looked up again (some drivers
allocate new vectors) and made affine.  Restore runs the other way round:
channels first, then the saved affinities.

Refusals (EBUSY, EOPNOTSUPP, EINVAL from the driver; EIO from a managed
IRQ) are logged once per device and cause and kept for verify.
"""

import errno
import logging
import socket
from dataclasses import dataclass

from .cpus import housekeeping_cpus, parse_cpulist_option
from .kfs import KFS
from .errors import OptionError, UnsupportedError
from .tuner import Check, DeviceTuner  # noqa: F401 - Check is re-exported
from .irqs import (affinity_error_reason, nic_queue_irqs, read_affinity,
                   read_effective_affinity, write_affinity)
from .netlink.genl import NetlinkRequestError
from .ledger import device_entry
from .values import format_index_list, parse_index_list, parse_int

log = logging.getLogger(__name__)

HOUSEKEEPING = "housekeeping"
MAX_CHANNELS = 65535


def parse_channels(option, text):
    """'housekeeping' | a count 1-65535 | None (empty: leave alone)."""
    if text is None or str(text).strip() == "":
        return None
    if str(text).strip().lower() == HOUSEKEEPING:
        return HOUSEKEEPING
    try:
        return parse_int(option, text, 1, MAX_CHANNELS)
    except OptionError:
        raise OptionError(option, text, "housekeeping, or a channel count from 1 to %d"
                          % MAX_CHANNELS) from None


def parse_irq_affinity(option, text):
    """'housekeeping' | a sorted CPU list | None (empty: leave alone)."""
    if text is None or str(text).strip() == "":
        return None
    if str(text).strip().lower() == HOUSEKEEPING:
        return HOUSEKEEPING
    try:
        return tuple(parse_index_list(option, text))
    except OptionError:
        raise OptionError(option, text, "housekeeping, or a CPU list such as 0-1,4") from None


@dataclass(frozen=True)
class HousekeepingConfig:
    channels: object = None            # None, HOUSEKEEPING or an int
    irq_affinity: object = None        # None, HOUSEKEEPING or a tuple of CPUs
    housekeeping_cpus: tuple = None    # explicit housekeeping CPUs, or None

    @classmethod
    def from_options(cls, options):
        """(config, [OptionError]); a bad value is left out and reported."""
        values, errors = {}, []
        for name, parse in (("channels", parse_channels),
                            ("irq_affinity", parse_irq_affinity),
                            ("housekeeping_cpus", parse_cpulist_option)):
            try:
                value = parse(name, options.get(name))
            except OptionError as err:
                errors.append(err)
                continue
            if value is not None:
                values[name] = tuple(value) if isinstance(value, list) else value
        return cls(**values), errors


# -- channel planning -----------------------------------------------------

def _n(channels, key):
    return int(channels.get(key) or 0)


def plan_channels(current, wanted, housekeeping_count):
    """Target counts {kind: n} for a device whose channels are `current`.

    Combined channels where the driver has them (unless it runs dedicated
    rx/tx channels right now), else rx and tx.  'housekeeping' means
    min(device maximum, housekeeping CPUs) per kind; a number is taken as
    given (a count above the maximum is the driver's to refuse).
    Raises UnsupportedError when the driver reports no channels at all.
    """
    def count(kind):
        if wanted == HOUSEKEEPING:
            return max(1, min(_n(current, kind + "-max"), housekeeping_count))
        return wanted

    dedicated = _n(current, "rx-count") > 0 or _n(current, "tx-count") > 0
    if _n(current, "combined-max") > 0 and (_n(current, "combined-count") > 0 or not dedicated):
        return {"combined": count("combined")}
    kinds = [k for k in ("rx", "tx") if _n(current, k + "-max") > 0]
    if not kinds:
        raise UnsupportedError("the driver reports no rx, tx or combined channels")
    return {k: count(k) for k in kinds}


def refusal_reason(err):
    """A driver's or the kernel's no, in words."""
    code = getattr(err, "code", None)
    extack = getattr(err, "extack", None)
    if code == errno.EOPNOTSUPP:
        return "the driver cannot report or change channels (EOPNOTSUPP)"
    if code == errno.EBUSY:
        return ("the device is busy (EBUSY%s): queues in use by AF_XDP, devmem or an "
                "RSS context" % (": " + extack if extack else ""))
    if code == errno.EINVAL:
        return "refused (EINVAL%s)" % (": " + extack if extack else "")
    if code in (errno.EPERM, errno.EACCES):
        return "not permitted (%s): needs CAP_NET_ADMIN" % errno.errorcode[code]
    return str(err)


class HousekeepingTuner(DeviceTuner):
    """Applies one HousekeepingConfig to devices and restores what was there.

    originals: {ifname: {"ifindex": n, "channels": {"combined": 4},
                         "irqs": {"27": "0-3"}}}
    - first values seen, never overwritten while the tuning is active.

    channels: an object with channels(ifindex) and set_channels(ifindex,
    **counts) (default: the ethtool netlink family); ifindex: name -> index
    or None; napi: queue IRQs from napi-get are asked from the kernel when
    None (see irqs.nic_queue_irqs).
    """

    def __init__(self, config, ledger=None, kfs=KFS, channels=None, ifindex=None, napi=None):
        self.config = config
        self.ledger = ledger
        self.kfs = kfs
        self._channels = channels
        self._ifindex = ifindex or _ifindex
        self._napi = napi
        self.housekeeping = housekeeping_cpus(
            list(config.housekeeping_cpus) if config.housekeeping_cpus else None, kfs)
        if config.irq_affinity == HOUSEKEEPING:
            self.affinity = tuple(self.housekeeping.cpus)
        else:
            self.affinity = config.irq_affinity
        self.targets = {}       # ifname -> planned channel counts
        self.problems = {}      # ifname -> {what: reason}, for verify
        self.originals = self._load_state()
        log.info("%s", self.housekeeping.describe())

    # -- plumbing ---------------------------------------------------------

    def _family(self):
        if self._channels is not None:
            return _Borrowed(self._channels)
        from .netlink.ethtool import ChannelsFamily
        return ChannelsFamily()

    def _load_state(self):
        if self.ledger is None:
            return {}
        originals = self.ledger.load_devices(self._ifindex)
        for saved in originals.values():
            saved.setdefault("channels", {})
            saved.setdefault("irqs", {})
        return originals

    def _save_state(self, before_change=True):
        """The ledger on disk; see irqtune.ledger for the error policy."""
        if self.ledger is not None:
            (self.ledger.save if before_change else self.ledger.update)(self.originals)

    def _saved(self, ifname, ifindex):
        return device_entry(self.originals, ifname, ifindex, channels={}, irqs={})

    def _problem(self, ifname, what, reason, level=logging.WARNING):
        """Record a refusal; log it the first time only."""
        known = self.problems.setdefault(ifname, {})
        if known.get(what) != reason:
            log.log(level, "%s: %s: %s; left as it is", ifname, what, reason)
        known[what] = reason

    def _resolve(self, ifname, what):
        self.problems.get(ifname, {}).pop(what, None)

    def queue_irqs(self, ifname):
        return nic_queue_irqs(ifname, self.kfs, self._napi)

    # -- apply ------------------------------------------------------------

    def apply(self, *ifnames):
        """Channels, then queue IRQ affinity, per device; a one-line summary."""
        return "; ".join("%s: %s" % (name, self._apply_device(name)) for name in ifnames)

    def _apply_device(self, ifname):
        ifindex = self._ifindex(ifname)
        if ifindex is None:
            return "device gone"
        saved = self._saved(ifname, ifindex)
        done = []
        if self.affinity is not None:
            # Before the channel change: drivers re-spread IRQs when it happens.
            self._record_affinities(ifname, saved)
        if self.config.channels is not None:
            done.append(self._apply_channels(ifname, ifindex, saved))
        if self.affinity is not None:
            done.append(self._apply_affinity(ifname, saved))
        self._save_state()
        return "; ".join(d for d in done if d)

    def _apply_channels(self, ifname, ifindex, saved):
        try:
            with self._family() as fam:
                current = fam.channels(ifindex)
                target = plan_channels(current, self.config.channels, len(self.housekeeping))
                self.targets[ifname] = target
                for kind in target:
                    saved["channels"].setdefault(kind, _n(current, kind + "-count"))
                self._save_state()
                changes = {k: v for k, v in target.items() if _n(current, k + "-count") != v}
                if changes:
                    fam.set_channels(ifindex, **changes)
        except NetlinkRequestError as err:
            self._problem(ifname, "channels", refusal_reason(err))
            return "channels refused"
        except UnsupportedError as err:
            self._problem(ifname, "channels", str(err))
            return "no channels"
        self._resolve(ifname, "channels")
        text = ", ".join("%s %d" % kv for kv in sorted(target.items()))
        if changes:
            log.info("%s: channels set to %s (were %s)", ifname, text,
                     ", ".join("%s %d" % (k, _n(current, k + "-count")) for k in sorted(changes)))
        return "channels " + text

    def _record_affinities(self, ifname, saved, irqs=None):
        for q in irqs if irqs is not None else self.queue_irqs(ifname):
            if str(q.irq) in saved["irqs"]:
                continue
            try:
                saved["irqs"][str(q.irq)] = format_index_list(read_affinity(q.irq, self.kfs))
            except (OSError, OptionError) as err:
                log.debug("%s: cannot read the affinity of IRQ %d: %s", ifname, q.irq, err)
        self._save_state()

    def _apply_affinity(self, ifname, saved, only_new=False):
        irqs = self.queue_irqs(ifname)
        if not irqs:
            self._problem(ifname, "irq_affinity",
                          "no queue IRQs found (virtual device, or vectors irqtune cannot "
                          "attribute)", logging.INFO)
            return "no queue IRQs"
        self._resolve(ifname, "irq_affinity")
        if only_new:
            irqs = [q for q in irqs if str(q.irq) not in saved["irqs"]]
            if not irqs:
                return ""
        self._record_affinities(ifname, saved, irqs)
        target = set(self.affinity)
        moved = 0
        for q in irqs:
            what = "IRQ %d (%s)" % (q.irq, q.name or "?")
            try:
                if set(read_affinity(q.irq, self.kfs)) != target:
                    write_affinity(q.irq, self.affinity, self.kfs)
                    moved += 1
                self._resolve(ifname, what)
            except OSError as err:
                self._problem(ifname, what, affinity_error_reason(err))
            except OptionError as err:
                self._problem(ifname, what, str(err))
        if moved:
            log.info("%s: %d queue IRQs made affine to CPUs %s", ifname, moved,
                     format_index_list(self.affinity))
        return "%d queue IRQs on CPUs %s" % (len(irqs), format_index_list(self.affinity))

    @property
    def needs_watching(self):
        """Drivers re-create queue IRQs on resets; channel counts stay."""
        return self.affinity is not None

    def apply_new(self, ifname):
        """Queue IRQs that appeared since the last apply (driver reset,
        re-allocated vectors): record their originals and make them affine.

        Known IRQs and channel counts are not rewritten here: a change to
        them is someone's deliberate act (ethtool -L, irqbalance) that verify
        reports; rewriting it would only start a tug of war.
        """
        if self.affinity is None:
            return ""
        ifindex = self._ifindex(ifname)
        if ifindex is None:
            return ""
        saved = self._saved(ifname, ifindex)
        result = self._apply_affinity(ifname, saved, only_new=True)
        self._save_state()
        return result

    # -- verify -----------------------------------------------------------

    def verify(self, ifname):
        """[Check] of the channel counts and queue IRQ affinities of ifname."""
        checks = []
        ifindex = self._ifindex(ifname)
        if ifindex is None:
            return checks
        problems = self.problems.get(ifname, {})
        if self.config.channels is not None:
            checks.extend(self._verify_channels(ifname, ifindex, problems))
        if self.affinity is not None:
            checks.extend(self._verify_affinity(ifname, problems))
        return checks

    def _verify_channels(self, ifname, ifindex, problems):
        try:
            with self._family() as fam:
                current = fam.channels(ifindex)
            target = plan_channels(current, self.config.channels, len(self.housekeeping))
        except (NetlinkRequestError, UnsupportedError) as err:
            reason = refusal_reason(err) if isinstance(err, NetlinkRequestError) else str(err)
            return [Check("channels", None, self.config.channels, False, reason)]
        out = []
        for kind, count in sorted(target.items()):
            have = _n(current, kind + "-count")
            out.append(Check("channels %s" % kind, have, count, have == count,
                             problems.get("channels", "") if have != count else ""))
        return out

    def _verify_affinity(self, ifname, problems):
        target = set(self.affinity)
        expected = format_index_list(self.affinity)
        out = []
        for q in self.queue_irqs(ifname):
            what = "IRQ %d (%s)" % (q.irq, q.name or "?")
            try:
                cpus = read_affinity(q.irq, self.kfs)
            except (OSError, OptionError):
                continue      # gone between listing and reading
            note = problems.get(what, "")
            if note.startswith("managed IRQ"):
                # The kernel places managed IRQs (isolcpus=managed_irq): judge
                # where they actually fire.
                eff = read_effective_affinity(q.irq, self.kfs)
                ok = bool(eff) and set(eff) <= target
                out.append(Check(what + " effective affinity", format_index_list(eff or []),
                                 expected, ok, "" if ok else
                                 note + "; boot with isolcpus=managed_irq,<isolated CPUs>"))
                continue
            ok = bool(cpus) and set(cpus) <= target
            if not ok and not note:
                note = ("changed since it was set (irqbalance? ban the isolated CPUs in "
                        "irqbalance, e.g. the [irqbalance] banned_cpus of the realtime "
                        "profiles)")
            out.append(Check(what + " affinity", format_index_list(cpus), expected, ok,
                             "" if ok else note))
        return out

    # -- restore ----------------------------------------------------------

    def restore(self, ifname):
        """Channels first, then the saved affinities; forget ifname."""
        saved = self.originals.pop(ifname, None)
        self.targets.pop(ifname, None)
        self.problems.pop(ifname, None)
        if not saved:
            return
        ifindex = self._ifindex(ifname)
        if ifindex is None or ifindex != saved.get("ifindex"):
            self._save_state(before_change=False)
            return
        if saved["channels"]:
            self._restore_channels(ifname, ifindex, saved["channels"])
        if saved["irqs"]:
            self._restore_affinity(ifname, saved["irqs"])
        self._save_state(before_change=False)

    def _restore_channels(self, ifname, ifindex, counts):
        try:
            with self._family() as fam:
                current = fam.channels(ifindex)
                changes = {k: v for k, v in counts.items() if _n(current, k + "-count") != v}
                if changes:
                    fam.set_channels(ifindex, **changes)
                    log.info("%s: channels restored to %s", ifname,
                             ", ".join("%s %d" % kv for kv in sorted(changes.items())))
        except NetlinkRequestError as err:
            log.error("%s: cannot restore channels %s: %s", ifname,
                      ", ".join("%s %d" % kv for kv in sorted(counts.items())),
                      refusal_reason(err))

    def _restore_affinity(self, ifname, irqs):
        # Only IRQs still serving this NIC: a number freed by a driver reset
        # may belong to another device by now.
        present = {q.irq for q in self.queue_irqs(ifname)}
        restored = 0
        for irq_text, cpulist in sorted(irqs.items(), key=lambda kv: int(kv[0])):
            irq = int(irq_text)
            if irq not in present:
                continue
            try:
                want = parse_index_list("smp_affinity_list", cpulist)
                if read_affinity(irq, self.kfs) != want:
                    write_affinity(irq, want, self.kfs)
                    restored += 1
            except OSError as err:
                if err.errno != errno.EIO:     # managed: never changed by us
                    log.error("%s: IRQ %d: cannot restore affinity %s: %s", ifname, irq,
                              cpulist, affinity_error_reason(err))
            except OptionError as err:
                log.error("%s: IRQ %d: %s", ifname, irq, err)
        if restored:
            log.info("%s: affinity of %d queue IRQs restored", ifname, restored)

    def forget(self, ifname):
        """The device is gone: drop its originals without touching anything."""
        self.targets.pop(ifname, None)
        self.problems.pop(ifname, None)
        if self.originals.pop(ifname, None) is not None:
            self._save_state(before_change=False)


class _Borrowed:
    """A channels backend passed in by the caller: used, never closed."""

    def __init__(self, obj):
        self.obj = obj

    def __enter__(self):
        return self.obj

    def __exit__(self, *exc):
        return False


def _ifindex(ifname):
    try:
        return socket.if_nametoindex(ifname)
    except OSError:
        return None

