# SPDX-License-Identifier: GPL-2.0-or-later
"""The housekeeping CPUs: where NIC queues, their IRQs and softirqs belong.

Sources, first match wins:
1. an explicit CPU list (a profile option, typically the complement of the
   realtime profiles' isolated_cores);
2. the kernel's isolation: /sys/devices/system/cpu/isolated (isolcpus
   domain), /sys/devices/system/cpu/nohz_full, and isolcpus= on the kernel
   command line (its managed_irq/nohz flags leave the first file empty);
   housekeeping = online CPUs minus the union of these;
3. every online CPU.

Every function takes a kfs (irqtune.kfs.KernelFs) so tests run on fixture trees.
"""

import logging
import os
from dataclasses import dataclass

from .errors import OptionError
from .kfs import KFS
from .values import CPU_LIST, MAX_CPU, format_index_list, parse_index_list

log = logging.getLogger(__name__)

ISOLCPUS_FLAGS = ("nohz", "domain", "managed_irq")


@dataclass(frozen=True)
class Housekeeping:
    cpus: tuple        # sorted CPU numbers
    source: str        # "explicit", "isolation" or "online"
    detail: str = ""   # what the isolation was read from

    def __len__(self):
        return len(self.cpus)

    def cpulist(self):
        return format_index_list(self.cpus)

    def describe(self):
        text = "housekeeping CPUs %s (%s" % (self.cpulist(), self.source)
        return text + (": " + self.detail if self.detail else "") + ")"


def _cpulist(what, text):
    """A kernel CPU list; empty, absent or "(null)" give []."""
    if not text or text == "(null)":
        return []
    try:
        return parse_index_list(what, text)
    except OptionError:
        log.warning("cannot parse %s %r; ignoring it", what, text)
        return []


def online_cpus(kfs=KFS):
    text = kfs.read_optional(kfs.sys_path("devices/system/cpu/online"))
    cpus = _cpulist("online CPUs", text)
    if not cpus:
        count = os.cpu_count() or 1
        log.warning("cannot read the online CPUs; assuming 0-%d", count - 1)
        cpus = list(range(count))
    return cpus


def cmdline_isolcpus(kfs=KFS):
    """CPUs of isolcpus= on the kernel command line ([] when absent).

    isolcpus=[flag,...,]cpulist; the last isolcpus= wins, like the kernel.
    """
    cmdline = kfs.read_optional(kfs.proc_path("cmdline")) or ""
    cpus = []
    for arg in cmdline.split():
        if not arg.startswith("isolcpus="):
            continue
        parts = arg[len("isolcpus="):].split(",")
        while parts and parts[0] in ISOLCPUS_FLAGS:
            parts.pop(0)
        cpus = _cpulist("isolcpus= on the kernel command line", ",".join(parts))
    return cpus


def isolated_cpus(kfs=KFS):
    """(sorted isolated CPUs, [where each part came from])."""
    def cpu_file(name):
        return kfs.read_optional(kfs.sys_path("devices/system/cpu", name))
    found = set()
    sources = []
    for what, cpus in (
            ("isolated", _cpulist("isolated CPUs", cpu_file("isolated"))),
            ("nohz_full", _cpulist("nohz_full CPUs", cpu_file("nohz_full"))),
            ("isolcpus=", cmdline_isolcpus(kfs))):
        if cpus:
            found.update(cpus)
            sources.append("%s %s" % (what, format_index_list(cpus)))
    return sorted(found), sources


def parse_cpulist_option(option, text):
    """An explicit CPU list option; None when empty."""
    if text is None or str(text).strip() == "":
        return None
    return parse_index_list(option, text, MAX_CPU, CPU_LIST)


def housekeeping_cpus(explicit=None, kfs=KFS):
    """The Housekeeping set (see the module docstring).

    explicit: a list of CPUs or None.  Offline CPUs in it are dropped with a
    warning; if none is online, the kernel's isolation is used instead.
    """
    online = online_cpus(kfs)
    if explicit:
        cpus = sorted(set(explicit) & set(online))
        dropped = sorted(set(explicit) - set(online))
        if dropped:
            log.warning("housekeeping CPUs %s are not online; ignoring them",
                        format_index_list(dropped))
        if cpus:
            return Housekeeping(tuple(cpus), "explicit")
        log.warning("none of the explicit housekeeping CPUs %s is online; using the "
                    "kernel's isolation instead", format_index_list(explicit))
    isolated, sources = isolated_cpus(kfs)
    if isolated:
        cpus = sorted(set(online) - set(isolated))
        if cpus:
            return Housekeeping(tuple(cpus), "isolation",
                                "online %s minus %s" % (format_index_list(online),
                                                        ", ".join(sources)))
        log.warning("every online CPU is isolated (%s); using all online CPUs",
                    ", ".join(sources))
    return Housekeeping(tuple(online), "online")

