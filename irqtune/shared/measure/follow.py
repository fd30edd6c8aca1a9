# SPDX-License-Identifier: GPL-2.0-or-later
"""gro_flush_timeout=auto and irq_suspend_timeout=auto: values that follow
the measured services (the [napi] option auto_services).

Until a measurement says otherwise the values are the series' (START).
On the napi plugin's periodic re-check (no wake-up of its own) an
Follower decides whether a window is due: the first as soon as the
services have load, then at most one per interval.  A service has load
when its processes used at least MIN_LOAD of a CPU since the previous
re-check, compared only over the same processes (pid and start time: a
restarted service starts a new mark).  A window
(irqtune.shared.measure.epolltrace) gives the series' rule
(irqtune.shared.measure.recommend); a value changes only when the rule's value
leaves the band [value / BAND, value x BAND] around the one set, so
measurements that vary a little never make it flap.  Too little traffic
in a window changes nothing and the next try comes after RETRY seconds,
twice as long after each such window up to RETRY_MAX (or the interval,
when longer).  A window during which a measured process ended sets
nothing.

Root measures what a pid file names and sets NIC-wide values from it, so
a pid is taken only from a file only root could have written (and
reached through directories only root can change:
irqtune.kernel.files.read_root_only_stat), and only when its process is
the one that wrote it: a running user process, not init nor a thread,
that started before the file was last written.  A service that ended and left
its pid file behind, its pid taken over by another process, is refused.

Each warning is said once per subject (a pid file, the services) and
cause, for as long as the instance is applied, whatever its text: a user
who can change what lies at a pid file's path cannot flood the log.
"""

import logging
import os
import re
import time
import traceback
from dataclasses import dataclass

from ...kernel import files
from ...kernel.errors import IrqtuneError, OptionError
from ...kernel.kfs import KFS
from ...kernel.names import SHOWN_PATH_MAX, option_name, shown
from ...kernel.napi_attrs import GRO_FLUSH_TIMEOUT, IRQ_SUSPEND_TIMEOUT, NAPI_ATTRS
from ...kernel.values import MAX_TIMEOUT_NS, format_duration_ns, parse_int
from .. import systemd
from ..options import Option, parse_options
from . import epolltrace, procstat, recommend

log = logging.getLogger(__name__)

# The series' values (latency-suspend's defaults), set until a window says otherwise.
START = {a.name: a.auto_start for a in NAPI_ATTRS if a.auto_start is not None}
AUTO_ATTRS = tuple(START)
WINDOW_SECONDS = 3.0
INTERVAL_DEFAULT, INTERVAL_MIN, INTERVAL_MAX = 600, 10, 86400
RETRY = 60
RETRY_MAX = 3600
MIN_LOAD = 0.05
BAND = 1.5

SERVICES_ACCEPTED = ("systemd service units (name or name.service) or absolute paths of "
                     "pid files, separated by commas")
_PID = re.compile(r"^[0-9]{1,10}$")
# A file's times come from the kernel's coarse clock (up to a jiffy behind
# the process's start), a start time is truncated to the clock tick: a
# process that wrote its pid file within this of starting is taken.
TIMESTAMP_SLACK = 0.02
# How much of a bug's message reaches the log (a UnicodeDecodeError's is 75 characters).
BUG_SHOWN = 160


class SaidOnce:
    """Warnings said once per (subject, cause), not per text; repeats go
    to the debug log."""

    def __init__(self):
        self._said = set()

    def warning(self, subject, cause, text):
        if (subject, cause) in self._said:
            log.debug("%s (said before)", text)
            return
        self._said.add((subject, cause))
        log.warning("%s", text)


def parse_services(text, option="auto_services"):
    """auto_services: service unit names (as busy_poll_optin's services,
    .service added) or absolute paths of pid files; each once, in order."""
    entries = []
    for word in str(text or "").split(","):
        word = word.strip()
        if not word:
            continue
        if word.startswith("/"):
            if re.search(r"\s", word) or os.path.normpath(word) != word:
                raise OptionError(option, word, SERVICES_ACCEPTED)
            entry = word
        else:
            try:
                (entry,) = systemd.parse_services(word, option)
            except OptionError:
                raise OptionError(option, word, SERVICES_ACCEPTED) from None
        if entry not in entries:
            entries.append(entry)
    return entries


# The napi plugin's options of the auto values (irqtune.features.napi.config).
OPTIONS = (
    Option("auto_services", lambda o, v: parse_services(v, o),
           "systemd services or absolute paths of pid files, separated by commas",
           "the services whose epoll loops the auto values follow"),
    Option("auto_interval", lambda o, v: parse_int(o, v, INTERVAL_MIN, INTERVAL_MAX),
           "seconds, %d-%d (default %d)" % (INTERVAL_MIN, INTERVAL_MAX, INTERVAL_DEFAULT),
           "the shortest time between two measurements for the auto values"),
)


def from_options(config, options, recheck_interval):
    """(Follower or None, [OptionError]) of a NapiConfig whose values may
    be auto (config.measured_attrs), from the napi options auto_services and
    auto_interval.  None when nothing is auto, or nothing can measure: the
    series' values then stay."""
    if not config.measured_attrs:
        return None, []
    wanting = " and ".join("%s=auto" % option_name(a) for a in sorted(config.measured_attrs))
    try:
        entries = parse_services(options.get("auto_services"))
    except OptionError as err:
        return None, [err]
    if not entries:
        return None, [OptionError("auto_services", options.get("auto_services") or "",
                                  "%s, which %s measures; until then the series' values "
                                  "stay" % (SERVICES_ACCEPTED, wanting))]
    if not recheck_interval:
        return None, [OptionError("recheck_interval", recheck_interval,
                                  "1 to 86400 with %s: the services are measured on the "
                                  "re-check; until then the series' values stay" % wanting)]
    values, errors = parse_options(OPTIONS[1:], options)        # auto_interval
    return Follower(config.measured_attrs, config.fixed(), Services(entries),
                      values.get("auto_interval", INTERVAL_DEFAULT)), errors


class Services:
    """The processes of the measured services, found again on every
    re-check that is due: a unit's by irqtune.shared.systemd.UnitProcesses
    (its control group kept, systemd asked at most every RETRY seconds),
    a pid file's pid checked on every read (Services._pid_in_file)."""

    def __init__(self, entries, kfs=KFS, bus=None, clock=time.monotonic, root="/"):
        self.entries = list(entries)
        self.kfs = kfs
        self.units = systemd.UnitProcesses(kfs, bus, root, clock, RETRY)
        self.said = SaidOnce()      # a pid file's refusals

    def pids(self):
        """Sorted pids of every entry that runs now; IrqtuneError when none."""
        pids, why = set(), []
        for entry in self.entries:
            try:
                pids.update([self._pid_in_file(entry)] if entry.startswith("/")
                            else self.units.pids(entry))
            except IrqtuneError as err:
                why.append(str(err))
        if not pids:
            raise IrqtuneError("auto_services: no process runs: %s" % "; ".join(why))
        return sorted(pids)

    def _pid_in_file(self, path):
        """The pid in a pid file, when the file could only have been
        written by root and its process is the one that wrote it.

        Another user who could write the file could point the measurement -
        root's perf events and tracepoint filters, and the NIC-wide values
        set from it - at any process.  A file root wrote can outlive its
        service (SIGKILL, a crash), and its pid can then be taken by any
        user's process (fork until the pid comes round): that process
        started after the file was last written, the service's before.
        (A wall clock stepped forward since the file was written, as when
        NTP first syncs after the service started, refuses it too, until
        the service writes it again.)

        The pid is read as this pid namespace numbers processes.  Pid 1 is
        init, never a service: it is what a service that is the first
        process of a container writes inside its pid namespace, and is
        refused.  So is a thread's id (gettid(); /proc answers for a
        thread as for a process): its Tgid in /proc/PID/status differs.
        Another pid written inside a pid namespace cannot be told from a
        host pid by its number: a service in a container is named by its
        systemd unit.  A process in a pid namespace below ours (NSpid with
        more than one entry) is not refused: a pid file the host writes
        for a container's process (podman run --pidfile) names it rightly
        by its host pid, while a pid misread from inside a namespace names
        some host process, which that test would not catch."""
        try:
            text, st = files.read_root_only_stat(path)
        except files.NotRootOnly as err:
            self._refuse(path, "not root-only", "%s (accepted: %s)" % (err, files.ROOT_ONLY))
        except OSError:
            text, st = "", None
        words = text.split()
        pid = int(words[0]) if words and _PID.match(words[0]) else None
        if pid == 1:
            self._refuse(path, "init", "pid 1 is init, not a service (a pid file written inside "
                         "a pid namespace holds that namespace's pid)")
        process = procstat.read(pid, self.kfs) if pid else None
        tgid = _tgid(pid, self.kfs) if process else None
        if tgid is None:
            raise IrqtuneError("%s: no running process in the pid file" % path)
        if not process.user_running:
            raise IrqtuneError("%s: pid %d is not a running user process" % (path, pid))
        if tgid != pid:
            self._refuse(path, "thread", "pid %d is a thread of process %d, not a process"
                         % (pid, tgid))
        if process.started_at() > st.st_mtime_ns / 1e9 + TIMESTAMP_SLACK:
            self.said.warning(path, "pid reused", "auto_services: pid file %s refused: pid %d "
                              "started after the file was last written: not the process that "
                              "wrote it (its pid was reused after it ended)"
                              % (shown(path, SHOWN_PATH_MAX), pid))
            raise IrqtuneError("%s: pid %d started after the file was last written"
                               % (path, pid))
        return pid

    def _refuse(self, path, cause, why):
        """IrqtuneError; why said once per path and cause."""
        self.said.warning(path, cause, "auto_services: pid file %s refused: %s"
                          % (shown(path, SHOWN_PATH_MAX), why))
        raise IrqtuneError("%s: pid file refused" % path) from None

    def usage(self, pids):
        """(CPU seconds (user and system) the pids' processes used so far,
        {pid: start time}): which processes the time is of."""
        ticks, started = 0, {}
        for pid in pids:
            process = procstat.read(pid, self.kfs)
            if process is not None:
                ticks += process.cpu_ticks
                started[pid] = process.start_ticks
        return ticks / os.sysconf("SC_CLK_TCK"), started


def _tgid(pid, kfs):
    """The process (thread group) id of task pid, from /proc/PID/status;
    None when it is gone."""
    found = re.search(r"^Tgid:\s*([0-9]+)$", kfs.read_optional(kfs.proc_path(pid, "status"))
                      or "", re.M)
    return int(found.group(1)) if found else None


@dataclass
class Change:
    """What one measurement changed: {attr: (old ns, new ns)} and the
    figures it is based on."""
    values: dict
    why: str

    def targets(self):
        """{attr: new ns}, for the tuner to set."""
        return {a: new for a, (_, new) in self.values.items()}

    def line(self):
        """The change as one log line."""
        return "auto: %s (%s)" % (", ".join(
            "%s %s -> %s" % (option_name(a), format_duration_ns(old, exact=False),
                             format_duration_ns(new, exact=False))
            for a, (old, new) in sorted(self.values.items())), self.why)


class Follower:
    """The auto values of one [napi] instance, following its measured
    services (the napi tuner's follower).

    measured_attrs: the attributes set to auto; fixed: the instance's
    other values (a fixed gro_flush_timeout bounds an auto
    irq_suspend_timeout and the other way round); record(pids, seconds) -> epolltrace.Recorded."""

    def __init__(self, measured_attrs, fixed, services, interval=INTERVAL_DEFAULT, clock=time.monotonic,
                 record=None):
        self.measured_attrs = [a for a in AUTO_ATTRS if a in measured_attrs]
        self.fixed = dict(fixed)
        self.values = {a: START[a] for a in self.measured_attrs}
        self.services = services
        self.interval = interval
        self.clock = clock
        self.record = record
        self.next_at = 0.0              # the first window as soon as there is load
        self._load_mark = None          # (time, {pid: start}, cpu seconds) at the last re-check
        self._retry = RETRY             # after a window with too few busy periods
        self.said = SaidOnce()
        self._bugs_said = set()         # (step, type, file, line) said since step got through
        self._step = None               # the step running, for a bug's cause

    def describe(self):
        return "%s (auto)" % ", ".join("%s=%s" % (option_name(a),
                                                  format_duration_ns(v, exact=False))
                                       for a, v in self.values.items())

    def tick(self):
        """On a re-check: a Change when a window ran and moved a value out
        of its band, else None.  A service that is down, or a window that
        cannot be taken, is one log line (said once), never an exception.

        Nor is a bug (any other exception): it is one error line per cause
        - the step (finding the services, or the window), its type and the
        line that raised it, not its text, which may name another process
        each time - until that step gets through, and the next try comes
        after RETRY seconds, so a failing window does not run on every
        re-check."""
        now = self.clock()
        if now < self.next_at:
            return None
        self._step = "services"
        try:
            return self._tick(now)
        except Exception as err:    # noqa: BLE001 - a bug: said once, see above
            self._bug(now, err)
            return None

    def _tick(self, now):
        try:
            pids = self.services.pids()
        except IrqtuneError as err:
            self._warn("no process", str(err))
            self._load_mark = None
            return None
        started = self._has_load(now, pids)
        self._through("services", "window")
        if started is None:
            return None
        change = self._measure(now, pids, started)
        self._through("window", None)
        return change

    def _through(self, step, following):
        """step got through: its bugs are said again should they return."""
        self._bugs_said = {c for c in self._bugs_said if c[0] != step}
        self._step = following

    def _bug(self, now, err):
        self.next_at = now + RETRY
        self._load_mark = None
        where = traceback.extract_tb(err.__traceback__)[-1]
        cause = (self._step, type(err).__name__, where.filename, where.lineno)
        text = ("auto_services: measuring failed: %s (a bug in irqtune, please report it; said "
                "once until it changes), in %s; the auto values stay %s"
                % (shown("%s: %s" % (type(err).__name__, err), BUG_SHOWN),
                   os.path.basename(where.filename), self.describe()))
        if cause in self._bugs_said:
            log.debug("%s (said before)", text)
            return
        self._bugs_said.add(cause)
        log.error("%s", text)

    def _warn(self, cause, text):
        self.said.warning("auto_services", cause,
                          "%s; the auto values stay %s" % (text, self.describe()))

    def _has_load(self, now, pids):
        """{pid: start} of the pids when they used MIN_LOAD of a CPU since
        the last re-check - the same processes, not a restarted service's
        new ones - else None."""
        cpu, started = self.services.usage(pids)
        mark, self._load_mark = self._load_mark, (now, started, cpu)
        if mark is None or mark[1] != started or now <= mark[0]:
            return None
        return started if (cpu - mark[2]) / (now - mark[0]) >= MIN_LOAD else None

    def _measure(self, now, pids, started):
        if self.record is None:
            self.record = epolltrace.record
        try:
            recorded = self.record(pids, WINDOW_SECONDS)
        except IrqtuneError as err:
            self._warn("cannot measure", "auto_services: cannot measure: %s" % err)
            self.next_at = now + max(RETRY, self.interval)
            return None
        self._load_mark = None
        # a pid whose process is not the one whose load was seen (ended
        # and reused between the check and the window) counts as ended
        swapped = [p for p, t in recorded.started.items() if started.get(p, t) != t]
        result = recommend.measured(recorded)
        if recorded.exited or swapped:
            log.debug("auto: pid %s ended during the window; nothing set, next try in %d s",
                      ", ".join(str(p) for p in sorted(set(recorded.exited + swapped))), RETRY)
            self.next_at = now + RETRY
            return None
        figures, found = result.figures, result.found
        if found is None:
            log.debug("auto: %d busy periods in the window, too few; next try in %d s",
                      figures.busy_periods, self._retry)
            self.next_at = now + self._retry
            self._retry = min(2 * self._retry, max(RETRY_MAX, self.interval))
            return None
        self._retry = RETRY
        self.next_at = now + self.interval
        wanted = self._bounded({a.name: v for a, v in found.values().items() if a.name in START})
        moved = {a: (self.values[a], wanted[a]) for a in self.measured_attrs
                 if not self.values[a] / BAND <= wanted[a] <= self.values[a] * BAND}
        why = ("%d busy periods in %.1f s: per event p99 %s, per batch p99 %s, up to %d events"
               % (figures.busy_periods, recorded.seconds,
                  format_duration_ns(figures.event_ns["p99"], exact=False),
                  format_duration_ns(figures.batch_ns["p99"], exact=False),
                  figures.batch_events["max"]))
        if not moved:
            log.debug("auto: %s within the band of %s; unchanged", why, self.describe())
            return None
        for attr, (_, new) in moved.items():
            self.values[attr] = new
        return Change(moved, why)

    def _bounded(self, wanted):
        """The rule's values, kept consistent with a fixed partner (the
        suspension timeout at least twice the deferral timeout) and within
        what a profile may set (irqtune.kernel.values.MAX_TIMEOUT_NS)."""
        gro, suspend = GRO_FLUSH_TIMEOUT.name, IRQ_SUSPEND_TIMEOUT.name
        if self.fixed.get(gro) is not None and suspend in self.measured_attrs:
            wanted[suspend] = max(wanted[suspend],
                                  recommend.SUSPEND_MIN_FACTOR * self.fixed[gro])
        if self.fixed.get(suspend) is not None and gro in self.measured_attrs:
            wanted[gro] = min(wanted[gro], self.fixed[suspend] // recommend.SUSPEND_MIN_FACTOR)
        return {a: min(v, MAX_TIMEOUT_NS) for a, v in wanted.items()}
