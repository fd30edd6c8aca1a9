# SPDX-License-Identifier: GPL-2.0-or-later
"""The GSIM tuner: applies, verifies and restores a GsimConfig (the knobs,
here) and an IrqSelection (the per-IRQ switches, gsim/switches.py) on
irqtune.shared.tuner's contract, and builds itself from options."""

import errno
import logging
from collections import namedtuple

from ...kernel import irqs as irqs_mod
from ...kernel.caps import detect_kernel_features
from ...kernel.errors import OptionError, describe_os_error, errno_name
from ...kernel.kfs import KFS
from ...shared.ledger import first
from ...shared.overlay import overlaid
from ...shared.tuner import Check, Tuner
from .config import OPTIONS, OVERLAY_PREFIX, GsimConfig, IrqSelection
from .interface import (APPLY_ORDER, MISSING_MESSAGE, RESTORE_ORDER, RT_MISSING_MESSAGE,
                        GsimWriteError, accepted_range, detect)
from .switches import IrqSwitches

log = logging.getLogger(__name__)


class Applied(namedtuple("Applied", "knobs switched")):
    """What one apply did: knobs written, IRQs switched (the summary line)."""

    def __str__(self):
        return "GSIM: %d values written, moderation allowed on %d IRQs" % self


class GsimTuner(Tuner):
    """Applies one GsimConfig and IrqSelection, restores what was there.

    GSIM is system-wide: the contract's device arguments are not used.

    originals (the ledger):
      {"shape": ..., "knobs": {option: value},
       "irqs": {"<irq>": {"name": action name, "allow": 0/1}}}
    First value wins (irqtune.shared.ledger); an IRQ number whose name changed is
    a different interrupt.  iface None: the kernel has no GSIM, and every
    option set is unsupported.  rejected: {option: OptionError, or the
    kernel's error}.
    """

    def __init__(self, config, selection, iface, ledger=None, kfs=KFS,
                 napi_irqs=irqs_mod.napi_irqs):
        super().__init__(ledger)
        self.config = config
        self.selection = selection
        self.iface = iface
        self.kfs = kfs
        self.switches = IrqSwitches(selection, iface, kfs, napi_irqs)
        if iface is None:
            self.originals = {"knobs": {}, "irqs": {}}
            for option in list(config.items()) + (["irqs"] if selection else []):
                self.unsupported[option] = ("the kernel has no GSIM interface "
                                            "(/proc/irq/sw_moderation or /proc/irq/soft_moderation)")
            return
        self.originals = self._load_state()
        for option in config.items():
            missing = iface.missing_knob(option)
            if missing:
                self.unsupported[option] = missing
                log.warning("gsim: %s not applied: %s", option, missing)

    @property
    def needs_watching(self):
        """New or reset IRQs appear with driver resets and hotplug."""
        return self.iface is not None and bool(self.selection)

    def _from_ledger(self, data):
        empty = {"shape": self.iface.shape, "knobs": {}, "irqs": {}}
        if not data:
            return empty
        if data.get("shape") != self.iface.shape:
            log.info("gsim: ignoring saved originals of another interface shape")
            return empty
        data.setdefault("knobs", {})
        data.setdefault("irqs", {})
        log.info("gsim: restoring saved originals from %s", self.ledger.path)
        return data

    def apply(self, *devices):
        """Set the knobs and the switches; returns Applied(knobs, switched)."""
        if self.iface is None:
            return Applied(0, 0)
        interrupts = self._interrupts()
        knobs = 0
        wanted = {o: v for o, v in self.config.items().items() if o not in self.unsupported}
        # Targets first, then the per-IRQ switches, delay_us last: moderation
        # starts with its final targets on every selected IRQ at once.
        for option in APPLY_ORDER:
            if option in wanted and option != "delay_us":
                knobs += self._apply_knob(option, wanted[option])
        switched = self._apply_switches(interrupts)
        if "delay_us" in wanted:
            knobs += self._apply_knob("delay_us", wanted["delay_us"])
        self._save_state()
        return Applied(knobs, switched)

    def _apply_knob(self, option, value):
        saved = self.originals["knobs"]
        try:
            current = self.iface.read_knob(option)
        except (OSError, ValueError) as err:
            msg = "cannot read %s (%s), so it could not be restored: not changed" % (
                self.iface.knob_path(option), describe_os_error(err))
            self.unsupported[option] = msg
            log.error("gsim: %s: %s", option, msg)
            return 0
        if first(saved, option, current):
            self._save_state()
        if current == value:
            return 0
        try:
            self.iface.write_knob(option, value)
        except GsimWriteError as err:
            self._knob_rejected(option, value, err)
            return 0
        # Early shapes clamp silently: check what the kernel kept.
        try:
            now = self.iface.read_knob(option)
        except (OSError, ValueError):
            now = value
        if now != value:
            reason = OptionError(option, value, "%s; the kernel kept %s instead (%s clamps)"
                                 % (accepted_range(option), now, self.iface))
            self.rejected[option] = reason
            log.error("gsim: %s", reason)
        return 1

    def _knob_rejected(self, option, value, err):
        if err.errno in (errno.ERANGE, errno.EINVAL):
            reason = OptionError(option, value, "%s; the kernel rejected it with %s (%s)"
                                 % (accepted_range(option), errno_name(err.errno),
                                    self.iface.knob_path(option)))
            self.rejected[option] = reason
            log.error("gsim: %s", reason)
        elif err.errno == errno.EOPNOTSUPP and option == "hardirq_percent":
            why = ("the kernel cannot measure hard interrupt time "
                   "(CONFIG_IRQ_TIME_ACCOUNTING) and refuses a non-zero %s" % option)
            self.unsupported[option] = why
            log.error("gsim: %s not applied: %s", option, why)
        else:
            self.rejected[option] = err
            log.error("gsim: %s: %s", option, err)

    def _interrupts(self):
        try:
            return irqs_mod.read_interrupts(self.kfs)
        except OSError as err:
            log.error("gsim: cannot read %s: %s", self.kfs.proc_path("interrupts"),
                      describe_os_error(err, with_path=False))
            return {}

    def _apply_switches(self, interrupts):
        if not self.selection:
            return 0
        return self.switches.apply(self.originals["irqs"], interrupts, self._save_state)

    def apply_new(self, device=None):
        """Moderate selected IRQs that appeared since the last apply (NIC
        hot-added, channel count changed) or whose switch went back to 0.

        A re-probed device frees its vectors and requests them again,
        often with the same numbers and names, and the new descriptors
        start with moderation disallowed: they cannot be told apart from
        the old ones, so every selected IRQ found off is allowed again
        (its saved original stays the first one seen).
        """
        if self.iface is None or not self.selection:
            return 0
        interrupts = self._interrupts()
        if not interrupts:
            return 0
        count = self._apply_switches(interrupts)
        self._save_state()
        if count:
            log.info("gsim: allowed moderation on %d new or reset IRQs", count)
        return count

    def verify(self, device=None):
        """[Check] of the knobs set and the switches of the IRQs selected now."""
        if self.iface is None:
            return []
        checks = [Check.compare("%s (%s)" % (option, where), current, expected)
                  for option, where, current, expected in self.verify_knobs()]
        checks += [Check.compare(path, current, expected, device="irq%d (%s)" % (irq, name))
                   for irq, name, path, current, expected in self.verify_switches()]
        return checks

    def verify_knobs(self):
        """[(option, where, current, expected)] of knobs to compare."""
        results = []
        for option, value in self.config.items().items():
            if option in self.unsupported or option in self.rejected:
                continue
            try:
                current = self.iface.read_knob(option)
            except (OSError, ValueError):
                current = None
            results.append((option, self.iface.knob_path(option), current, value))
        return results

    def verify_switches(self):
        """[(irq, name, path, current, expected)] for the IRQs selected now."""
        return self.switches.verify(self._interrupts())

    def restore_all(self):
        """Put back every original and forget them."""
        if self.iface is None:
            return
        knobs = self.originals.get("knobs", {})
        for option in RESTORE_ORDER:
            value = knobs.get(option)
            if value is None:
                continue
            try:
                if self.iface.read_knob(option) == value:
                    continue
            except (OSError, ValueError):
                pass
            try:
                self.iface.write_knob(option, value)
            except GsimWriteError as err:
                log.error("gsim: cannot restore %s to %s: %s", option, value, err)
        self.switches.restore(self.originals.get("irqs", {}), self._interrupts())
        self.originals = {"shape": self.iface.shape, "knobs": {}, "irqs": {}}
        self._remove_ledger()


def build(options, env):
    """(GsimTuner or None, [OptionError]) from the gsim plugin's options.

    A variables_file's gsim_<option>=value lines replace the options; a bad
    value is left out (reported), a bad irqs selects no IRQ while the
    targets still apply.  None when nothing is configured.  On a kernel
    without GSIM one warning names what is missing, and the tuner reports
    every option as unsupported.
    """
    options = overlaid(options, OPTIONS, OVERLAY_PREFIX, env.expand)
    config, errors = GsimConfig.from_options(options)
    try:
        selection = IrqSelection.parse(options.get("irqs"))
    except OptionError as err:
        errors.append(err)
        selection = IrqSelection()
    if not config.items() and not selection:
        return None, errors
    iface = detect(env.kfs)
    if iface is None:
        log.warning("%s", RT_MISSING_MESSAGE if detect_kernel_features(env.kfs).preempt_rt
                    else MISSING_MESSAGE)
    else:
        log.info("GSIM interface %s", iface)
    return GsimTuner(config, selection, iface, ledger=env.ledger("gsim-" + env.instance),
                     kfs=env.kfs, napi_irqs=env.napi_irqs), errors
