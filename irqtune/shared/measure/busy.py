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

import bisect
import math
import struct
from array import array
from dataclasses import dataclass, field

WAITS = ("epoll_wait", "epoll_pwait", "epoll_pwait2")
ENTER, EXIT = "enter", "exit"
TRACEPOINTS = ["sys_%s_%s" % (kind, wait) for wait in WAITS for kind in (ENTER, EXIT)]


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
        """formats: {tracepoint name: {"id", "fields"}} (irqtune.shared.measure.tracefs)."""
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


# Waits younger than this, at a drain, wait for the next one: another
# CPU's ring may still hold an earlier wait of the same thread (a record is
# written microseconds after its time; faultable syscall tracepoints,
# Linux 6.14, may be preempted in between).
SETTLE_NS = 50000000
# Held waits at most (about 130 bytes each): beyond, the oldest are counted
# without waiting for the settle mark.
MAX_PENDING = 50000
# Busy periods kept at most (16 bytes each: tid, ns, events): plenty for a p99, and then
# the window ends (truncated).
MAX_PERIODS = 200000


class Periods:
    """Busy periods kept compact: two arrays of integers (ns, events), not
    an object each.  Iterating gives Period values."""

    def __init__(self):
        self.tids, self.ns, self.events = array("i"), array("q"), array("i")

    def append(self, tid, ns, events):
        self.tids.append(tid)
        self.ns.append(ns)
        self.events.append(events)

    def __len__(self):
        return len(self.ns)

    def __iter__(self):
        for tid, ns, events in zip(self.tids, self.ns, self.events):
            yield Period(tid, ns, events)


class Tracker:
    """Busy periods decoded as the rings drain: add() a drain's (tid, time
    ns, raw) samples, settle(mark) to count every held wait older than the
    mark in time order, finish() at the end.  What is kept is the periods
    (compact, at most max_periods), each thread's open period and the waits
    held for ordering - never the samples, so a target that waits a
    million times a second costs time, not memory."""

    def __init__(self, decoder, max_periods=MAX_PERIODS, max_pending=MAX_PENDING):
        self.decoder = decoder
        self.max_periods, self.max_pending = max_periods, max_pending
        self.periods = Periods()
        self.maxevents = 0
        self.waits = 0              # entries counted
        self.late = 0               # waits drained after their time was counted: dropped
        self._open = {}             # tid: (return time, events) of its busy period
        self._held = []             # (time, tid, is entry, value) not yet counted
        self._counted_to = 0

    @property
    def full(self):
        return len(self.periods) >= self.max_periods

    def add(self, samples):
        decode, held, counted_to = self.decoder.decode, self._held, self._counted_to
        for tid, time_ns, raw in samples:
            what = decode(raw)
            if what is None:
                continue
            if time_ns < counted_to:
                self.late += 1
                self._open.pop(tid, None)
                continue
            held.append((time_ns, tid, what[0] == ENTER, what[1]))
        if len(held) > self.max_pending:
            held.sort()
            self._count(len(held) - self.max_pending // 2)

    def settle(self, mark_ns):
        """Counts the held waits older than mark_ns, in time order."""
        held = self._held
        held.sort()
        self._count(bisect.bisect_left(held, (mark_ns,)))

    def finish(self):
        self._held.sort()
        self._count(len(self._held))

    def _count(self, n):
        """Counts the n oldest held waits (sorted)."""
        held, open_at, periods = self._held, self._open, self.periods
        for time_ns, tid, is_entry, value in held[:n]:
            if is_entry:
                self.waits += 1
                if value > self.maxevents:
                    self.maxevents = value
                started = open_at.pop(tid, None)
                if started is not None and len(periods) < self.max_periods:
                    periods.append(tid, time_ns - started[0], started[1])
            else:
                # a return while a period is open: the entry between was lost
                open_at.pop(tid, None)
                if value > 0:
                    open_at[tid] = (time_ns, value)
        if n:
            self._counted_to = max(self._counted_to, held[n - 1][0])
            del held[:n]


def percentile(sorted_values, p):
    """Nearest-rank percentile of a sorted list (None when empty)."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(p / 100.0 * len(sorted_values)))
    return sorted_values[rank - 1]


@dataclass
class Figures:
    busy_periods: int
    event_ns: dict          # p50, p99, max: time per event, over events
    batch_ns: dict          # p99, max: time of a busy period
    batch_events: dict      # max: events returned by one wait
    maxevents: int          # the largest maxevents a wait asked for


def figures(periods, maxevents=0):
    """Figures of busy periods (Periods or Period values); per-event times
    are weighted by events, so that p99 is that of requests, not of
    batches.  The per-event values are sorted as single integers (value
    and weight packed), not as an object each."""
    per_event, batches, most_events = [], [], None
    for p in periods:
        per_event.append(((p.ns // p.events) << _WEIGHT_BITS) | min(p.events, _WEIGHT_MAX))
        batches.append(p.ns)
        if most_events is None or p.events > most_events:
            most_events = p.events
    per_event.sort()
    batches.sort()
    return Figures(
        busy_periods=len(batches),
        event_ns={"p50": _packed_percentile(per_event, 50),
                  "p99": _packed_percentile(per_event, 99),
                  "max": per_event[-1] >> _WEIGHT_BITS if per_event else None},
        batch_ns={"p99": percentile(batches, 99), "max": batches[-1] if batches else None},
        batch_events={"max": most_events},
        maxevents=maxevents)


# A wait returns at most EP_MAX_EVENTS (INT_MAX / sizeof(struct
# epoll_event), under 2^28) events: the weight fits in the low bits.
_WEIGHT_BITS = 28
_WEIGHT_MAX = (1 << _WEIGHT_BITS) - 1


def _packed_percentile(packed, p):
    """Nearest-rank percentile over events of sorted (value << _WEIGHT_BITS |
    weight): each value counts weight times."""
    total = sum(v & _WEIGHT_MAX for v in packed)
    if not total:
        return None
    rank, seen = max(1, math.ceil(p / 100.0 * total)), 0
    for v in packed:
        seen += v & _WEIGHT_MAX
        if seen >= rank:
            return v >> _WEIGHT_BITS
    return packed[-1] >> _WEIGHT_BITS
