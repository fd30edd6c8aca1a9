# SPDX-License-Identifier: GPL-2.0-or-later
"""Queue IRQ affinity of a device: recorded, set, verified and restored in
/proc/irq/N/smp_affinity_list (through the kernel fs seam)."""

import logging

from ...kernel.errors import OptionError, describe_os_error
from ...kernel.irqs import (KERNEL_OWNED_AFFINITY, affinity_error_reason, nic_queue_irqs,
                            read_affinity, read_effective_affinity, write_affinity)
from ...kernel.values import format_index_list, parse_index_list
from ...shared.ledger import first, vector_keys
from ...shared.tuner import Check

log = logging.getLogger(__name__)


class QueueAffinity:
    """cpus: the CPUs every queue IRQ of a device should fire on.

    Originals live in the device's ledger entry as saved["irqs"]
    {vector key: {"affinity": cpulist, "irq": number}}, keyed by the
    vector's action name (irqtune.shared.ledger.vector_keys) so that a
    vector a driver requests again under another number inherits its
    original; "irq" is the number the vector had when it was last tuned,
    which tells apply_new what came back.
    """

    def __init__(self, cpus, kfs, napi, refusals):
        self.cpus = tuple(cpus)
        self.kfs = kfs
        self.napi = napi
        self.refusals = refusals

    def queue_irqs(self, ifname):
        return nic_queue_irqs(ifname, self.kfs, self.napi)

    def vectors(self, ifname):
        """[(vector key, QueueIrq)] of ifname's queue IRQs."""
        irqs = self.queue_irqs(ifname)
        keys = vector_keys((q.irq, q.name) for q in irqs)
        return [(keys[q.irq], q) for q in irqs]

    def record(self, ifname, saved, save, vectors=None):
        """First value wins: the affinity of vectors not seen before."""
        book = saved["irqs"]
        for key, q in self.vectors(ifname) if vectors is None else vectors:
            if key in book:
                continue
            try:
                first(book, key, {"irq": q.irq,
                                  "affinity": format_index_list(read_affinity(q.irq, self.kfs))})
            except (OSError, OptionError) as err:
                log.debug("%s: cannot read the affinity of IRQ %d: %s", ifname, q.irq,
                          describe_os_error(err))
        save()

    def apply(self, ifname, saved, save, only_new=False):
        vectors = self.vectors(ifname)
        if not vectors:
            self.refusals.add(ifname, "irq_affinity",
                              "no queue IRQs found (virtual device, or vectors irqtune cannot "
                              "attribute)", logging.INFO)
            return "no queue IRQs"
        self.refusals.resolve(ifname, "irq_affinity")
        book = saved["irqs"]
        if only_new:
            # New vectors, and known ones requested again under another number.
            vectors = [(key, q) for key, q in vectors
                       if key not in book or book[key].get("irq") != q.irq]
            if not vectors:
                return ""
        self.record(ifname, saved, save, vectors)
        target = set(self.cpus)
        moved = 0
        for key, q in vectors:
            what = "IRQ %d (%s)" % (q.irq, q.name or "?")
            if key in book:
                book[key]["irq"] = q.irq
            try:
                if set(read_affinity(q.irq, self.kfs)) != target:
                    write_affinity(q.irq, self.cpus, self.kfs)
                    moved += 1
                self.refusals.resolve(ifname, what)
            except OSError as err:
                self.refusals.add(ifname, what, affinity_error_reason(err))
            except OptionError as err:
                self.refusals.add(ifname, what, str(err))
        if moved:
            log.info("%s: %d queue IRQs made affine to CPUs %s", ifname, moved,
                     format_index_list(self.cpus))
        return "%d queue IRQs on CPUs %s" % (len(vectors), format_index_list(self.cpus))

    def verify(self, ifname):
        target = set(self.cpus)
        expected = format_index_list(self.cpus)
        problems = self.refusals.of(ifname)
        out = []
        for q in self.queue_irqs(ifname):
            what = "IRQ %d (%s)" % (q.irq, q.name or "?")
            try:
                cpus = read_affinity(q.irq, self.kfs)
            except FileNotFoundError:
                continue      # gone between listing and reading
            except (OSError, OptionError) as err:
                # unreadable is not "nothing to check": TuneD would pass it
                out.append(Check(what + " affinity", None, expected, False,
                                 "cannot read its affinity: %s" % describe_os_error(err)))
                continue
            note = problems.get(what, "")
            if note.startswith("managed IRQ"):
                # The kernel places managed IRQs (isolcpus=managed_irq): judge
                # where they actually fire.
                try:
                    eff = read_effective_affinity(q.irq, self.kfs)
                except (OSError, OptionError) as err:
                    out.append(Check(what + " effective affinity", None, expected, False,
                                     "cannot read its effective affinity: %s"
                                     % describe_os_error(err)))
                    continue
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

    def restore(self, ifname, book):
        """Each queue vector present gets the original saved under its key,
        whatever number it has now; numbers a driver gave up are left to
        whoever holds them by now."""
        restored = 0
        for key, q in self.vectors(ifname):
            saved = book.get(key)
            if saved is None:
                continue
            cpulist = saved["affinity"]
            try:
                want = parse_index_list("smp_affinity_list", cpulist)
                if read_affinity(q.irq, self.kfs) != want:
                    write_affinity(q.irq, want, self.kfs)
                    restored += 1
            except OSError as err:
                if err.errno not in KERNEL_OWNED_AFFINITY:   # managed: never changed by us
                    log.error("%s: IRQ %d (%s): cannot restore affinity %s: %s", ifname, q.irq,
                              q.name or "?", cpulist, affinity_error_reason(err))
            except OptionError as err:
                log.error("%s: IRQ %d: %s", ifname, q.irq, err)
        if restored:
            log.info("%s: affinity of %d queue IRQs restored", ifname, restored)
