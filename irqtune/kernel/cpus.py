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

Every function takes a kfs (irqtune.kernel.kfs.KernelFs) so tests run on fixture trees.
"""

import logging
import os
import re
from dataclasses import dataclass

from .errors import OptionError
from .kfs import KFS
from .names import shown
from .values import MAX_CPU, MAX_LIST_CHARS, format_index_list, parse_index_list

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
        log.warning("cannot parse %s %s; ignoring it", what, shown(text, quote="always"))
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


TUNED_CPULIST = ("a CPU list such as 2-7,10 in TuneD's syntax (numbers and ranges, "
                 "^N or !N to leave CPUs out, 0x masks), CPUs 0 to %d" % MAX_CPU)
# TuneD expands every item into a Python list before it merges anything -
# each range, each ^exclusion, each bit of a mask - so the guard bounds the
# sum over the items, not each item: "0-8191," 400 times (2.8 KB) made
# TuneD's unpacking take 152 MB.  The bound is every CPU named once and
# left out once; as each item names at least one CPU, it bounds the number
# of items too.  The text's length is checked before it is split.
MAX_CPULIST_NAMED = 2 * (MAX_CPU + 1)
TUNED_CPULIST_SIZE = ("%s; at most %d CPUs named in all (each range, exclusion and mask bit "
                      "counted, as TuneD expands them) in at most %d characters"
                      % (TUNED_CPULIST, MAX_CPULIST_NAMED, MAX_LIST_CHARS))
# An item as cpulist_unpack reads it: "^"/"!" only as the first character
# (" ^3" is no exclusion to TuneD, and makes it read the whole list as no
# CPU at all).
_TUNED_ITEM = re.compile(r"^(?:[\^!]|[ \t]*)[ \t]*([0-9]{1,20})(?:[ \t]*-[ \t]*([0-9]{1,20}))?[ \t]*$")
# A mask may name CPUs 0 to MAX_CPU: at most that many bits of hex digits.
_MAX_HEX_DIGITS = (MAX_CPU + 1) // 4
_HEX_GROUP = re.compile(r"^[ \t]*[0-9a-fA-F]+[ \t]*$")
# A reference TuneD could not expand (variable not defined): passed on
# as it is, for the parents' own "isolated_cores are set" assertion.
_UNEXPANDED = re.compile(r"^\$\{\w+\}$")


def check_tuned_cpulist(option, text):
    """text, when it is a CPU list in TuneD's syntax (what
    tuned.utils.commands.cpulist_unpack reads: numbers, ranges, ^N/!N
    exclusions, hexadecimal masks whose groups may be split by commas)
    naming no CPU above MAX_CPU; raises OptionError otherwise.

    Checked without expanding anything: TuneD's cpulist functions turn
    every range into a Python list, so "0-4294967295" in a realtime
    profile's isolated_cores exhausts the daemon's memory (MemoryError)
    before any plugin sees the value; and so is the list as a whole
    (MAX_CPULIST_NAMED, MAX_LIST_CHARS).  Empty text passes (TuneD reads
    it as no CPU).
    """
    text = str(text)
    if len(text) > MAX_LIST_CHARS:
        raise OptionError(option, text, TUNED_CPULIST_SIZE)
    if _UNEXPANDED.match(text.strip()):
        return text
    hex_digits = None        # inside a mask: its digits so far
    named = 0                # CPUs TuneD would expand so far
    for item in text.strip().strip("'\"").split(",") + [""]:
        if hex_digits is not None:
            if not item.strip():        # ",," or the end closes a mask
                if not hex_digits:
                    raise OptionError(option, text, TUNED_CPULIST)
                named += 4 * hex_digits
                hex_digits = None
                continue
            if not _HEX_GROUP.match(item):
                raise OptionError(option, text, TUNED_CPULIST)
            hex_digits += len(item.strip())
        elif item[:2].lower() == "0x":
            if item[2:].strip() and not _HEX_GROUP.match(item[2:]):
                raise OptionError(option, text, TUNED_CPULIST)
            hex_digits = len(item[2:].strip())
        elif item.strip():
            match = _TUNED_ITEM.match(item)
            if not match:
                raise OptionError(option, text, TUNED_CPULIST)
            first = int(match.group(1))
            last = int(match.group(2) or first)
            if last < first or last > MAX_CPU:
                raise OptionError(option, text, TUNED_CPULIST)
            named += last - first + 1
        if hex_digits is not None and hex_digits > _MAX_HEX_DIGITS:
            raise OptionError(option, text, TUNED_CPULIST)
        if named + 4 * (hex_digits or 0) > MAX_CPULIST_NAMED:
            raise OptionError(option, text, TUNED_CPULIST_SIZE)
    return text


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
