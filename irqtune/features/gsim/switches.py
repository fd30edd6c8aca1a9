# SPDX-License-Identifier: GPL-2.0-or-later
"""GSIM's per-IRQ switches: which interrupts an IrqSelection picks that GSIM
can moderate, allowing moderation on them, checking and putting them back.

The book of originals ({"<irq>": {"name": action name, "allow": 0/1}},
keyed by number and name: irqtune.shared.ledger.irq_entry) belongs to the
GsimTuner's ledger; every call that reads or changes it takes it.
"""

import errno
import logging
import os

from ...shared.ledger import first, forget_changed_irqs, irq_entry
from .interface import GsimWriteError

log = logging.getLogger(__name__)


class IrqSwitches:
    """The switches of one IrqSelection on one GsimInterface."""

    def __init__(self, selection, iface, kfs, napi_irqs):
        self.selection = selection
        self.iface = iface
        self.kfs = kfs
        self.napi_irqs = napi_irqs
        self._ineligible_seen = set()
        self._refused = {}          # irq -> action name: the kernel said EOPNOTSUPP

    def selected(self, interrupts):
        """{irq: IrqInfo} of selected IRQs that GSIM can moderate."""
        if not self.selection:
            return {}
        chosen = self.selection.select(interrupts, self.kfs, self.napi_irqs)
        result = {}
        for irq, reason in sorted(chosen.items()):
            info = interrupts[irq]
            if self._refused.get(irq) == info.name:
                continue
            if not info.eligible or self.iface.switch_path(irq) is None:
                if reason != "all" and irq not in self._ineligible_seen:
                    self._ineligible_seen.add(irq)
                    log.info("gsim: IRQ %d (%s, %s %s) matches %s but GSIM cannot moderate it "
                             "(MSI/MSI-X edge interrupts with a per-IRQ switch only)",
                             irq, info.name or "unnamed", info.chip, info.kind, reason)
                continue
            result[irq] = info
        return result

    def apply(self, book, interrupts, save):
        """Allow moderation on every selected IRQ found off; returns how many.
        save() writes the ledger: called before a switch whose original is new.
        Originals of IRQs that are gone or were reused by another device go."""
        for key in forget_changed_irqs(book, {i: info.name for i, info in interrupts.items()}):
            log.debug("gsim: IRQ %s gone (or reused)", key)
        count = 0
        for irq, info in self.selected(interrupts).items():
            key = str(irq)
            current = self.iface.read_switch(irq)
            if current is None:
                continue            # vanished since /proc/interrupts was read
            if first(book, key, {"name": info.name, "allow": int(current)}):
                save()
            if current:
                continue
            try:
                self.iface.write_switch(irq, True)
                count += 1
            except GsimWriteError as err:
                if self.vanished(irq):
                    log.debug("gsim: IRQ %d vanished while being switched", irq)
                    book.pop(key, None)
                    continue
                if err.errno == errno.EOPNOTSUPP:
                    # Kernels with the fixed GSIM refuse interrupts they
                    # cannot moderate (unmaskable MSI, threaded, timer).
                    self._refused[irq] = info.name
                    log.info("gsim: IRQ %d (%s): the kernel cannot moderate it "
                             "(EOPNOTSUPP from %s), left alone", irq, info.name, err.path)
                    continue
                log.error("gsim: IRQ %d (%s): cannot allow moderation: %s", irq, info.name, err)
        return count

    def vanished(self, irq):
        return not os.path.isdir(os.path.join(self.iface.irq_dir, str(irq)))

    def verify(self, interrupts):
        """[(irq, name, path, current, expected)] for the IRQs selected now."""
        results = []
        for irq, info in self.selected(interrupts).items():
            current = self.iface.read_switch(irq)
            path = self.iface.switch_path(irq)
            if current is None and path is None:
                continue            # gone between the two reads
            # a switch that is there but unreadable (a state this version
            # does not know, an error) is reported as None: a failure
            results.append((irq, info.name, path, None if current is None else int(current), 1))
        return results

    def restore(self, book, interrupts):
        """Put back the switch of every IRQ in book that is still the one
        saved (same number and name); only what differs is written."""
        for irq in sorted(int(key) for key in book):
            info = interrupts.get(irq)
            saved = irq_entry(book, irq, info.name if info else None)
            if saved is None:
                continue            # gone (or reused): nothing of ours to restore
            current = self.iface.read_switch(irq)
            if current is None or int(current) == saved["allow"]:
                continue
            try:
                self.iface.write_switch(irq, bool(saved["allow"]))
            except GsimWriteError as err:
                if not self.vanished(irq):
                    log.error("gsim: IRQ %d: cannot restore its switch: %s", irq, err)
