# SPDX-License-Identifier: GPL-2.0-or-later
"""What a profile asks of a NIC's channels and queue IRQs."""

from dataclasses import dataclass

from ...kernel.errors import OptionError
from ...kernel.values import parse_index_list, parse_int
from ...shared.options import Option, parse_options

HOUSEKEEPING = "housekeeping"
MAX_CHANNELS = 65535


def _housekeeping_or(parse, accepted):
    """A parser of 'housekeeping' | what parse(option, text) takes (an empty
    value never reaches it: parse_options leaves it alone)."""
    def parser(option, text):
        if str(text).strip().lower() == HOUSEKEEPING:
            return HOUSEKEEPING
        try:
            return parse(option, text)
        except OptionError:
            raise OptionError(option, text, "housekeeping, or " + accepted) from None
    return parser


parse_channels = _housekeeping_or(lambda o, t: parse_int(o, t, 1, MAX_CHANNELS),
                                  "a channel count from 1 to %d" % MAX_CHANNELS)
parse_irq_affinity = _housekeeping_or(  # a sorted CPU list
    lambda o, t: tuple(parse_index_list(o, t)), "a CPU list such as 0-1,4")


OPTIONS = (
    Option("channels", parse_channels, "housekeeping, or a channel count",
           "the channel count; housekeeping: one per housekeeping CPU"),
    Option("irq_affinity", parse_irq_affinity, "housekeeping, or a CPU list such as 0-1",
           "the CPUs of the queue interrupts"),
    Option("housekeeping_cpus", parse_index_list,     # a CPU list (MAX_CPU at most)
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
        return cls(**{n: tuple(v) if isinstance(v, list) else v
                      for n, v in values.items()}), errors
