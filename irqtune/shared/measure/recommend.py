# SPDX-License-Identifier: GPL-2.0-or-later
"""The IRQ suspension series' rule for choosing its values, applied to
measured busy periods (seed 000, "Usage scenario"; docs/tuning.md,
"Values measured from the service"):

gro_flush_timeout    as small as possible, but large enough that a single
                     request is likely not interfered with: the p99 time
                     per event, with a margin;
irq_suspend_timeout  large enough to cover an entire batch: the p99 batch
                     time with a margin, and at least the largest batch
                     (in events) at gro_flush_timeout per event - so the
                     ratio of the two is at least the largest batch;
defer_hard_irqs      the series' 100 (every suspend case it measured).
"""

import math
from dataclasses import dataclass, field

from ...kernel.napi_attrs import DEFER_HARD_IRQS as DEFER, GRO_FLUSH_TIMEOUT as GRO
from ...kernel.napi_attrs import IRQ_SUSPEND_TIMEOUT as SUSPEND
from ...kernel.values import format_duration_ns
from . import busy

# Fewer busy periods than this and p99 is the largest few: too little
# traffic to judge.
MIN_BUSY_PERIODS = 100
GRO_MARGIN = 1.5
SUSPEND_MARGIN = 2.0
# gro_flush_timeout bounds: the series' smallest measured value (below it
# the deferral timer fires nearly per packet) and 1 ms (longer holds
# packets back more than suspension saves).
GRO_MIN_NS = 10000
GRO_MAX_NS = 1000000
# irq_suspend_timeout: above gro_flush_timeout by at least this factor
# (the kernel needs it above, or the deferral timer fires first), and at
# most 100 ms, the longest a stalled service should leave its queue
# without interrupts.
SUSPEND_MIN_FACTOR = 2
SUSPEND_MAX_NS = 100000000
DEFER_HARD_IRQS = 100

VARIABLES_FILE = "/etc/tuned/latency-suspend-variables.conf"


def _round_up(ns, step):
    return int(math.ceil(ns / step) * step)


@dataclass
class Recommendation:
    gro_flush_timeout_ns: int
    irq_suspend_timeout_ns: int
    defer_hard_irqs: int
    notes: list = field(default_factory=list)

    def values(self):
        """{irqtune.kernel.napi_attrs.NapiAttr: value}, in the variables file's order."""
        return {GRO: self.gro_flush_timeout_ns, SUSPEND: self.irq_suspend_timeout_ns,
                DEFER: self.defer_hard_irqs}

    def as_dict(self):
        return {a.option + ("_" + a.unit if a.unit else ""): v for a, v in self.values().items()}

    def lines(self):
        """The lines for the latency-suspend variables file."""
        return ["%s=%s" % (a.option, a.format(v)) for a, v in self.values().items()]


def recommend(figures):
    """Recommendation for busy.Figures; None when the window had fewer than
    MIN_BUSY_PERIODS busy periods (too little traffic to judge)."""
    if figures.busy_periods < MIN_BUSY_PERIODS:
        return None
    notes = []
    gro = _round_up(GRO_MARGIN * figures.event_ns["p99"], 1000)
    if gro < GRO_MIN_NS:
        gro = GRO_MIN_NS
    elif gro > GRO_MAX_NS:
        notes.append("%s held at its bound %s: a request takes up to %s (p99), longer than "
                     "deferral should hold packets back; the timer will interrupt the slowest "
                     "requests" % (GRO.option, format_duration_ns(GRO_MAX_NS),
                     format_duration_ns(figures.event_ns["p99"], exact=False)))
        gro = GRO_MAX_NS
    suspend = max(SUSPEND_MARGIN * figures.batch_ns["p99"],
                  gro * figures.batch_events["max"], SUSPEND_MIN_FACTOR * gro)
    suspend = _round_up(suspend, 10000)
    if suspend > SUSPEND_MAX_NS:
        notes.append("%s held at its bound %s: a batch takes up to %s (p99); the service "
                     "stalls longer than suspension should keep its queue quiet"
                     % (SUSPEND.option, format_duration_ns(SUSPEND_MAX_NS),
                        format_duration_ns(figures.batch_ns["p99"], exact=False)))
        suspend = SUSPEND_MAX_NS
    return Recommendation(gro, suspend, DEFER_HARD_IRQS, notes)


@dataclass
class Measured:
    """What a window says about a service: its recording
    (irqtune.shared.measure.epolltrace.Recorded), the figures of its busy periods
    and the rule's values - None when a measured process ended during the
    window (the figures are of a process that is gone) or there was too
    little traffic to judge."""
    recorded: object
    figures: object = None
    found: Recommendation = None


def measured(recorded):
    """The one way from a window's recording to values, for the doctor and
    for auto: figures, then the rule, unless a process ended meanwhile."""
    if recorded.exited:
        return Measured(recorded)
    figures = busy.figures(recorded.periods, recorded.maxevents)
    return Measured(recorded, figures, recommend(figures))
