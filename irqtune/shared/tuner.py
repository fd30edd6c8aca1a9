# SPDX-License-Identifier: GPL-2.0-or-later
"""The contract every irqtune tuner follows, and its verify record.

A tuner is built from already-parsed configuration (option errors are the
builder's business, reported before the tuner exists) and is driven by a
thin TuneD plugin through these calls only - the plugins' shared base
(tuned-plugins/irqtune_common.py) holds the lock, the link watcher, option
errors, the rollback shims and prints Checks in TuneD's verify format:

apply(*devices)
    Tune the devices (system-wide tuners - GSIM, service opt-in - take
    none); returns a short text (or number) for one summary log
    line.  Originals are saved (ledger on disk, fsync) before anything is
    changed; the first value seen wins, so re-applying never takes a tuned
    value for an original.  Refusals are logged once, never raised.
apply_new(device)
    Tune only objects a driver recreated since the last apply (new NAPIs,
    new queue IRQs); values changed deliberately behind TuneD's back are
    left for verify to report, not fought.  Returns a falsy value when
    nothing was done.
verify(device) -> [Check]
    One Check per value in scope; an empty list means nothing to check.
tick(lock)
    On the plugin's periodic re-check: a tuner whose values follow a
    measurement (NapiTuner with gro_flush_timeout=auto,
    irqtune.shared.measure.follow) measures when due and sets the new values
    itself, under lock; it returns what changed (for one log line) or
    None.  The originals stay those saved first, so restore is unchanged;
    verify checks the values last set.  The default measures nothing.
restore(device)
    Put back the device's originals, then forget them (device moved to
    another instance, or removed: a device that is gone is only forgotten).
forget(device)
    Drop the device's originals without touching anything.
follow_rename(new_name, ifindex)
    A renamed device keeps its originals under the new name.  Returns the
    old name, None when no device of the tuner has that ifindex.
known_as(ifindex, names)
    Which of names (TuneD's) is the device that has ifindex, by the
    ifindex its originals were saved with; None when none is.  No system
    calls: the plugins ask it for every link event.
kernel_name(device)
    The name the device has now: a device renamed behind TuneD's back
    (TuneD before 2.25 sends no move events) is found by the ifindex its
    originals were saved with.  verify, restore, apply_new and forget
    take TuneD's name and work on this one (see on_kernel_name); verify's
    Checks then carry the new name (verify_on_kernel_name), and
    restore_all follows every rename
    first, so no original is left behind under a stale name.
restore_all()
    Put back every original (writing only what differs) and remove the
    ledger file.
unsupported
    {what: why} the running kernel cannot do; verify reports each as a
    failure unless TuneD's --ignore-missing applies.
rejected
    {what: why} values the kernel (or systemd) refused at apply; verify
    reports each as a failure, like an option error.
ledger
    The irqtune.shared.ledger.Ledger of the originals (None: in memory only).
needs_watching
    True when drivers may recreate what the tuner set (NAPIs, IRQs), so the
    plugin runs the link watcher and the periodic re-check.
recheck_interval
    Seconds between those re-checks (0: on link events only); the feature's
    build sets it from the options, or leaves its default.
describe(result)
    What apply's result means, for the summary line ("set 8 NAPIs").
full_rollback_only
    True when what the tuner changes is meant to outlive a shutdown (the
    opt-in's drop-ins): only a full rollback puts the originals back.

A feature builds its tuner with build(options, env) -> (tuner or None,
[OptionError]): the options as the profile gives them ({name: text}), env
(Env) what the plugin or a test hands it besides.  The build owns the
parsing, a variables file, the scope, the kernel's capabilities, the
ledger's name and the re-check interval; None when the options leave
nothing to tune.

Every optional part has its default in Tuner (a system-wide tuner: no
devices, nothing kept per device, renames pass it by) or DeviceTuner (per
device originals, renames followed); the plugins call the contract only,
never probing a tuner for what it has.

Exceptions: tuners raise only for bugs and for a ledger that cannot be
written (irqtune.shared.ledger.LedgerError: nothing is changed without its
original on disk); the plugin base turns any exception into one log line
(see irqtune_common.ENTRY_POINTS).

Kernel files are reached through an irqtune.kernel.kfs.KernelFs (the tuners'
kfs argument), originals kept through an irqtune.shared.ledger.Ledger.
"""

import functools
import logging
from dataclasses import dataclass

from ..kernel import irqs
from ..kernel.kfs import KFS
from ..kernel.netdevs import ifindex_of, ifname_of
from .ledger import Ledger, device_entry, name_now

log = logging.getLogger(__name__)


@dataclass
class Check:
    """One verify comparison: what (as TuneD prints it), the value found,
    the value wanted, whether it passed, an optional hint for a failure, and
    the device it belongs to when that is not the one verified (an IRQ of a
    system-wide tuner)."""

    what: str
    current: object
    expected: object
    ok: bool
    note: str = ""
    device: str = None

    @classmethod
    def compare(cls, what, current, expected, note="", device=None):
        """A Check that passes when current reads back as expected."""
        return cls(what, current, expected,
                   current is not None and str(current) == str(expected), note, device)


def on_kernel_name(method):
    """For a DeviceTuner method taking device names: call it with the names
    the devices have now (DeviceTuner.kernel_name)."""

    @functools.wraps(method)
    def wrapper(self, *ifnames):
        return method(self, *[self.kernel_name(name) for name in ifnames])
    return wrapper


def verify_on_kernel_name(verify):
    """on_kernel_name for verify: the Checks of a device TuneD knows by an
    older name carry the name it has now, so that TuneD's log names the
    device as the kernel does."""

    @functools.wraps(verify)
    def wrapper(self, ifname):
        now = self.kernel_name(ifname)
        checks = verify(self, now)
        if now != ifname:
            for check in checks:
                check.device = check.device or now
        return checks
    return wrapper


@dataclass(frozen=True)
class Env:
    """What a feature's build takes besides the options: the instance it
    tunes for (its ledgers are named after it) and the system it reaches -
    the defaults are the running system's, tests hand fixtures."""

    instance: str
    expand: object = str.strip      # a variables file's value -> text (TuneD: its variables)
    state_dir: str = None           # the ledgers' directory (None: /run/irqtune)
    kfs: object = KFS
    root: str = "/"                 # where systemd's unit files are (the opt-in's drop-ins)
    bus: object = None              # systemd's manager (None: the system bus)
    napi_irqs: object = irqs.napi_irqs     # ifname -> the IRQs of its NAPIs (GSIM's nic:)

    def ledger(self, name, kin=None):
        return Ledger(name, self.state_dir, kin=kin)


class Tuner:
    """The contract (see the module) with a default for every optional
    part, as a tuner of the whole system (GSIM, service opt-in) has them:
    it keeps nothing per device and knows no device names.

    The originals (self.originals) go to and come from the ledger here
    only (_save_state, _load_state), by irqtune.shared.ledger's rules; a tuner
    says how its originals look as JSON (_to_ledger, _from_ledger).
    Subclasses call Tuner.__init__ first.
    """

    needs_watching = False
    recheck_interval = 5.0
    full_rollback_only = False

    def __init__(self, ledger=None):
        self.ledger = ledger
        self.unsupported = {}
        self.rejected = {}
        self.originals = {}

    def apply(self, *devices):
        raise NotImplementedError

    def apply_new(self, device=None):
        return 0

    def verify(self, device=None):
        raise NotImplementedError

    def tick(self, lock):
        return None

    def describe(self, result):
        return str(result)

    def restore(self, device=None):
        self.forget(device)

    def forget(self, device=None):
        """Nothing is kept per device."""

    def restore_all(self):
        raise NotImplementedError

    def follow_rename(self, new_name, ifindex):
        return None

    def known_as(self, ifindex, names):
        return None

    def kernel_name(self, device):
        return device

    # -- the originals' ledger --------------------------------------------

    def _load_state(self):
        """The originals an earlier daemon left (killed, or stopped without
        rollback), for first-value-wins to go on from."""
        return self._from_ledger(self._stored() if self.ledger is not None else {})

    def _stored(self):
        """What the ledger holds."""
        return self.ledger.load()

    def _from_ledger(self, data):
        """The originals from the ledger's JSON."""
        return data

    def _to_ledger(self):
        """The originals as the ledger's JSON."""
        return self.originals

    def _save_state(self, before_change=True):
        """The originals on disk: before a change (LedgerError stops it), or
        after a restore or forget (a failure is logged); irqtune.shared.ledger."""
        if self.ledger is not None:
            (self.ledger.save if before_change else self.ledger.update)(self._to_ledger())

    def _remove_ledger(self):
        """Every original is back: the ledger file goes."""
        if self.ledger is not None:
            self.ledger.remove()


class DeviceTuner(Tuner):
    """A tuner of net devices, named as TuneD names them (see the module).

    Subclasses keep self.originals {ifname: {"ifindex": n, ...}} and call
    DeviceTuner.__init__ first.

    The one owner of renames (the module names each way a rename is
    followed; _stored the ones while no daemon ran).  A device is the
    ifindex its originals were saved with; whatever name it has, they
    follow it, and with them every book the tuner keeps by device name
    (_books).
    """

    def __init__(self, ledger=None, ifindex=None, ifname=None):
        """ifindex (name -> index or None) and ifname (index -> name or
        None) look devices up - the kernel's by default; every tuner takes
        fixtures for them this way, as constructor arguments."""
        super().__init__(ledger)
        self._ifindex = ifindex or ifindex_of
        self._ifname = ifname or ifname_of
        # {name a device had: name it has now}, for names TuneD still uses
        # after a rename it never reported (see kernel_name)
        self.renamed = {}

    # -- per-device originals ---------------------------------------------

    def _stored(self):
        """The ledger's per-device originals whose device still exists, under
        the name it has now: a device removed and created again is not the
        one they belong to, a device renamed meanwhile takes them along."""
        stored = self.ledger.load()
        originals = {}
        for name, now in self._names_now(stored).items():
            if now == name:
                originals.setdefault(name, stored[name])
            elif now is not None:
                log.info("%s is now called %s; its saved originals follow it", name, now)
                originals[now] = stored[name]
            else:
                log.info("%s: saved originals belong to a device that is gone", name)
        if originals:
            names = sorted(originals)
            log.info("restoring saved originals of %s from %s", ", ".join(names[:4]) +
                     (" and %d more" % (len(names) - 4) if len(names) > 4 else ""),
                     self.ledger.path)
        return originals

    def _originals_of(self, ifname, ifindex, **empty):
        """originals[ifname] of the device that has ifindex now
        (irqtune.shared.ledger.device_entry: {"ifindex": ifindex, **empty} when
        new), or what another instance of the plugin saved for it
        (Ledger.kin_device) when this one has nothing of it."""
        saved = self.originals.get(ifname)
        if (saved is None or saved.get("ifindex") != ifindex) and self.ledger is not None:
            kin = self.ledger.kin_device(ifname, ifindex)
            if kin is not None and self._kin_fits(kin):
                self.originals.update(self._from_ledger({ifname: kin}))
        return device_entry(self.originals, ifname, ifindex, **empty)

    def _kin_fits(self, entry):
        """Whether another ledger's entry is one of this tuner's kind."""
        return True

    def _books(self):
        """The dicts keyed by device name kept beside self.originals: they
        follow a rename and are dropped with the device."""
        return []

    @on_kernel_name
    def forget(self, ifname):
        """The device is gone: drop what is kept of it, touching nothing."""
        self._drop(ifname)
        if self.originals.pop(ifname, None) is not None:
            self._save_state(before_change=False)

    def _drop(self, ifname):
        """Drop ifname from the books beside its originals."""
        for book in self._books():
            book.pop(ifname, None)

    # -- renames ----------------------------------------------------------

    def _rename(self, moves):
        """Move the entries {old name: new name} of the originals and every
        book at once (two devices may have swapped names) and save the
        ledger."""
        for book in [self.originals] + self._books():
            taken = {old: book.pop(old) for old in moves if old in book}
            for old, entry in taken.items():
                book[moves[old]] = entry
        for stale, now in list(self.renamed.items()):
            self.renamed[stale] = moves.get(now, now)
        self.renamed.update(moves)
        self._save_state(before_change=False)

    def follow_rename(self, new_name, ifindex):
        """TuneD 2.25+ reports a renamed NIC by its new name only: the
        device whose originals were saved with this ifindex takes the new
        name, so that verify and restore find it.  Returns the old name, or
        None when no device of this tuner has that ifindex."""
        for old, saved in list(self.originals.items()):
            if old != new_name and saved.get("ifindex") == ifindex:
                self._rename({old: new_name})
                return old
        return None

    def follow_renames(self):
        """Devices whose originals are saved under a name they no longer
        have, while their ifindex lives on under another: their originals
        take the new name.  Returns {old: new}."""
        moves = {name: now for name, now in self._names_now(self.originals).items()
                 if now is not None and now != name}
        if moves:
            for old, new in sorted(moves.items()):
                log.info("%s is now called %s (a rename TuneD did not report); its "
                         "originals follow it", old, new)
            self._rename(moves)
        return moves

    def _name_now(self, name, saved):
        """The name of the device whose originals are saved under name now:
        name, a new name, or None when the device is gone."""
        return name_now(name, saved.get("ifindex"), self._ifindex, self._ifname)

    def _names_now(self, originals):
        return {name: self._name_now(name, saved) for name, saved in originals.items()}

    def known_as(self, ifindex, names):
        """The one of names whose originals carry ifindex, whether they are
        still kept under that name or have followed a rename already
        (self.renamed); None when none does (see the module)."""
        for name in sorted(names):
            saved = self.originals.get(self.renamed.get(name, name))
            if saved is not None and saved.get("ifindex") == ifindex:
                return name
        return None

    def kernel_name(self, ifname):
        """The name the device TuneD calls ifname has now (see the module)."""
        saved = self.originals.get(ifname)
        if saved is not None and self._ifindex(ifname) == saved.get("ifindex"):
            return ifname
        self.follow_renames()
        if ifname in self.originals:
            return ifname
        return self.renamed.get(ifname, ifname)

    def restore_all(self):
        """For tuners with per-device originals (self.originals, self.ledger):
        restore each device, then remove the ledger file."""
        self.follow_renames()
        for device in sorted(self.originals):
            self.restore(device)
        self._remove_ledger()


class Refusals:
    """What drivers and the kernel refused, per device and cause: logged
    the first time, shown again by verify, forgotten once it works."""

    def __init__(self, log):
        self.log = log
        self.by_device = {}     # device -> {what: reason}

    def add(self, device, what, reason, level=logging.WARNING):
        known = self.by_device.setdefault(device, {})
        if known.get(what) != reason:
            self.log.log(level, "%s: %s: %s; left as it is", device, what, reason)
        known[what] = reason

    def resolve(self, device, what):
        self.by_device.get(device, {}).pop(what, None)

    def of(self, device):
        return self.by_device.get(device, {})
