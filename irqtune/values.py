# SPDX-License-Identifier: GPL-2.0-or-later
"""Parsing of the values administrators write in profiles.

Every parser raises OptionError naming the option, the value and what is
accepted, so a bad value costs one log line and nothing else.
"""

import re

from .errors import OptionError

S32_MAX = 2**31 - 1
U32_MAX = 2**32 - 1
U64_MAX = 2**64 - 1
# The highest CPU number a kernel can have (NR_CPUS is at most 8192, x86
# CONFIG_MAXSMP): a CPU list option beyond it is a typo, and expanding
# "0-4294967295" would stall the daemon.
MAX_CPU = 8191
# The highest queue index an option may name (channel counts are capped
# the same way in the channels options).
MAX_QUEUE = 65535

_DURATION = re.compile(r"^\s*(\d+)\s*(ns|us|ms|s)?\s*$")
_UNIT_NS = {"ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9}


def parse_duration_ns(option, text, maximum=U64_MAX):
    """'20us' -> 20000; a bare number is nanoseconds."""
    accepted = ("a duration: a number of nanoseconds, or a number with unit "
                "ns, us, ms or s, at most %d ns" % maximum)
    match = _DURATION.match(str(text))
    if not match:
        raise OptionError(option, text, accepted)
    value = int(match.group(1)) * _UNIT_NS[match.group(2) or "ns"]
    if value > maximum:
        raise OptionError(option, text, accepted)
    return value


def parse_int(option, text, minimum, maximum):
    accepted = "an integer from %d to %d" % (minimum, maximum)
    try:
        value = int(str(text).strip(), 10)
    except ValueError:
        raise OptionError(option, text, accepted) from None
    if not minimum <= value <= maximum:
        raise OptionError(option, text, accepted)
    return value


def parse_choice(option, text, choices):
    """choices: {spelling: value}; spellings are matched case-insensitively."""
    key = str(text).strip().lower()
    if key not in choices:
        raise OptionError(option, text, "one of " + ", ".join(choices))
    return choices[key]


INDEX_LIST = "a list of numbers and ranges such as 0-3,6"
CPU_LIST = INDEX_LIST + ", each at most %d" % MAX_CPU


def parse_index_list(option, text, maximum=U32_MAX, accepted=INDEX_LIST):
    """'0-3,6' -> [0, 1, 2, 3, 6] (sorted, no duplicates); also used for CPU
    lists (maximum=MAX_CPU, accepted=CPU_LIST)."""
    indexes = set()
    for part in str(text).replace(" ", "").split(","):
        if not part:
            continue
        match = re.match(r"^(\d+)(?:-(\d+))?$", part)
        if not match:
            raise OptionError(option, text, accepted)
        first = int(match.group(1))
        last = int(match.group(2) or first)
        if last < first or last > maximum:
            raise OptionError(option, text, accepted)
        indexes.update(range(first, last + 1))
    if not indexes:
        raise OptionError(option, text, accepted)
    return sorted(indexes)


def format_index_list(indexes):
    """[0, 1, 2, 3, 6] -> '0-3,6'."""
    runs = []
    for i in sorted(set(indexes)):
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in runs)
