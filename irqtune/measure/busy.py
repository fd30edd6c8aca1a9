# SPDX-License-Identifier: GPL-2.0-or-later
"""Busy periods of epoll event loops, from the entries into and returns
from epoll_wait / epoll_pwait / epoll_pwait2 of each thread.

A busy period starts when a wait returns n > 0 events and ends when the
same thread enters its next wait: the time the application spends on one
batch - what irq_suspend_timeout must cover, since the kernel re-arms the
suspension timer each time a wait returns events (fs/eventpoll.c,
Linux 6.13).  Its time divided by n is the time per event, which
gro_flush_timeout must cover (seed 000, "Usage scenario").
"""

import math
import struct
from dataclasses import dataclass, field

WAITS = ("epoll_wait", "epoll_pwait", "epoll_pwait2")
ENTER, EXIT = "enter", "exit"


def tracepoint_names():
    return ["sys_%s_%s" % (kind, wait) for wait in WAITS for kind in (ENTER, EXIT)]


@dataclass(frozen=True)
class Period:
    tid: int
    ns: int
    events: int


@dataclass
class Decoder:
    """What one raw tracepoint record means: {common_type: (kind, offset,
    size)} - the field read is maxevents on entry, ret on return."""
    layouts: dict = field(default_factory=dict)

    @classmethod
    def from_formats(cls, formats):
        """formats: {tracepoint name: {"id", "fields"}} (irqtune.measure.tracefs)."""
        decoder = cls()
        for name, fmt in formats.items():
            kind = ENTER if name.startswith("sys_enter_") else EXIT
            offset, size, _ = fmt["fields"]["maxevents" if kind == ENTER else "ret"]
            decoder.layouts[fmt["id"]] = (kind, offset, size)
        return decoder

    def decode(self, raw):
        """(kind, value) of a raw record, None for another tracepoint's."""
        if len(raw) < 2:
            return None
        layout = self.layouts.get(struct.unpack_from("=H", raw)[0])
        if layout is None:
            return None
        kind, offset, size = layout
        if len(raw) < offset + size:
            return None
        value = int.from_bytes(raw[offset:offset + size], "little", signed=True)
        return kind, value


def busy_periods(samples, decoder):
    """([Period], largest maxevents seen) from (tid, time ns, raw) samples in
    any order (several CPUs' rings).  A return while a period is open means
    the entry between was lost: that period is dropped, not stretched."""
    decoded = []
    for tid, time_ns, raw in samples:
        what = decoder.decode(raw)
        if what is not None:
            decoded.append((tid, time_ns, what[0], what[1]))
    decoded.sort()
    periods, open_at, maxevents = [], {}, 0
    for tid, time_ns, kind, value in decoded:
        if kind == ENTER:
            maxevents = max(maxevents, value)
            started = open_at.pop(tid, None)
            if started is not None:
                periods.append(Period(tid, time_ns - started[0], started[1]))
        else:
            open_at.pop(tid, None)
            if value > 0:
                open_at[tid] = (time_ns, value)
    return periods, maxevents


def percentile(sorted_values, p):
    """Nearest-rank percentile of a sorted list (None when empty)."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(p / 100.0 * len(sorted_values)))
    return sorted_values[rank - 1]


def weighted_percentile(sorted_pairs, p):
    """Nearest-rank percentile of (value, weight) pairs sorted by value."""
    total = sum(w for _, w in sorted_pairs)
    if not total:
        return None
    rank, seen = max(1, math.ceil(p / 100.0 * total)), 0
    for value, weight in sorted_pairs:
        seen += weight
        if seen >= rank:
            return value
    return sorted_pairs[-1][0]


@dataclass
class Figures:
    busy_periods: int
    event_ns: dict          # p50, p99, max: time per event, over events
    batch_ns: dict          # p99, max: time of a busy period
    batch_events: dict      # max: events returned by one wait
    maxevents: int          # the largest maxevents a wait asked for

    def as_dict(self):
        return {"busy_periods": self.busy_periods, "event_ns": self.event_ns,
                "batch_ns": self.batch_ns, "batch_events": self.batch_events,
                "maxevents": self.maxevents}


def figures(periods, maxevents=0):
    """Figures of busy periods; per-event times are weighted by events, so
    that p99 is that of requests, not of batches."""
    per_event = sorted((p.ns // p.events, p.events) for p in periods)
    batches = sorted(p.ns for p in periods)
    return Figures(
        busy_periods=len(periods),
        event_ns={"p50": weighted_percentile(per_event, 50),
                  "p99": weighted_percentile(per_event, 99),
                  "max": per_event[-1][0] if per_event else None},
        batch_ns={"p99": percentile(batches, 99), "max": batches[-1] if batches else None},
        batch_events={"max": max((p.events for p in periods), default=None)},
        maxevents=maxevents)
