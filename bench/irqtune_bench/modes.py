# SPDX-License-Identifier: GPL-2.0-or-later
"""The series' modes (IRQ suspension v9 cover letter), who sets what, and
the check that a server holds a mode before a run counts.

  mode       NAPI defer / gro / suspend   memcached's epoll (EPIOCSPARAMS)
  base       0 / 0 / 0                    untouched
  deferX     100 / X us / 0               untouched            (X 10 20 50 200)
  napibusy   100 / 200 us / 0             usecs 64, budget 64, prefer 1
  fullbusy   100 / 5 ms / 0               usecs 1000, budget 64, prefer 1,
                                          + epoll_wait in 1 ms slices (bench)
  suspend0   0 / 0 / 20 ms                usecs 0, budget 64, prefer 1
  suspendX   100 / X us / 20 ms           usecs 0, budget 64, prefer 1 (X 10 20 50)

the series' fixed-value control for a longer gro_flush_timeout, and a
busy-polling control that keeps polling (neither among the eleven of the
default --modes):

  suspend200 100 / 200 us / 20 ms         usecs 0, budget 64, prefer 1
  keepbusy   100 / 200 us / 0             usecs 100000, budget 64, prefer 1,
                                          + epoll_wait in 1 ms slices (bench)

fullbusy lapses: an epoll busy loop that ends without an event (its 1 ms
window passed, or another task on the CPU needed it) drops the epoll
context's NAPI id, and with prefer_busy_poll its NAPI's interrupts stay
deferred - the next packets wait for the 5 ms gro_flush_timeout before
anything polls again.  keepbusy's busy window (100 ms) is longer than any
gap between requests at the judged loads, and its 200 us flush timer
bounds what a lapse still costs (another task preempting the poller).

and, asked for by name (--modes ...,recommend,auto), modes whose values
are measured:

  recommend  irqtune doctor's values      usecs 0, budget 64, prefer 1
             for the server's service     (measured under load in suspend20
                                          before the rounds; runner.recommend)
  auto       100 / auto / auto            usecs 0, budget 64, prefer 1
             (latency-suspend with gro_flush_timeout=auto and
             irq_suspend_timeout=auto: TuneD's irqtune measures the
             service itself: each run is preceded by a warm-up at its
             own load long enough for one measurement, auto_interval
             AUTO_INTERVAL; each run records the values the NAPIs held
             before and after it)

The verdicts (report.verdict_records) compare suspend20, suspend200,
recommend and auto with keepbusy, and print each against fullbusy beside
(the series' configuration): VERDICT_MODES is the set a judged run takes.
"""

from .guard import shown

MS, US = 1000000, 1000
PROFILE = "latency-suspend"


def mode(defer, gro_us, suspend_ms, epoll_usecs=None, slice_ms=0):
    return mode_ns(defer, gro_us * US, suspend_ms * MS, epoll_usecs, slice_ms)


def mode_ns(defer, gro_ns, suspend_ns, epoll_usecs=None, slice_ms=0):
    return {"defer_hard_irqs": defer, "gro_flush_timeout_ns": gro_ns,
            "irq_suspend_timeout_ns": suspend_ns,
            "epoll": None if epoll_usecs is None else
            {"busy_poll_usecs": epoll_usecs, "busy_poll_budget": 64, "prefer_busy_poll": 1},
            "epoll_slice_ms": slice_ms}


SERIES_MODES = ("base", "defer10", "defer20", "defer50", "defer200", "napibusy", "fullbusy", "suspend0",
                "suspend10", "suspend20", "suspend50")
MODES = {
    "base": mode(0, 0, 0),
    "defer10": mode(100, 10, 0),
    "defer20": mode(100, 20, 0),
    "defer50": mode(100, 50, 0),
    "defer200": mode(100, 200, 0),
    "napibusy": mode(100, 200, 0, epoll_usecs=64),
    "fullbusy": mode(100, 5000, 0, epoll_usecs=1000, slice_ms=1),
    "suspend0": mode(0, 0, 20, epoll_usecs=0),
    "suspend10": mode(100, 10, 20, epoll_usecs=0),
    "suspend20": mode(100, 20, 20, epoll_usecs=0),
    "suspend50": mode(100, 50, 20, epoll_usecs=0),
    "suspend200": mode(100, 200, 20, epoll_usecs=0),
    "keepbusy": mode(100, 200, 0, epoll_usecs=100000, slice_ms=1),
}

RECOMMEND, AUTO = "recommend", "auto"
MEASURED = (RECOMMEND, AUTO)
# the value latency-suspend's variables take for "measure it" (and check()
# accepts any non-zero value the daemon set for it)
AUTO_VALUE = "auto"
MODE_AUTO = {"defer_hard_irqs": 100, "gro_flush_timeout_ns": AUTO_VALUE, "irq_suspend_timeout_ns": AUTO_VALUE,
             "epoll": {"busy_poll_usecs": 0, "busy_poll_budget": 64, "prefer_busy_poll": 1},
             "epoll_slice_ms": 0}
VERDICT_MODES = ("suspend20", "keepbusy", "fullbusy", "suspend200", RECOMMEND, AUTO)
# What the claim is judged against: the busy polling that keeps polling when
# the run has it, else the series' configuration (runs before keepbusy).
CONTROLS = ("keepbusy", "fullbusy")
# the bench's auto_interval (latency-suspend's auto_interval variable):
# the shortest the plugin takes, so that each auto run's warm-up at its
# own load is measured (runner.AUTO_WARMUP_SECONDS)
AUTO_INTERVAL = 10


def recommended(rec):
    """The recommend mode from the doctor's --json "recommend" object."""
    return mode_ns(rec["defer_hard_irqs"], rec["gro_flush_timeout_ns"], rec["irq_suspend_timeout_ns"],
                   epoll_usecs=0)


WHO_SETS = {
    "NAPI defer-hard-irqs / gro-flush-timeout / irq-suspend-timeout":
        "project: latency-suspend variables defer_hard_irqs, gro_flush_timeout, irq_suspend_timeout",
    "epoll busy_poll_usecs / busy_poll_budget / prefer_busy_poll":
        "project: latency-suspend variables optin_services=memcached, optin_busy_poll_usecs "
        "(budget 64 and prefer 1 are busy_poll_optin's defaults), optin_restart=true",
    "fullbusy's epoll_wait that never sleeps (1 ms slices)":
        "bench: LD_PRELOAD shim epoll_slice.so with IRQTUNE_BENCH_EPOLL_SLICE_MS=1 in a "
        "memcached drop-in (the project has no knob for an application's epoll timeout)",
    "memcached pinned to one CPU": "bench: CPUAffinity= in the same drop-in (the seed pins memcached)",
}


def parse_modes(text):
    """[mode names] of a --modes value; ValueError naming the unknown ones."""
    modes = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES and m not in MEASURED]
    if unknown or not modes or len(set(modes)) != len(modes):
        raise ValueError("--modes %s: %s; accepted: comma-separated names, each once, of %s %s"
                         % (shown(text), "unknown mode(s) '%s'" % shown(",".join(unknown)) if unknown
                            else "a mode named twice" if modes else "no mode", " ".join(MODES),
                            " ".join(MEASURED)))
    return modes


def duration(ns):
    """ns as the variables file takes it, in the largest whole unit
    ("auto" stays auto)."""
    if ns == AUTO_VALUE:
        return ns
    for unit, size in (("ms", MS), ("us", US)):
        if ns and ns % size == 0:
            return "%d%s" % (ns // size, unit)
    return "%dns" % ns


def variables_of(m, nic, service="memcached", pid_file=None):
    """latency-suspend's variables file for mode m ({name: value}).  With
    pid_file, memcached is the testbed's own process, opted in as it
    starts: no service to opt in, auto follows the pid file."""
    out = {"suspend_nics": nic, "defer_hard_irqs": str(m["defer_hard_irqs"]),
           "gro_flush_timeout": duration(m["gro_flush_timeout_ns"]),
           "irq_suspend_timeout": duration(m["irq_suspend_timeout_ns"]),
           "optin_services": service if m["epoll"] and not pid_file else "",
           "optin_busy_poll_usecs": str(m["epoll"]["busy_poll_usecs"] if m["epoll"] else 0),
           "optin_restart": "true"}
    if AUTO_VALUE in (m["gro_flush_timeout_ns"], m["irq_suspend_timeout_ns"]):
        out["auto_interval"] = str(AUTO_INTERVAL)
        if pid_file:
            out["auto_services"] = pid_file
    return out


def check(m, st, cpu):
    """Why the server does not hold mode m now ([] when it does); st is
    server.state()'s answer, cpu the CPU memcached must be pinned to."""
    problems = []
    rx_napis = set(st["rx_queues"].values())
    want = {"defer-hard-irqs": m["defer_hard_irqs"], "gro-flush-timeout": m["gro_flush_timeout_ns"],
            "irq-suspend-timeout": m["irq_suspend_timeout_ns"]}
    if not rx_napis:
        problems.append("queue-get lists no rx NAPI")
    for napi in st["napis"]:
        if napi["id"] not in rx_napis:
            continue
        for k, v in want.items():
            if v == AUTO_VALUE:
                if not napi.get(k):
                    problems.append("NAPI %d %s=%s, mode wants a measured value" % (napi["id"], k, napi.get(k)))
            elif napi.get(k, 0) != v:
                problems.append("NAPI %d %s=%s, mode wants %s" % (napi["id"], k, napi.get(k), v))
    ep = m["epoll"] or {"busy_poll_usecs": 0, "busy_poll_budget": 0, "prefer_busy_poll": 0}
    if not st["epoll"]:
        problems.append("memcached holds no epoll instance")
    for e in st["epoll"]:
        got = {k: e[k] for k in ep}
        if got != ep:
            problems.append("memcached epoll fd %d %s, mode wants %s" % (e["fd"], got, ep))
    if st["slice_ms"] != m["epoll_slice_ms"]:
        problems.append("epoll slice %s ms, mode wants %s" % (st["slice_ms"], m["epoll_slice_ms"]))
    if st["affinity"] != [cpu]:
        problems.append("memcached may run on CPUs %s, bench wants [%d]" % (st["affinity"], cpu))
    return problems
