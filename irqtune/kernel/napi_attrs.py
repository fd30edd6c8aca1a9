# SPDX-License-Identifier: GPL-2.0-or-later
"""The NAPI attributes irqtune tunes, declared once, as the kernel declares
them once (Documentation/netlink/specs/netdev.yaml, attribute-set napi):
napi_msg's nla_map, caps, the napi options and their sysfs fallback, auto,
the recommendation, the metrics, the status table and the doctor derive
from NAPI_ATTRS; no other library file spells one (test_napi_attrs.py)."""

from dataclasses import dataclass

from .names import option_name
from .values import S32_MAX, format_duration_ns, parse_choice, parse_duration_ns, parse_int

# The kernel's enum napi-threaded; a profile may also write 0-2, off, on.
THREADED_VALUES = {"disabled": 0, "enabled": 1, "busy-poll": 2}
THREADED_CHOICES = dict(THREADED_VALUES, **{"0": 0, "1": 1, "2": 2, "off": 0, "on": 1})
THREADED_BUSY_POLL_SINCE = "6.19"
DURATION = "duration (ns, or with unit ns/us/ms/s), at most 1s"


@dataclass(frozen=True)
class NapiAttr:
    """A netlink attribute (name, pyroute2 type) napi-set accepts since a
    kernel; the device-wide sysfs file standing in for it before napi-set
    (None: none), which takes at most sysfs_max; its unit ("ns", or "" for a
    count or a mode); its option (parse, accepted, doc); where an "auto"
    value starts (the series' value; None: it cannot be auto); the help of
    its gauge in `irqtune metrics`."""

    name: str
    nla_type: str
    since: str
    sysfs_file: str
    unit: str
    parse: object
    accepted: str
    doc: str
    auto_start: int
    help: str
    sysfs_max: int = None

    @property
    def option(self):
        return option_name(self.name)

    @property
    def metric_unit(self):
        return "seconds" if self.unit == "ns" else ""

    @property
    def metric(self):
        """The gauge's name, its base unit in it (Prometheus' rules)."""
        return "_".join(filter(None, ("irqtune_napi", self.option, self.metric_unit)))

    def metric_value(self, value):
        return value / 1e9 if self.unit == "ns" else value

    def format(self, value):
        """The value as a profile writes it: 20us, 100."""
        return format_duration_ns(value) if self.unit == "ns" else "%d" % value


DEFER_HARD_IRQS = NapiAttr(
    "defer-hard-irqs", "uint32", "6.13", "napi_defer_hard_irqs", "",
    lambda o, v: parse_int(o, v, 0, S32_MAX), "0-2147483647",
    "polls in a row that find work and keep the device IRQ masked", None,
    "defer-hard-irqs the NAPI holds: polls that keep its IRQ masked")
GRO_FLUSH_TIMEOUT = NapiAttr(
    "gro-flush-timeout", "uint", "6.13", "gro_flush_timeout", "ns", parse_duration_ns, DURATION,
    "the timer that polls again while the IRQ stays masked", 20000,
    "gro-flush-timeout the NAPI holds: the deferral re-poll timer")
IRQ_SUSPEND_TIMEOUT = NapiAttr(
    "irq-suspend-timeout", "uint", "6.13", None, "ns", parse_duration_ns, DURATION,
    "the longest a busy polling application keeps the IRQ suspended", 20000000,
    "irq-suspend-timeout the NAPI holds: longest IRQ suspension while an epoll loop finds "
    "events (0: never suspended)")
THREADED = NapiAttr(
    "threaded", "uint32", "6.17", "threaded", "",
    lambda o, v: parse_choice(o, v, THREADED_CHOICES), "disabled, enabled or busy-poll",
    "threaded NAPI polling (busy-poll: Linux %s)" % THREADED_BUSY_POLL_SINCE, None,
    "threaded mode of the NAPI: 0 softirq, 1 kthread, 2 busy-poll kthread",
    sysfs_max=THREADED_VALUES["enabled"])

# In the kernel's order: napi_msg numbers them on from its pid attribute (4).
NAPI_ATTRS = (DEFER_HARD_IRQS, GRO_FLUSH_TIMEOUT, IRQ_SUSPEND_TIMEOUT, THREADED)
BY_NAME = {a.name: a for a in NAPI_ATTRS}
