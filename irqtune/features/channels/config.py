# SPDX-License-Identifier: GPL-2.0-or-later
"""What a profile asks of a NIC's channels and queue IRQs."""

from dataclasses import dataclass

from ...kernel.cpus import parse_cpulist_option
from ...kernel.errors import OptionError
from ...kernel.values import CPU_LIST, MAX_CPU, parse_index_list, parse_int
from ...services.options import Option, parse_options

HOUSEKEEPING = "housekeeping"
MAX_CHANNELS = 65535


def parse_channels(option, text):
    """'housekeeping' | a count 1-65535 | None (empty: leave alone)."""
    if text is None or str(text).strip() == "":
        return None
    if str(text).strip().lower() == HOUSEKEEPING:
        return HOUSEKEEPING
    try:
        return parse_int(option, text, 1, MAX_CHANNELS)
    except OptionError:
        raise OptionError(option, text, "housekeeping, or a channel count from 1 to %d"
                          % MAX_CHANNELS) from None


def parse_irq_affinity(option, text):
    """'housekeeping' | a sorted CPU list | None (empty: leave alone)."""
    if text is None or str(text).strip() == "":
        return None
    if str(text).strip().lower() == HOUSEKEEPING:
        return HOUSEKEEPING
    try:
        return tuple(parse_index_list(option, text, MAX_CPU, CPU_LIST))
    except OptionError:
        raise OptionError(option, text, "housekeeping, or a CPU list such as 0-1,4") from None


OPTIONS = (
    Option("channels", parse_channels, "housekeeping, or a channel count",
           "the channel count; housekeeping: one per housekeeping CPU"),
    Option("irq_affinity", parse_irq_affinity, "housekeeping, or a CPU list such as 0-1",
           "the CPUs of the queue interrupts"),
    Option("housekeeping_cpus", parse_cpulist_option,
           "CPU list (default: the online CPUs that are not isolated)", "the housekeeping CPUs"),
)


@dataclass(frozen=True)
class HousekeepingConfig:
    channels: object = None            # None, HOUSEKEEPING or an int
    irq_affinity: object = None        # None, HOUSEKEEPING or a tuple of CPUs
    housekeeping_cpus: tuple = None    # explicit housekeeping CPUs, or None

    @classmethod
    def from_options(cls, options):
        """(config, [OptionError]); a bad value is left out and reported."""
        values, errors = parse_options(OPTIONS, options)
        return cls(**{n: tuple(v) if isinstance(v, list) else v for n, v in values.items()
                      if v is not None}), errors
