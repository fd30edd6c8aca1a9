# SPDX-License-Identifier: GPL-2.0-or-later
"""The napi plugin's options (VALUES: the per-NAPI values, also zerocopy_rx's
napi_* options; OPTIONS: the plugin's), its target values (NapiConfig) and
the queues= scope.

In the napi plugin gro_flush_timeout and irq_suspend_timeout may be
"auto": the values then start at the series' (irqtune.shared.measure.follow.START)
and follow the measured services (irqtune.shared.measure.follow).  Other users of
the values (zerocopy_rx's napi_* options) measure nothing and refuse it.
"""

from dataclasses import dataclass, fields

from ...kernel.names import attr_name
from ...kernel.napi_attrs import NAPI_ATTRS
from ...kernel.values import MAX_QUEUE, parse_index_list, parse_int
from ...shared.measure import follow
from ...shared.options import AUTO, Option, parse_options, renamed

# One option per attribute (irqtune.kernel.napi_attrs), named as it is.
VALUES = tuple(Option(a.option, a.parse, a.accepted, a.doc,
                      follows=None if a.auto_start is None else "auto_services") for a in NAPI_ATTRS)


# The values as another feature's napi_* options, for the NAPIs of the queues
# it reserves (zerocopy_rx): nothing measures there, so none may be auto.
QUEUE_VALUES = renamed(VALUES, "napi_")


def parse_queues(text, option="queues"):
    if text is None or str(text).strip() == "":
        return None
    return parse_index_list(option, text, MAX_QUEUE)


OPTIONS = VALUES + (
    Option("queues", lambda o, v: parse_queues(v, o), "rx queue indexes 0-65535, e.g. 0-3,8",
           "tune only the NAPIs serving these rx queues (unset: every NAPI)"),
    Option("recheck_interval", lambda o, v: parse_int(o, v, 0, 86400),
           "seconds, 0-86400 (default 5)",
           "how often recreated NAPIs are looked for; 0: on link events only"),
) + follow.OPTIONS


@dataclass(frozen=True)
class NapiConfig:
    """Target values; None leaves a value alone."""

    defer_hard_irqs: int = None
    gro_flush_timeout: int = None      # ns
    irq_suspend_timeout: int = None    # ns
    threaded: int = None               # 0 disabled, 1 enabled, 2 busy-poll
    measured_attrs: frozenset = frozenset()  # attribute names whose value is "auto"

    @classmethod
    def from_options(cls, options, allow_auto=False, declared=VALUES):
        """(config, [OptionError]) from {"defer_hard_irqs": "100", ...}.

        A bad value is left out of the config and reported; the rest stands.
        Empty or missing options are not set.  allow_auto: whether the
        timeouts may be "auto" (the napi plugin measures for them): such a
        value is the series' START and its attribute is in
        config.measured_attrs.  declared:
        VALUES, or QUEUE_VALUES (zerocopy_rx's napi_* options).
        """
        given, errors = parse_options(declared, options, allow_auto)
        values = {o.name: given[d.name] for o, d in zip(VALUES, declared) if d.name in given}
        automatic = {attr_name(n) for n, v in values.items() if v == AUTO}
        values.update({n: follow.START[attr_name(n)] for n, v in values.items() if v == AUTO})
        return cls(measured_attrs=frozenset(automatic), **values), errors

    def attrs(self):
        """{netlink attribute name: value} of the values to set."""
        return {attr_name(f.name): getattr(self, f.name)
                for f in fields(self) if f.name != "measured_attrs" and getattr(self, f.name) is not None}

    def fixed(self):
        """attrs() without the auto values: what the profile itself sets."""
        return {a: v for a, v in self.attrs().items() if a not in self.measured_attrs}
