# SPDX-License-Identifier: GPL-2.0-or-later
"""The NAPI tuner's configuration: target values from a profile's options
(range-checked, a bad value left out and reported) and the queues= scope."""

from dataclasses import dataclass, fields

from ..errors import OptionError
from ..names import attr_name
from ..netlink.netdev import THREADED_VALUES
from ..values import (MAX_QUEUE, S32_MAX, parse_choice, parse_duration_ns, parse_index_list,
                      parse_int)

THREADED_CHOICES = dict(THREADED_VALUES, **{"0": 0, "1": 1, "2": 2, "off": 0, "on": 1})


@dataclass(frozen=True)
class NapiConfig:
    """Target values; None leaves a value alone."""

    defer_hard_irqs: int = None
    gro_flush_timeout: int = None      # ns
    irq_suspend_timeout: int = None    # ns
    threaded: int = None               # 0 disabled, 1 enabled, 2 busy-poll

    PARSERS = {
        "defer_hard_irqs": lambda o, v: parse_int(o, v, 0, S32_MAX),
        "gro_flush_timeout": parse_duration_ns,
        "irq_suspend_timeout": parse_duration_ns,
        "threaded": lambda o, v: parse_choice(o, v, THREADED_CHOICES),
    }

    @classmethod
    def from_options(cls, options):
        """(config, [OptionError]) from {"defer_hard_irqs": "100", ...}.

        A bad value is left out of the config and reported; the rest stands.
        Empty or missing options are not set.
        """
        values, errors = {}, []
        for name, parse in cls.PARSERS.items():
            text = options.get(name)
            if text is None or str(text).strip() == "":
                continue
            try:
                values[name] = parse(name, text)
            except OptionError as err:
                errors.append(err)
        return cls(**values), errors

    def attrs(self):
        """{netlink attribute name: value} of the values to set."""
        return {attr_name(f.name): getattr(self, f.name)
                for f in fields(self) if getattr(self, f.name) is not None}


def parse_queues(text):
    if text is None or str(text).strip() == "":
        return None
    return parse_index_list("queues", text, MAX_QUEUE)
