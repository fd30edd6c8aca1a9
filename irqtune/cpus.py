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

Every function takes sys_root/proc_root so tests run on fixture trees.
"""

import logging
import os
from dataclasses import dataclass

from .errors import OptionError
from .values import format_index_list, parse_index_list

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


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _cpulist(what, text):
    """A kernel CPU list; empty, absent or "(null)" give []."""
    if not text or text == "(null)":
        return []
    try:
        return parse_index_list(what, text)
    except OptionError:
        log.warning("cannot parse %s %r; ignoring it", what, text)
        return []


def online_cpus(sys_root="/sys"):
    text = _read(os.path.join(sys_root, "devices/system/cpu/online"))
    cpus = _cpulist("online CPUs", text)
    if not cpus:
        count = os.cpu_count() or 1
        log.warning("cannot read the online CPUs; assuming 0-%d", count - 1)
        cpus = list(range(count))
    return cpus


def cmdline_isolcpus(proc_root="/proc"):
    """CPUs of isolcpus= on the kernel command line ([] when absent).

    isolcpus=[flag,...,]cpulist; the last isolcpus= wins, like the kernel.
    """
    cmdline = _read(os.path.join(proc_root, "cmdline")) or ""
    cpus = []
    for arg in cmdline.split():
        if not arg.startswith("isolcpus="):
            continue
        parts = arg[len("isolcpus="):].split(",")
        while parts and parts[0] in ISOLCPUS_FLAGS:
            parts.pop(0)
        cpus = _cpulist("isolcpus= on the kernel command line", ",".join(parts))
    return cpus


def isolated_cpus(sys_root="/sys", proc_root="/proc"):
    """(sorted isolated CPUs, [where each part came from])."""
    base = os.path.join(sys_root, "devices/system/cpu")
    found = set()
    sources = []
    for what, cpus in (
            ("isolated", _cpulist("isolated CPUs", _read(os.path.join(base, "isolated")))),
            ("nohz_full", _cpulist("nohz_full CPUs", _read(os.path.join(base, "nohz_full")))),
            ("isolcpus=", cmdline_isolcpus(proc_root))):
        if cpus:
            found.update(cpus)
            sources.append("%s %s" % (what, format_index_list(cpus)))
    return sorted(found), sources


def parse_cpulist_option(option, text):
    """An explicit CPU list option; None when empty."""
    if text is None or str(text).strip() == "":
        return None
    return parse_index_list(option, text)


def housekeeping_cpus(explicit=None, sys_root="/sys", proc_root="/proc"):
    """The Housekeeping set (see the module docstring).

    explicit: a list of CPUs or None.  Offline CPUs in it are dropped with a
    warning; if none is online, the kernel's isolation is used instead.
    """
    online = online_cpus(sys_root)
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
    isolated, sources = isolated_cpus(sys_root, proc_root)
    if isolated:
        cpus = sorted(set(online) - set(isolated))
        if cpus:
            return Housekeeping(tuple(cpus), "isolation",
                                "online %s minus %s" % (format_index_list(online),
                                                        ", ".join(sources)))
        log.warning("every online CPU is isolated (%s); using all online CPUs",
                    ", ".join(sources))
    return Housekeeping(tuple(online), "online")

