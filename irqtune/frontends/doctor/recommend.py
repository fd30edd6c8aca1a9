# SPDX-License-Identifier: GPL-2.0-or-later
"""The doctor's `recommend` link: the target's busy periods measured over
the window (irqtune.shared.measure) and the values of the variables file that
fit them (irqtune.shared.measure.recommend).

What the link says never changes whether suspension engages: it is INFO,
except when a target process ended during the window (UNKNOWN: the
chain was judged for a process that is gone).
"""

from dataclasses import asdict

from ...kernel.errors import IrqtuneError
from ...kernel.values import format_duration_ns
from ...shared.measure import epolltrace, recommend as rule
from ...shared.measure.recommend import VARIABLES_FILE
from .links import INFO, UNKNOWN

GROUP = "recommend"


def start(pids, kfs):
    """A started irqtune.shared.measure.epolltrace.EpollTrace, or the reason there
    is none (a string)."""
    try:
        return epolltrace.EpollTrace(pids, kfs).start()
    except IrqtuneError as err:
        return str(err)


def describe(recorded, figures):
    f = figures
    text = "%d thread(s), %.1f s: %d busy periods" % (recorded.threads, recorded.seconds,
                                                      f.busy_periods)
    if f.busy_periods:
        text += ("; per event p50 %s, p99 %s, max %s; per batch p99 %s, max %s, up to %d "
                 "event%s" % tuple([format_duration_ns(ns, exact=False) for ns in (
                     f.event_ns["p50"], f.event_ns["p99"], f.event_ns["max"],
                     f.batch_ns["p99"], f.batch_ns["max"])] + [
                     f.batch_events["max"], "" if f.batch_events["max"] == 1 else "s"]))
        if f.maxevents:
            text += " (maxevents %d)" % f.maxevents
    if recorded.lost:
        text += "; %d waits lost by the kernel's buffer (their busy periods left out)" \
            % recorded.lost
    if recorded.truncated:
        text += "; the window ended early, at the %d busy periods it keeps" \
            % len(recorded.periods)
    return text


def check_service(report, trace, subject):
    """Adds the link for a trace started by start() (or its failure text),
    and fills report.measured / report.recommend."""
    if isinstance(trace, str):
        report.add(GROUP, subject, INFO, "cannot measure the service's busy periods: %s" % trace)
        return
    try:
        recorded = trace.stop()
    except IrqtuneError as err:         # the events are closed: the window is lost
        report.add(GROUP, subject, INFO, "cannot measure the service's busy periods: %s" % err)
        return
    result = rule.measured(recorded)
    if recorded.exited:
        report.add(GROUP, subject, UNKNOWN, "pid %s exited during the measured window"
                   % ", ".join(str(p) for p in recorded.exited),
                   "run the doctor again while the service runs")
        return
    figures, found = result.figures, result.found
    report.measured = dict(asdict(figures), seconds=round(recorded.seconds, 3),
                           threads=recorded.threads, lost_samples=recorded.lost,
                           truncated=recorded.truncated)
    if found is None:
        report.add(GROUP, subject, INFO, "%s: too little traffic to judge (fewer than %d busy "
                   "periods); run the doctor while the service has load, or with a longer "
                   "--seconds" % (describe(recorded, figures), rule.MIN_BUSY_PERIODS))
        return
    report.recommend = found.as_dict()
    notes = "".join("; " + n for n in found.notes)
    report.add(GROUP, subject, INFO, "%s%s; for %s:" % (describe(recorded, figures), notes,
                                                        VARIABLES_FILE),
               lines=found.lines(), **found.as_dict())
