# SPDX-License-Identifier: GPL-2.0-or-later
"""The NAPI tuner's configuration: target values from a profile's options
(range-checked, a bad value left out and reported) and the queues= scope.

In the napi plugin gro_flush_timeout and irq_suspend_timeout may be
"auto": the values then start at the series' (irqtune.measure.auto.START)
and follow the measured services (irqtune.measure.auto).  Other users of
the values (zerocopy_rx's napi_* options) measure nothing and refuse it.
"""

from dataclasses import dataclass, fields

from ..errors import OptionError
from ..measure.auto import START
from ..names import attr_name
from ..netlink.netdev import THREADED_VALUES
from ..values import (MAX_QUEUE, S32_MAX, parse_choice, parse_duration_ns, parse_index_list,
                      parse_int)

THREADED_CHOICES = dict(THREADED_VALUES, **{"0": 0, "1": 1, "2": 2, "off": 0, "on": 1})
AUTO = "auto"


def parse_duration_or_auto(option, text):
    """A duration in ns (parse_duration_ns), or AUTO."""
    if str(text).strip().lower() == AUTO:
        return AUTO
    try:
        return parse_duration_ns(option, text)
    except OptionError as err:
        raise OptionError(option, text, err.accepted + "; or auto (measured from the "
                          "services in auto_services)") from None


@dataclass(frozen=True)
class NapiConfig:
    """Target values; None leaves a value alone."""

    defer_hard_irqs: int = None
    gro_flush_timeout: int = None      # ns
    irq_suspend_timeout: int = None    # ns
    threaded: int = None               # 0 disabled, 1 enabled, 2 busy-poll
    auto: frozenset = frozenset()      # attribute names whose value is "auto"

    PARSERS = {
        "defer_hard_irqs": lambda o, v: parse_int(o, v, 0, S32_MAX),
        "gro_flush_timeout": parse_duration_ns,
        "irq_suspend_timeout": parse_duration_ns,
        "threaded": lambda o, v: parse_choice(o, v, THREADED_CHOICES),
    }
    # The values that may be "auto" where something measures (auto=True).
    AUTO_PARSERS = {
        "gro_flush_timeout": parse_duration_or_auto,
        "irq_suspend_timeout": parse_duration_or_auto,
    }

    @classmethod
    def parser(cls, name, auto=False):
        """The parser of option name: (option, text) -> value, or OptionError."""
        return (cls.AUTO_PARSERS if auto and name in cls.AUTO_PARSERS else cls.PARSERS)[name]

    @classmethod
    def from_options(cls, options, auto=False):
        """(config, [OptionError]) from {"defer_hard_irqs": "100", ...}.

        A bad value is left out of the config and reported; the rest stands.
        Empty or missing options are not set.  auto: whether the timeouts
        may be "auto" (the napi plugin measures for them): such a value is
        the series' START and its attribute is in config.auto.
        """
        values, errors, automatic = {}, [], set()
        for name in cls.PARSERS:
            text = options.get(name)
            if text is None or str(text).strip() == "":
                continue
            try:
                values[name] = cls.parser(name, auto)(name, text)
            except OptionError as err:
                errors.append(err)
                continue
            if values[name] == AUTO:
                automatic.add(attr_name(name))
                values[name] = START[attr_name(name)]
        return cls(auto=frozenset(automatic), **values), errors

    def attrs(self):
        """{netlink attribute name: value} of the values to set."""
        return {attr_name(f.name): getattr(self, f.name)
                for f in fields(self) if f.name != "auto" and getattr(self, f.name) is not None}

    def fixed(self):
        """attrs() without the auto values: what the profile itself sets."""
        return {a: v for a, v in self.attrs().items() if a not in self.auto}


def parse_queues(text):
    if text is None or str(text).strip() == "":
        return None
    return parse_index_list("queues", text, MAX_QUEUE)
