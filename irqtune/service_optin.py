# SPDX-License-Identifier: GPL-2.0-or-later
"""Opt systemd services in to epoll busy polling (and IRQ suspension).

IRQ suspension only engages for epoll contexts with ``prefer_busy_poll`` set
(``EPIOCSPARAMS``).  Stock servers never set it; ``libirqtune-busypoll.so``
does it for them when preloaded.  This module writes, for each named
service, a systemd drop-in

    /etc/systemd/system/<unit>.d/50-irqtune-busypoll.conf

that sets ``LD_PRELOAD`` and the library's ``IRQTUNE_*`` variables, runs
``systemctl daemon-reload``, and removes exactly what it added on unapply.

Rules it keeps:

- Nothing half-done: without a running systemd it raises
  :class:`UnsupportedError` before touching anything; when writing a drop-in
  or the reload fails, the drop-ins written so far are removed again.
- It never removes or overwrites a file it did not write.  Its files carry a
  marker line; a file at its path without the marker is left alone (error),
  a file with the marker but edited since it was written is left in place
  on unapply (warning).  A ``<unit>.d`` directory is removed only when this
  module created it and it is empty.
- Services are not restarted unless ``restart=True``: the preload reaches a
  process only when it starts, so the running services that need a restart
  are logged (and returned).  With ``restart=True`` it runs
  ``systemctl try-restart`` for those, on apply and on unapply.

Services that already set ``LD_PRELOAD``: the drop-in's ``Environment=``
would replace the unit's value, dropping the service's own preload.  When
the unit's configured environment (``systemctl show -p Environment``) holds
``LD_PRELOAD``, the drop-in sets it to that value with the library appended
and logs that it did so; the value is a snapshot taken at apply time.
``EnvironmentFile=`` settings override ``Environment=`` in systemd: a service
that sets ``LD_PRELOAD`` in an environment file keeps its own value and is
not opted in (verify reports the drop-in, not the process; the per-process
check is :meth:`ServiceOptIn.preload_status`).

Not reached through the preload: statically linked programs and runtimes
that issue epoll system calls themselves (Go).

``root`` relocates every path (tests use a fixture directory); ``systemctl``
is an injectable callable ``argv -> (returncode, stdout)``.
"""

import logging
import os
import re
import shlex
import subprocess
import tempfile

from .errors import IrqtuneError, OptionError, UnsupportedError

log = logging.getLogger("irqtune.service_optin")

DROPIN_NAME = "50-irqtune-busypoll.conf"
UNIT_DIR = "etc/systemd/system"
SYSTEMD_RUNNING_MARKER = "run/systemd/system"
LIBRARY_NAME = "libirqtune-busypoll.so"
# Where packages install the library: RPM arch libdir, the Makefile's
# default, Debian multiarch.  The first that exists wins.
LIBRARY_CANDIDATES = (
    "/usr/lib64/irqtune/" + LIBRARY_NAME,
    "/usr/lib/irqtune/" + LIBRARY_NAME,
    "/usr/lib/x86_64-linux-gnu/irqtune/" + LIBRARY_NAME,
    "/usr/lib/aarch64-linux-gnu/irqtune/" + LIBRARY_NAME,
)
MARKER = "# irqtune busy_poll_optin drop-in"

DEFAULT_USECS = 0
DEFAULT_BUDGET = 64
DEFAULT_PREFER = 1
MAX_USECS = 2147483647
MAX_BUDGET = 65535
BUDGET_WITHOUT_CAP = 64

_UNIT_RE = re.compile(r"^[A-Za-z0-9:_.\\-]+(@[A-Za-z0-9:_.\\-]*)?\.service$")
_OTHER_UNIT_TYPES = ("socket", "target", "mount", "automount", "swap", "timer",
                     "path", "slice", "scope", "device")
# Drop-in paths this process has written (one owner per service).
_CLAIMED = set()


class OptInValues:
    """Validated EPIOCSPARAMS values for the preload."""

    __slots__ = ("usecs", "budget", "prefer")

    def __init__(self, usecs=DEFAULT_USECS, budget=DEFAULT_BUDGET, prefer=DEFAULT_PREFER):
        self.usecs = _parse_uint("busy_poll_usecs", usecs, MAX_USECS)
        self.budget = _parse_uint("busy_poll_budget", budget, MAX_BUDGET)
        self.prefer = _parse_uint("prefer_busy_poll", prefer, 1, accepted="0 or 1")

    def environment(self):
        return [("IRQTUNE_BUSY_POLL_USECS", str(self.usecs)),
                ("IRQTUNE_BUSY_POLL_BUDGET", str(self.budget)),
                ("IRQTUNE_PREFER_BUSY_POLL", str(self.prefer))]

    def __eq__(self, other):
        return isinstance(other, OptInValues) and \
            (self.usecs, self.budget, self.prefer) == (other.usecs, other.budget, other.prefer)

    def __repr__(self):
        return "OptInValues(usecs=%d, budget=%d, prefer=%d)" % (
            self.usecs, self.budget, self.prefer)


def _parse_uint(option, value, maximum, accepted=None):
    accepted = accepted or "0..%d" % maximum
    if isinstance(value, bool):
        raise OptionError(option, value, accepted)
    if isinstance(value, int):
        number = value
    else:
        text = str(value).strip()
        if not text.isdigit() or not text.isascii():
            raise OptionError(option, value, accepted)
        number = int(text)
    if not 0 <= number <= maximum:
        raise OptionError(option, value, accepted)
    return number


def parse_services(text, option="services"):
    """'memcached, nginx redis-server.service' -> unit names, in order.

    A name without a suffix gets ``.service``; other unit types are refused
    (only services have an environment); duplicates are dropped.
    """
    if text is None:
        return ()
    units = []
    for word in re.split(r"[\s,]+", str(text).strip()):
        if not word:
            continue
        if word.rsplit(".", 1)[-1] in _OTHER_UNIT_TYPES:
            raise OptionError(option, word, "service unit names (name or name.service)")
        unit = word if word.endswith(".service") else word + ".service"
        if not _UNIT_RE.match(unit) or unit.startswith(("-", ".")) or ".." in unit:
            raise OptionError(option, word, "service unit names (name or name.service)")
        if unit not in units:
            units.append(unit)
    return tuple(units)


def parse_bool(value, option="restart"):
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on", "y"):
        return True
    if text in ("0", "false", "no", "off", "n", ""):
        return False
    raise OptionError(option, value, "true or false")


def _reroot(root, path):
    return os.path.join(root, path.lstrip("/"))


def find_library(root="/", candidates=LIBRARY_CANDIDATES):
    """The installed preload library (path as the service will see it)."""
    for path in candidates:
        if os.path.isfile(_reroot(root, path)):
            return path
    raise UnsupportedError("%s is not installed (looked in %s); install the "
                           "irqtune preload package" % (LIBRARY_NAME, ", ".join(candidates)))


def check_library_path(path, option="library"):
    """A path ld.so can preload from a systemd Environment= line."""
    if not path or not os.path.isabs(path) or re.search(r"[\s:%\"'\\$]", path):
        raise OptionError(option, path, "an absolute path without spaces, "
                          "colons, quotes, backslashes, '$' or '%'")
    return path


def systemd_running(root="/"):
    """systemd's own test (sd_booted): /run/systemd/system is a directory."""
    return os.path.isdir(_reroot(root, SYSTEMD_RUNNING_MARKER))


def default_systemctl(argv):
    """Run systemctl with an argument list; (returncode, stdout)."""
    try:
        proc = subprocess.run(["systemctl"] + list(argv), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as err:
        return 127, str(err)
    out = proc.stdout if proc.returncode == 0 else (proc.stderr.strip() or proc.stdout)
    return proc.returncode, out


def _systemd_quote(text):
    """One Environment= word: double-quoted, C escapes, '%' doubled."""
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    return '"%s"' % text


def dropin_content(library, values, ld_preload_before=None):
    """The drop-in text for one service."""
    preload = library if not ld_preload_before else "%s:%s" % (ld_preload_before, library)
    lines = [
        MARKER,
        "# Written by the irqtune TuneD plugin busy_poll_optin while its profile",
        "# is active and removed when the profile is unapplied.  Edits make",
        "# irqtune leave the file in place.  Takes effect when the service starts.",
        "[Service]",
        "Environment=%s" % _systemd_quote("LD_PRELOAD=" + preload),
    ]
    lines += ["Environment=%s=%s" % pair for pair in values.environment()]
    return "\n".join(lines) + "\n"


def _split_preload(value):
    """ld.so separates LD_PRELOAD entries with spaces and colons."""
    return [item for item in re.split(r"[ :]+", value) if item]


class DropIn:
    """One drop-in as written: what to remove and how to recognise it."""

    __slots__ = ("unit", "path", "content", "created_dir", "previous")

    def __init__(self, unit, path, content, created_dir, previous=None):
        self.unit = unit
        self.path = path
        self.content = content
        self.created_dir = created_dir
        # irqtune's own earlier file this one replaced (restored on rollback)
        self.previous = previous


class ServiceOptIn:
    """Opt a set of services in: apply, verify, unapply."""

    def __init__(self, services, values=None, library=None, root="/",
                 systemctl=None, restart=False, proc_root="/proc"):
        self.services = parse_services(services) if isinstance(services, str) \
            else parse_services(" ".join(services))
        self.values = values if values is not None else OptInValues()
        self.library = check_library_path(library) if library else None
        self.root = root
        self.proc_root = proc_root
        self.systemctl = systemctl or default_systemctl
        self.restart = restart
        self.written = []

    # paths

    def dropin_dir(self, unit):
        return os.path.join(_reroot(self.root, UNIT_DIR), unit + ".d")

    def dropin_path(self, unit):
        return os.path.join(self.dropin_dir(unit), DROPIN_NAME)

    # systemctl helpers

    def _show(self, unit, prop):
        rc, out = self.systemctl(["show", "--property=" + prop, "--value", unit])
        return out.strip() if rc == 0 else None

    def _existing_ld_preload(self, unit, library):
        """LD_PRELOAD from the unit's own Environment=, without our library."""
        env = self._show(unit, "Environment")
        if not env:
            return None
        try:
            words = shlex.split(env)
        except ValueError:
            words = env.split()
        for word in reversed(words):
            if word.startswith("LD_PRELOAD="):
                items = [i for i in _split_preload(word[len("LD_PRELOAD="):])
                         if i != library]
                return ":".join(items) or None
        return None

    def running_services(self):
        """Named services that are active now."""
        active = []
        for unit in self.services:
            state = self._show(unit, "ActiveState")
            if state in ("active", "reloading", "activating"):
                active.append(unit)
        return active

    def preload_status(self, unit):
        """'loaded', 'not-loaded', 'inactive' or 'unknown' for the main process."""
        pid = self._show(unit, "MainPID")
        if pid is None or not pid.isdigit():
            return "unknown"
        if pid == "0":
            return "inactive"
        library = self.library or self._resolved_library(quiet=True)
        try:
            with open(os.path.join(self.proc_root, pid, "maps")) as maps:
                for line in maps:
                    if line.rstrip().endswith(library or LIBRARY_NAME):
                        return "loaded"
        except OSError:
            return "unknown"
        return "not-loaded"

    def _resolved_library(self, quiet=False):
        if self.library:
            return self.library
        try:
            return find_library(self.root)
        except UnsupportedError:
            if quiet:
                return None
            raise

    # apply / unapply

    def _remove_written(self, entries):
        """Remove drop-ins we wrote, if unchanged; returns the units removed."""
        removed = []
        for entry in reversed(entries):
            try:
                with open(entry.path) as f:
                    current = f.read()
            except FileNotFoundError:
                log.info("%s: drop-in %s already gone", entry.unit, entry.path)
                current = None
            except OSError as err:
                log.error("%s: cannot read %s: %s; left in place", entry.unit, entry.path, err)
                continue
            if current is not None and current != entry.content:
                log.warning("%s: %s was changed after irqtune wrote it; left in place",
                            entry.unit, entry.path)
                _CLAIMED.discard(entry.path)
                continue
            if current is not None:
                try:
                    os.unlink(entry.path)
                except OSError as err:
                    log.error("%s: cannot remove %s: %s", entry.unit, entry.path, err)
                    continue
                removed.append(entry.unit)
            _CLAIMED.discard(entry.path)
            if entry.created_dir:
                try:
                    os.rmdir(os.path.dirname(entry.path))
                except OSError:
                    pass  # not empty: someone else's drop-ins live there
        return removed

    def _write(self, unit, content, earlier=None):
        """Write one drop-in.  ``earlier`` is the DropIn a previous run
        recorded for this unit (its created_dir carries over)."""
        path = self.dropin_path(unit)
        directory = os.path.dirname(path)
        if path in _CLAIMED:
            raise IrqtuneError("%s: already opted in by another busy_poll_optin "
                               "instance; name each service once" % unit)
        previous = None
        if os.path.lexists(path):
            try:
                with open(path) as f:
                    previous = f.read()
            except OSError as err:
                raise IrqtuneError("%s: cannot read existing %s: %s" % (unit, path, err))
            if previous.split("\n", 1)[0] != MARKER:
                raise IrqtuneError("%s: %s exists and was not written by irqtune; "
                                   "not touching it" % (unit, path))
            if previous != content:
                log.info("%s: replacing irqtune's earlier drop-in %s", unit, path)
        created_dir = bool(earlier and earlier.created_dir)
        if not os.path.isdir(directory):
            os.makedirs(directory, mode=0o755)
            created_dir = True
        entry = DropIn(unit, path, content, created_dir, previous)
        fd, tmp = tempfile.mkstemp(prefix="." + DROPIN_NAME + ".", dir=directory)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(content)
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            if created_dir:
                try:
                    os.rmdir(directory)
                except OSError:
                    pass
            raise
        _CLAIMED.add(path)
        return entry

    def _roll_back(self, entries):
        """Undo this apply's writes: restore replaced files, remove new ones."""
        fresh = []
        for entry in entries:
            if entry.previous is None:
                fresh.append(entry)
                continue
            try:
                with open(entry.path, "w") as f:
                    f.write(entry.previous)
            except OSError as err:
                log.error("%s: cannot restore %s: %s", entry.unit, entry.path, err)
            _CLAIMED.discard(entry.path)
        self._remove_written(fresh)

    def _daemon_reload(self):
        rc, out = self.systemctl(["daemon-reload"])
        if rc != 0:
            raise IrqtuneError("systemctl daemon-reload failed (%d): %s" % (rc, out.strip()))

    def _daemon_reload_logged(self):
        rc, out = self.systemctl(["daemon-reload"])
        if rc != 0:
            log.error("systemctl daemon-reload failed (%d): %s", rc, out.strip())

    def _try_restart(self, units):
        if not units:
            return
        rc, out = self.systemctl(["try-restart"] + list(units))
        if rc != 0:
            log.error("systemctl try-restart %s failed (%d): %s",
                      " ".join(units), rc, out.strip())
        else:
            log.info("restarted %s", " ".join(units))

    def _entries(self, state):
        entries = []
        for item in state or ():
            try:
                entries.append(DropIn(str(item["unit"]), str(item["path"]),
                                      str(item["content"]), bool(item["created_dir"])))
            except (KeyError, TypeError) as err:
                log.error("ignoring unreadable saved drop-in record %r: %s", item, err)
        return entries

    def apply(self, previous_state=None):
        """Write the drop-ins and reload systemd.  Returns the services that
        run with the old environment until restarted (restarted already when
        ``restart`` is set).

        ``previous_state`` is what an earlier process recorded
        (export_state): its drop-ins for services still named are taken
        over, the others are removed under the usual rules.
        """
        if self.written:
            raise IrqtuneError("already applied")
        earlier = {e.unit: e for e in self._entries(previous_state)}
        stale = [e for u, e in earlier.items() if u not in self.services]
        if not self.services:
            if stale:
                self._remove_written(stale)
                if systemd_running(self.root):
                    self._daemon_reload_logged()
            log.info("no services named: nothing to opt in")
            return []
        if not systemd_running(self.root):
            raise UnsupportedError(
                "systemd is not running (no /%s): cannot opt services %s in "
                "to busy polling; nothing was written. Start such programs "
                "with irqtune-busypoll-run instead"
                % (SYSTEMD_RUNNING_MARKER, ", ".join(self.services)))
        library = self._resolved_library()
        check_library_path(library)
        if self.values.budget > BUDGET_WITHOUT_CAP:
            log.warning("busy_poll_budget %d is above %d: services whose processes "
                        "lack CAP_NET_ADMIN keep their epoll instances unchanged "
                        "(the library reports it)", self.values.budget, BUDGET_WITHOUT_CAP)
        plans = []
        for unit in self.services:
            if self._show(unit, "LoadState") == "not-found":
                log.warning("%s: no such unit (yet); the drop-in applies once it "
                            "is installed", unit)
            before = self._existing_ld_preload(unit, library)
            if before:
                log.info("%s: the unit sets LD_PRELOAD=%s; the drop-in keeps it "
                         "and appends %s", unit, before, library)
            plans.append((unit, dropin_content(library, self.values, before)))
        written = []
        try:
            for unit, content in plans:
                written.append(self._write(unit, content, earlier.get(unit)))
            self._daemon_reload()
        except (OSError, IrqtuneError) as err:
            self._roll_back(written)
            if written:
                self._daemon_reload_logged()
            if isinstance(err, IrqtuneError):
                raise
            raise IrqtuneError("cannot write drop-in: %s; nothing left behind" % err)
        self.written = written
        if stale:
            self._remove_written(stale)
            self._daemon_reload_logged()
        for entry in written:
            log.info("%s: opted in to busy polling via %s", entry.unit, entry.path)
        return self._after_change("opt-in")

    def _after_change(self, what):
        # A running main process that already has (opt-in) or no longer has
        # (opt-out) the library mapped needs no restart; anything else does.
        done = "loaded" if what == "opt-in" else "not-loaded"
        running = [unit for unit in self.running_services()
                   if self.preload_status(unit) != done]
        if running and self.restart:
            self._try_restart(running)
        elif running:
            log.warning("restart %s for the busy-poll %s to take effect "
                        "(not restarted: set restart=true to let irqtune do it)",
                        " ".join(running), what)
        return running

    def unapply(self):
        """Remove what apply wrote and reload systemd.  Returns the services
        still running with the preload until restarted."""
        if not self.written:
            return []
        entries, self.written = self.written, []
        self._remove_written(entries)
        if systemd_running(self.root):
            self._daemon_reload_logged()
        return self._after_change("opt-out")

    # state that outlives the process (TuneD's storage survives a daemon
    # restart, not a reboot)

    def export_state(self):
        """What apply wrote, as plain data a later process can adopt."""
        return [{"unit": e.unit, "path": e.path, "content": e.content,
                 "created_dir": e.created_dir} for e in self.written]

    def adopt_state(self, state):
        """Take over drop-ins an earlier process wrote (from export_state),
        so that unapply removes them under the same rules."""
        if self.written:
            raise IrqtuneError("already applied")
        for entry in self._entries(state):
            self.written.append(entry)
            _CLAIMED.add(entry.path)

    def verify(self):
        """[(unit, ok, state)]: whether each drop-in holds what apply wrote.

        state is "present" (as written), "changed", "missing" or
        "not written" (apply did not write it).
        """
        results = []
        expected = {e.unit: e for e in self.written}
        for unit in self.services:
            entry = expected.get(unit)
            try:
                with open(self.dropin_path(unit)) as f:
                    current = f.read()
            except OSError:
                current = None
            if entry is None:
                state = "not written"
            elif current is None:
                state = "missing"
            elif current != entry.content:
                state = "changed"
            else:
                state = "present"
            results.append((unit, state == "present", state))
        return results
