# SPDX-License-Identifier: GPL-2.0-or-later
"""Parsing of the values administrators write in profiles.

Every parser raises OptionError naming the option, the value and what is
accepted, so a bad value costs one log line and nothing else.
"""

import re

from .errors import OptionError

S32_MAX = 2**31 - 1
U32_MAX = 2**32 - 1
# The highest CPU number a kernel can have (NR_CPUS is at most 8192, x86
# CONFIG_MAXSMP): a CPU list option beyond it is a typo, and expanding
# "0-4294967295" would stall the daemon.
MAX_CPU = 8191
# The highest queue index an option may name (channel counts are capped
# the same way in the channels options).
MAX_QUEUE = 65535
# The longest timeout a profile may set (1 s, in ns): gro_flush_timeout
# holds received packets and irq_suspend_timeout keeps the IRQ off after
# an application stopped polling; past a second either is a receive stall
# long enough for TCP to retransmit (initial RTO 1 s, RFC 6298), not
# interrupt mitigation - and most likely a unit typo ("20s" for "20us").
# The kernel takes any u64 without a word.
MAX_TIMEOUT_NS = 10**9

# Numbers are ASCII digits only: Python's int() also takes "1_000", "+5"
# and digits of other scripts ("\u0663" is 3), none of which the kernel,
# TuneD or the documentation mean.  At most 20 digits (2**64 has 20), so
# that no text is long enough to cost anything before it is refused.
_NUMBER = r"[0-9]{1,20}"
_INT = re.compile(r"^-?" + _NUMBER + r"$")
_DECIMAL = re.compile(r"^-?(?:" + _NUMBER + r"(?:\.[0-9]{0,20})?|\.[0-9]{1,20})$")
# "20us" and "20 us" (a space or tab between number and unit is taken
# deliberately: it reads the same, and "20 ms" is how people write it).
_DURATION = re.compile(r"^(" + _NUMBER + r")[ \t]*(ns|us|ms|s)?$")
_UNIT_NS = {"ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9}


def format_duration_ns(ns, exact=True):
    """A duration as a profile takes it (exact: the largest unit that
    divides, 20000 -> '20us'), or for people: three digits in the largest
    unit it reaches, 1862500 -> '1.86ms'; None -> '-'."""
    if ns is None:
        return "-"
    if not exact:
        ns = float("%.3g" % ns)
        unit = next((u for u in ("s", "ms", "us") if ns >= _UNIT_NS[u]), "ns")
        return "%g%s" % (ns / _UNIT_NS[unit], unit)
    for unit in ("s", "ms", "us"):
        if ns and ns % _UNIT_NS[unit] == 0:
            return "%d%s" % (ns // _UNIT_NS[unit], unit)
    return "%dns" % ns


def parse_duration_ns(option, text, maximum=MAX_TIMEOUT_NS):
    """'20us' -> 20000; a bare number is nanoseconds."""
    accepted = ("a duration: a number of nanoseconds, or a number with unit "
                "ns, us, ms or s, at most %s" % format_duration_ns(maximum))
    match = _DURATION.match(str(text).strip())
    if not match:
        raise OptionError(option, text, accepted)
    value = int(match.group(1)) * _UNIT_NS[match.group(2) or "ns"]
    if value > maximum:
        raise OptionError(option, text, accepted)
    return value


def parse_number(option, text, minimum, maximum, accepted, decimal=False):
    """An int, or where decimal a float ("2.", ".5"; no exponent, nan, inf):
    a leading "-" is refused by the range's words; maximum None: unbounded."""
    stripped = str(text).strip()
    if not (_DECIMAL if decimal else _INT).match(stripped):
        raise OptionError(option, text, accepted)
    value = float(stripped) if decimal else int(stripped, 10)
    if value < minimum or (maximum is not None and value > maximum):
        raise OptionError(option, text, accepted)
    return value


def parse_int(option, text, minimum, maximum):
    """A decimal integer from minimum to maximum (parse_number)."""
    return parse_number(option, text, minimum, maximum,
                        "an integer from %d to %d" % (minimum, maximum))


def parse_choice(option, text, choices):
    """choices: {spelling: value}; spellings are matched case-insensitively."""
    key = str(text).strip().lower()
    if key not in choices:
        raise OptionError(option, text, "one of " + ", ".join(choices))
    return choices[key]


INDEX_LIST = "a list of numbers and ranges such as 0-3,6"
# The longest list text taken, checked before it is split: every CPU of
# MAX_CPU written one by one is 38,911 characters.
MAX_LIST_CHARS = 65536
_INDEX_RANGE = re.compile(r"^(" + _NUMBER + r")(?:[ \t]*-[ \t]*(" + _NUMBER + r"))?$")


def parse_index_list(option, text, maximum=MAX_CPU, accepted=None):
    """'0-3,6' -> [0, 1, 2, 3, 6] (sorted, no duplicates); also used for CPU
    lists (the default maximum is MAX_CPU).

    Whitespace is allowed around the items, not inside a number ("0-1 5"
    is not 0-15).  Ranges are checked and merged before any is expanded,
    so the cost is bounded by maximum however the text is written.
    """
    accepted = accepted or "%s, each at most %d" % (INDEX_LIST, maximum)
    if len(str(text)) > MAX_LIST_CHARS:
        raise OptionError(option, text, "%s, at most %d characters" % (accepted, MAX_LIST_CHARS))
    ranges = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        match = _INDEX_RANGE.match(part)
        if not match:
            raise OptionError(option, text, accepted)
        first = int(match.group(1))
        last = int(match.group(2) or first)
        if last < first or last > maximum:
            raise OptionError(option, text, accepted)
        ranges.append((first, last))
    if not ranges:
        raise OptionError(option, text, accepted)
    indexes = []
    for first, last in sorted(ranges):
        start = max(first, indexes[-1] + 1) if indexes else first
        indexes.extend(range(start, last + 1))
    return indexes


def index_runs(indexes):
    """[0, 1, 2, 3, 6] -> [[0, 3], [6, 6]]: the runs of consecutive numbers."""
    runs = []
    for i in sorted(set(indexes)):
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return runs


def format_index_list(indexes):
    """[0, 1, 2, 3, 6] -> '0-3,6'."""
    return ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in index_runs(indexes))
