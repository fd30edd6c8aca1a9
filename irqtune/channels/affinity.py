# SPDX-License-Identifier: GPL-2.0-or-later
"""Queue IRQ affinity of a device: recorded, set, verified and restored in
/proc/irq/N/smp_affinity_list (through the kernel fs seam)."""

import errno
import logging

from ..errors import OptionError
from ..irqs import (affinity_error_reason, nic_queue_irqs, read_affinity,
                    read_effective_affinity, write_affinity)
from ..ledger import first
from ..tuner import Check
from ..values import format_index_list, parse_index_list

log = logging.getLogger("irqtune.channels")


class QueueAffinity:
    """cpus: the CPUs every queue IRQ of a device should fire on.

    Originals live in the device's ledger entry as saved["irqs"]
    {"<irq>": "cpulist"}; they are read before a channel change, since
    drivers re-spread their IRQs when it happens.
    """

    def __init__(self, cpus, kfs, napi, refusals):
        self.cpus = tuple(cpus)
        self.kfs = kfs
        self.napi = napi
        self.refusals = refusals

    def queue_irqs(self, ifname):
        return nic_queue_irqs(ifname, self.kfs, self.napi)

    def record(self, ifname, saved, save, irqs=None):
        """First value wins: the affinity of IRQs not seen before."""
        for q in irqs if irqs is not None else self.queue_irqs(ifname):
            if str(q.irq) in saved["irqs"]:
                continue
            try:
                first(saved["irqs"], str(q.irq), format_index_list(read_affinity(q.irq, self.kfs)))
            except (OSError, OptionError) as err:
                log.debug("%s: cannot read the affinity of IRQ %d: %s", ifname, q.irq, err)
        save()

    def apply(self, ifname, saved, save, only_new=False):
        irqs = self.queue_irqs(ifname)
        if not irqs:
            self.refusals.add(ifname, "irq_affinity",
                              "no queue IRQs found (virtual device, or vectors irqtune cannot "
                              "attribute)", logging.INFO)
            return "no queue IRQs"
        self.refusals.resolve(ifname, "irq_affinity")
        if only_new:
            irqs = [q for q in irqs if str(q.irq) not in saved["irqs"]]
            if not irqs:
                return ""
        self.record(ifname, saved, save, irqs)
        target = set(self.cpus)
        moved = 0
        for q in irqs:
            what = "IRQ %d (%s)" % (q.irq, q.name or "?")
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
        return "%d queue IRQs on CPUs %s" % (len(irqs), format_index_list(self.cpus))

    def verify(self, ifname):
        target = set(self.cpus)
        expected = format_index_list(self.cpus)
        problems = self.refusals.of(ifname)
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

    def restore(self, ifname, irqs):
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
