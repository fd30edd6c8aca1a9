# SPDX-License-Identifier: GPL-2.0-or-later
"""What a profile asks of GSIM: target values and which IRQs it covers."""

import fnmatch
import re
from dataclasses import dataclass, fields

from ...kernel import irqs as irqs_mod
from ...kernel.errors import OptionError
from ...kernel.kfs import KFS
from ...kernel.values import parse_int
from ...shared.options import Option, parse_options
from .interface import RANGES


def _knob(name, unit, doc):
    low, high = RANGES[name]
    return Option(name, lambda o, v: parse_int(o, v, low, high), "%d-%d %s" % (low, high, unit),
                  doc)


OPTIONS = (
    _knob("delay_us", "us", "the longest moderation delay (0: moderation off)"),
    _knob("target_intr_rate", "/s", "the global interrupt rate target (0: none)"),
    _knob("hardirq_percent", "%", "the per-CPU target for time in hard interrupt context "
          "(0: none)"),
    _knob("update_ms", "ms", "the control loop period"),
    Option("irqs", lambda o, v: IrqSelection.parse(v, o),
           "nic:NAMES; name:REGEX; all (selectors separated by ';')",
           "the interrupts GSIM may moderate (empty: every per-interrupt switch stays)"),
    Option("variables_file", None, "path", "a file of gsim_<option>=value lines replacing "
           "the options"),
)
# The prefix of the variables_file's lines.
OVERLAY_PREFIX = "gsim_"


@dataclass(frozen=True)
class GsimConfig:
    """Target values (user option names); None leaves a knob alone."""

    delay_us: int = None
    target_intr_rate: int = None
    hardirq_percent: int = None
    update_ms: int = None

    @classmethod
    def from_options(cls, options):
        """(config, [OptionError]); a bad value is left out and reported."""
        values, errors = parse_options(OPTIONS[:len(RANGES)], options)
        return cls(**values), errors

    def items(self):
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) is not None}


@dataclass(frozen=True)
class IrqSelection:
    """Which IRQs to moderate, from the `irqs` option.

    Selectors separated by ";" (any one matching selects an IRQ):
      nic:eth0,eth1   queue IRQs of these NICs (shell wildcards allowed)
      name:REGEX      IRQs whose name in /proc/interrupts matches (re.search)
      all             every IRQ GSIM can moderate
    Empty: no per-IRQ switch is touched.
    """

    ACCEPTED = ("selectors separated by ';': 'nic:' with NIC names (wildcards allowed), "
                "'name:' with a regular expression, or 'all'")

    nics: tuple = ()
    patterns: tuple = ()
    everything: bool = False

    @classmethod
    def parse(cls, text, option="irqs"):
        text = "" if text is None else str(text).strip()
        nics, patterns, everything = [], [], False
        for part in text.split(";"):
            part = part.strip()
            if not part:
                continue
            kind, sep, arg = part.partition(":")
            kind = kind.strip().lower()
            if kind == "all" and not sep:
                everything = True
            elif kind == "nic" and sep:
                names = [n for n in re.split(r"[\s,]+", arg.strip()) if n]
                if not names or any(not re.match(r"^[\w.*?\[\]!:@-]+$", n) for n in names):
                    raise OptionError(option, text, cls.ACCEPTED)
                nics.extend(names)
            elif kind == "name" and sep:
                try:
                    patterns.append(re.compile(arg.strip()))
                except re.error as err:
                    raise OptionError(option, text, cls.ACCEPTED + " (%s)" % err) from None
                if not arg.strip():
                    raise OptionError(option, text, cls.ACCEPTED)
            else:
                raise OptionError(option, text, cls.ACCEPTED)
        return cls(tuple(nics), tuple(patterns), everything)

    def __bool__(self):
        return bool(self.nics or self.patterns or self.everything)

    def select(self, interrupts, kfs=KFS, napi_irqs=irqs_mod.napi_irqs):
        """{irq: reason} of the IRQs these selectors match (eligibility aside).

        NIC queue IRQs come from irqtune.kernel.irqs.queue_irqs(); napi_irqs(ifname)
        gives the IRQs the driver links to its NAPIs (None: not asked).
        """
        chosen = {}
        if self.everything:
            for irq in interrupts:
                chosen[irq] = "all"
        for pattern in self.patterns:
            for irq, info in interrupts.items():
                if info.name and pattern.search(info.name):
                    chosen.setdefault(irq, "name:" + pattern.pattern)
        if self.nics:
            for ifname in kfs.listdir(kfs.sys_path("class/net")):
                if not any(fnmatch.fnmatchcase(ifname, n) for n in self.nics):
                    continue
                napi = set(napi_irqs(ifname)) if napi_irqs is not None else ()
                for irq in irqs_mod.queue_irqs(ifname, kfs, napi=napi):
                    if irq in interrupts:
                        chosen.setdefault(irq, "nic:" + ifname)
        return chosen
