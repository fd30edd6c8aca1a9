# SPDX-License-Identifier: GPL-2.0-or-later
"""The one schema of a saved run: every field `report`, `report
--verdicts-json`, `compare` and `docs` read, with its type and bounds,
checked before anything is computed (saved.load).  A run file is the
runner's JSON, which other people's hands and editors may have shaped:
problem() names the first field that is not what the code reads, as a
path (runs[3].hist.counts[5][0]), what it holds and what is accepted.

The bounds lie well above the biggest real run (docs/data/lab-bench.json.xz:
5 modes x 3 loads x 8 rounds = 120 runs, 950 histogram buckets and 20
slices a run) and keep what the commands compute from a run that passes
to seconds: at most 14 modes (each known mode once), 16 loads, 2000
runs, round numbers up to 1000, 8192 buckets, 4096 slices, 1000 items
of the other lists.  The costliest such run (2000 runs spread over the
verdict cells of 16 loads) took `docs` 11 s and `report` 7.4 s on a
loaded 2-core machine (the bootstrap: 10,000 resamples per judged cell)."""

import math

from .guard import shown
from .modes import MEASURED, MODES
from .report import KEYS

MODE_NAMES = tuple(MODES) + MEASURED
MAX_LOADS = 16
MAX_RUNS = 2000
MAX_ROUND = 1000
MAX_BUCKETS = 8192
MAX_SLICES = 4096
MAX_LIST = 1000             # attempts, reasons, probes, settles, placement lines, held values
MAX_TEXT = 65536            # characters of a string the report shows
MAX_FIGURE = 1e15           # a run's figures (p99 us, instructions per request, ...)
MAX_COUNT = 2 ** 63 - 1     # histogram counts, ns, instruction counts
MISSING = object()


class Refused(Exception):
    """The first field of a run file that is not what the code reads."""


def found(value):
    """What a field holds, short: a string's first characters, a number,
    a container's kind and size (never the whole of it)."""
    if value is MISSING:
        return "missing"
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, str):
        return '"%s"' % shown(value, 40)
    if isinstance(value, int):
        return str(value) if abs(value) < 10 ** 20 else "a number of %d digits" % len(str(abs(value)))
    if isinstance(value, float):
        return {math.inf: "Infinity", -math.inf: "-Infinity"}.get(value, "NaN" if value != value else repr(value))
    if isinstance(value, list):
        return "a list of %d" % len(value)
    return "an object of %d key(s)" % len(value)


def refuse(path, value, accepted):
    raise Refused("%s: %s, accepted %s" % (path or "the file", found(value), accepted))


def at(path, key):
    if isinstance(key, int):
        return "%s[%d]" % (path, key)
    if key.isidentifier():
        return "%s.%s" % (path, key) if path else key
    return "%s[%s]" % (path, found(key))


# -- field types: check(value, path) raises Refused ---------------------------

class Whole:
    def __init__(self, low, high):
        self.low, self.high = low, high
        self.accepted = "a whole number from %d to %d" % (low, high)

    def __call__(self, value, path):
        if type(value) is not int or not self.low <= value <= self.high:
            refuse(path, value, self.accepted)


class Number:
    def __init__(self, low, high):
        self.low, self.high = low, high
        self.accepted = "a number from %g to %g" % (low, high)

    def __call__(self, value, path):
        if type(value) is int:
            ok = self.low <= value <= self.high
        else:
            ok = type(value) is float and math.isfinite(value) and self.low <= value <= self.high
        if not ok:
            refuse(path, value, self.accepted)


class Text:
    def __init__(self, most=MAX_TEXT):
        self.most = most
        self.accepted = "a string of at most %d characters" % most

    def __call__(self, value, path):
        if type(value) is not str or len(value) > self.most:
            refuse(path, value, self.accepted)


def boolean(value, path):
    if type(value) is not bool:
        refuse(path, value, boolean.accepted)


boolean.accepted = "true or false"


class OneOf:
    def __init__(self, names, what):
        self.names, self.accepted = names, what

    def __call__(self, value, path):
        if type(value) is not str or value not in self.names:
            refuse(path, value, self.accepted)


class Nullable:
    def __init__(self, spec):
        self.spec = spec
        self.accepted = "null or " + spec.accepted

    def __call__(self, value, path):
        if value is not None:
            self.spec(value, path)


class Items:
    """A list of at most `most` items (`least` at least) of one spec;
    distinct: no item twice."""

    def __init__(self, spec, most, least=0, distinct=False):
        self.spec, self.most, self.least, self.distinct = spec, most, least, distinct
        size = "%d" % most if least == most else "%d to %d" % (least, most) if least else "at most %d" % most
        self.accepted = "a list of %s (%s)" % (size, getattr(spec, "accepted", "items"))

    def __call__(self, value, path):
        if type(value) is not list or not self.least <= len(value) <= self.most:
            refuse(path, value, self.accepted)
        for i, item in enumerate(value):
            self.spec(item, at(path, i))
        if self.distinct:
            seen = set()
            for i, item in enumerate(value):
                if item in seen:
                    refuse(at(path, i), item, "each once")
                seen.add(item)


class Pair:
    def __init__(self, first, second):
        self.first, self.second = first, second
        self.accepted = "a pair [%s, %s]" % (first.accepted, second.accepted)

    def __call__(self, value, path):
        if type(value) is not list or len(value) != 2:
            refuse(path, value, self.accepted)
        self.first(value[0], at(path, 0))
        self.second(value[1], at(path, 1))


class Fields:
    """An object with these fields (others are not read, and let be)."""

    def __init__(self, required=None, optional=None, what="an object"):
        self.required, self.optional = required or {}, optional or {}
        self.accepted = what

    def __call__(self, value, path):
        if type(value) is not dict:
            refuse(path, value, self.accepted)
        for key, spec in self.required.items():
            spec(value.get(key, MISSING), at(path, key))
        for key, spec in self.optional.items():
            if key in value:
                spec(value[key], at(path, key))


class Mapping:
    """An object of at most `most` keys, each value of one spec."""

    def __init__(self, spec, most):
        self.spec, self.most = spec, most
        self.accepted = "an object of at most %d keys (%s)" % (most, spec.accepted)

    def __call__(self, value, path):
        if type(value) is not dict or len(value) > self.most:
            refuse(path, value, self.accepted)
        for key, item in value.items():
            self.spec(item, at(path, key))


# -- the run ------------------------------------------------------------------

TEXT, FIGURE = Text(), Number(0, MAX_FIGURE)
COUNT = Whole(0, MAX_COUNT)
LOAD = Whole(0, 10 ** 9)
HELD = Items(Items(COUNT, 3, least=3), MAX_LIST)
SETTINGS = Fields({"repeats": Whole(1, MAX_ROUND), "seconds": Number(0, 86400), "warmup": Number(0, 86400),
                   "conns": Whole(1, 10 ** 6)}, what="an object of the run's settings")
RUN = Fields(
    {"offered": LOAD},
    dict({k: Nullable(FIGURE) for k in KEYS}, **{
        "round": Whole(1, MAX_ROUND), "topology": Text(64), "failed": TEXT, "disturbed": Items(TEXT, MAX_LIST),
        "reruns": Whole(0, MAX_LIST), "client_bound": boolean,
        "attempts": Items(Fields({"reasons": Items(TEXT, MAX_LIST)}), MAX_LIST),
        "slices_p99_us": Items(Nullable(FIGURE), MAX_SLICES),
        "held": Fields(optional={"before": HELD, "after": HELD}),
        "auto_warmup": Fields({"seconds": FIGURE}, {"held": Nullable(HELD)}),
        "hist": Fields({"counts": Items(Pair(Whole(0, 1 << 24), COUNT), MAX_BUCKETS)},
                       {"sub_bits": Whole(0, 16), "max_ns": COUNT, "unanswered": COUNT})}),
    what="an object of one run's figures")
SATURATION = Nullable(Fields({"rate": LOAD, "probes": Items(Fields({"offered": LOAD, "kept_up": boolean}), MAX_LIST)},
                            {"side": Nullable(Text(64))}))
RECOMMENDED = Fields({"defer_hard_irqs": COUNT, "gro_flush_timeout_ns": COUNT, "irq_suspend_timeout_ns": COUNT})
SCALAR = Nullable(FIGURE)
MEASURED_FIGURES = Fields({"busy_periods": COUNT, "event_ns": Fields({"p50": SCALAR, "p99": SCALAR, "max": SCALAR}),
                           "batch_ns": Fields({"p99": SCALAR, "max": SCALAR}), "batch_events": Fields({"max": SCALAR})})
PLACEMENT = Nullable(Fields({"what": TEXT, "lines": Items(TEXT, MAX_LIST)}))
LABEL = Nullable(Number(-MAX_FIGURE, MAX_FIGURE))


def label(value, path):
    """A fact shown as it is: a string or a number."""
    if type(value) is not str:
        LABEL(value, path)
    else:
        TEXT(value, path)


label.accepted = "a string or a number"
TESTBED = Fields(optional={
    "summary": TEXT, "insns": TEXT, "serving_thread": TEXT, "kernel": label,
    "machine": Fields(optional={k: label for k in ("host_cpu", "host_cpus", "host_mem_gib", "host_kernel", "qemu")}),
    "guest": Fields({"vcpus": COUNT, "cpu_model": TEXT, "nic_queues": COUNT, "cmdline_extra": TEXT})})
OTHERS = Fields(optional={
    "saturation": SATURATION, "placement": PLACEMENT, "testbed": TESTBED, "who_sets": Mapping(TEXT, MAX_LIST),
    "rule": Mapping(FIGURE, MAX_LIST), "started": TEXT, "command": TEXT, "seconds_total": label})


STEP_SLICE = Fields({"step": Whole(0, MAX_LIST), "offered": LOAD, "slice": Whole(0, MAX_SLICES)},
                    {"failed": TEXT, "p99_us": SCALAR, "cpu_us_per_request": SCALAR, "held": HELD})
STEP = Fields({"fractions": Items(Number(0, 2), MAX_LIST), "step_seconds": FIGURE, "slice_seconds": FIGURE},
              {"failed": TEXT, "slices": Items(STEP_SLICE, MAX_SLICES)})


def check_recommend(rec, path="recommend"):
    """One doctor run per load (a list), or one (runs before issue 48)."""
    if rec is None:
        return
    if type(rec) is list:
        Items(check_recommend, MAX_LOADS)(rec, path)
        return
    Fields({"offered": LOAD, "doctor": TEXT}, {"failed": Nullable(TEXT)})(rec, path)
    if not rec.get("failed"):
        Fields({"values": RECOMMENDED, "measured": MEASURED_FIGURES})(rec, path)


def check_settle(settle, path):
    Fields({"round": Whole(1, MAX_ROUND)}, {"failed": Nullable(TEXT)})(settle, path)
    if not settle.get("failed"):
        Fields({"seconds": FIGURE, "offered": LOAD, "held": HELD})(settle, path)


def a_run(run, path):
    """runs' items are checked one by one below (their mode needs the settings)."""


a_run.accepted = "runs"


def check_runs(runs, modes):
    Items(a_run, MAX_RUNS)(runs, "runs")
    mode = OneOf(set(modes), "one of settings.modes")
    for i, r in enumerate(runs):
        path = at("runs", i)
        RUN(r, path)
        mode(r.get("mode", MISSING), at(path, "mode"))
        if not r.get("failed") and not r.get("disturbed"):
            # a run that counts is paired, spread and sorted by its p99
            FIGURE(r.get("p99_us", MISSING), at(path, "p99_us"))


def problem(run):
    """What keeps a decoded JSON value from being a saved run, or None.
    The order: what every command reads first (modes, loads, runs), then
    the rest."""
    try:
        if type(run) is not dict:
            raise Refused("not a run of irqtune-bench (a JSON object with settings, loads and runs)")
        settings = run.get("settings", MISSING)
        Fields(what="an object of the run's settings")(settings, "settings")
        Items(OneOf(MODE_NAMES, "mode names of " + " ".join(MODE_NAMES)), len(MODE_NAMES), least=1,
              distinct=True)(settings.get("modes", MISSING), "settings.modes")
        Items(LOAD, MAX_LOADS, distinct=True)(run.get("loads", MISSING), "loads")
        check_runs(run.get("runs", MISSING), settings["modes"])
        SETTINGS(settings, "settings")
        OTHERS(run, "")
        check_recommend(run.get("recommend"))
        Nullable(Items(check_settle, MAX_LIST))(run.get("auto_settles"), "auto_settles")
        Nullable(STEP)(run.get("step"), "step")
    except Refused as refused:
        return str(refused)
    return None
