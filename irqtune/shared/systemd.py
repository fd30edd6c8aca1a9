# SPDX-License-Identifier: GPL-2.0-or-later
"""systemd: whether it runs, service unit names, its manager's calls
(Systemctl) and a unit's processes; for the opt-in, the doctor and the
services the auto values measure.  Nothing forks: the library runs in
TuneD's multi-threaded daemon, so systemd is asked over D-Bus with TuneD's
own binding, python3-dbus."""

import logging
import os
import re
import time

from ..kernel.errors import IrqtuneError, OptionError
from ..kernel.kfs import KFS
from ..kernel.names import shown

log = logging.getLogger(__name__)

SYSTEMD_RUNNING_MARKER = "run/systemd/system"
_UNIT_RE = re.compile(r"^[A-Za-z0-9:_.\\-]+(@[A-Za-z0-9:_.\\-]*)?\.service$")
_OTHER_UNIT_TYPES = ("socket", "target", "mount", "automount", "swap", "timer",
                     "path", "slice", "scope", "device")

# systemd's manager API (org.freedesktop.systemd1(5)), the interface of
# each property asked.
SYSTEMD = "org.freedesktop.systemd1"
MANAGER_PATH, MANAGER = "/org/freedesktop/systemd1", SYSTEMD + ".Manager"
INTERFACES = dict(LoadState=".Unit", ActiveState=".Unit", ControlGroup=".Service",
                  MainPID=".Service", Environment=".Service", State=".Job")
# try_restart waits this long for its jobs (s): TuneD's profile switch and
# its D-Bus answers wait meanwhile, and a unit may take TimeoutStopSec (90 s
# by default) to stop; a job still running then is left to systemd.
RESTART_WAIT, JOB_POLL = 10, 0.1


def reroot(root, path):
    """path (absolute) under root: tests relocate every path."""
    return os.path.join(root, path.lstrip("/"))


SERVICES_ACCEPTED = ("service unit names separated by commas, each a name or "
                     "name.service without spaces (e.g. memcached, nginx.service)")


def parse_services(text, option="services"):
    """'memcached, nginx.service,redis-server' -> unit names, in order.

    Names are separated by commas, with any whitespace around them.  A
    name with whitespace inside ("my unit") is refused rather than split:
    no unit name holds a space (systemd-escape gives my\\x20unit), so it
    is a typo or a list written with spaces, and splitting would opt in
    units nobody named.  A name without a suffix gets ``.service``; other
    unit types are refused (only services have an environment);
    duplicates are dropped.
    """
    if text is None:
        return ()
    units = []
    for word in str(text).split(","):
        word = word.strip()
        if not word:
            continue
        if re.search(r"\s", word):
            raise OptionError(option, text, SERVICES_ACCEPTED)
        if word.rsplit(".", 1)[-1] in _OTHER_UNIT_TYPES:
            raise OptionError(option, word, "service unit names (name or name.service)")
        unit = word if word.endswith(".service") else word + ".service"
        if not _UNIT_RE.match(unit) or unit.startswith(("-", ".")) or ".." in unit:
            raise OptionError(option, word, "service unit names (name or name.service)")
        if unit not in units:
            units.append(unit)
    return tuple(units)


def systemd_running(root="/"):
    """systemd's own test (sd_booted): /run/systemd/system is a directory."""
    return os.path.isdir(reroot(root, SYSTEMD_RUNNING_MARKER))


def unit_name(name):
    """name as systemctl completes it for LoadUnit, which takes whole unit
    names only: without a unit type it is a service (`doctor --service
    memcached`)."""
    return name if name.rsplit(".", 1)[-1] in ("service",) + _OTHER_UNIT_TYPES else name + ".service"


def system_bus():
    """(the system bus, its error class) of python3-dbus."""
    try:
        import dbus     # here: the library imports without python3-dbus
    except ImportError:
        raise IrqtuneError("cannot ask systemd: python3-dbus (import dbus), "
                           "TuneD's D-Bus binding, is not installed") from None
    try:
        return dbus.SystemBus(), dbus.exceptions.DBusException
    except dbus.exceptions.DBusException as err:
        raise IrqtuneError("cannot ask systemd: no system bus: %s"
                           % shown(err.get_dbus_message())) from None


class Systemctl:
    """What systemctl would do, asked of systemd's manager over D-Bus.
    bus() -> (connection, its error class) is the seam (tests: a fake bus),
    called when systemd is first asked."""

    def __init__(self, bus=None, clock=time.monotonic, sleep=time.sleep):
        self.bus = bus or system_bus
        self.clock, self.sleep = clock, sleep
        self.failure = None         # why the last property could not be read
        self._connection = None
        self._paths = {}            # unit: its object path

    def _call(self, path, interface, method, *args, timeout=25):
        """method's answer; IrqtuneError with systemd's (escaped) words."""
        if self._connection is None:
            self._connection, self._error = self.bus()
        try:
            proxy = self._connection.get_object(SYSTEMD, path, introspect=False)
            return getattr(proxy, method)(*args, dbus_interface=interface, timeout=timeout)
        except self._error as err:
            raise IrqtuneError("%s (%s)" % (shown(err.get_dbus_message() or "no message"),
                                            shown(err.get_dbus_name() or "?"))) from None

    def _get(self, path, name):
        """A property as Python's own type: str, int, or a list of str."""
        value = self._call(path, "org.freedesktop.DBus.Properties", "Get",
                           SYSTEMD + INTERFACES[name], name)
        if isinstance(value, (str, list)):
            return str(value) if isinstance(value, str) else [str(v) for v in value]
        return int(value)

    def unit_property(self, unit, name):
        """One property of a unit (a list of "NAME=value" for Environment);
        None when systemd cannot be asked, why in self.failure.  LoadUnit
        gives a path for a unit that does not exist too (LoadState=not-found)."""
        try:
            if unit not in self._paths:
                self._paths[unit] = str(self._call(MANAGER_PATH, MANAGER, "LoadUnit",
                                                   unit_name(unit)))
            return self._get(self._paths[unit], name)
        except IrqtuneError as err:
            self.failure = str(err)
            return None

    def daemon_reload(self):
        """Reload answers once systemd has reloaded, as systemctl waits."""
        try:
            self._call(MANAGER_PATH, MANAGER, "Reload", timeout=120)
        except IrqtuneError as err:
            raise IrqtuneError("systemd daemon-reload failed: %s" % err) from None

    def daemon_reload_logged(self):
        try:
            self.daemon_reload()
        except IrqtuneError as err:
            log.error("%s", err)

    def try_restart(self, units):
        """TryRestartUnit (job mode replace, as systemctl's) for each unit,
        then up to RESTART_WAIT for the jobs."""
        jobs = {}
        for unit in units:
            try:
                jobs[unit] = self._call(MANAGER_PATH, MANAGER, "TryRestartUnit", unit, "replace")
            except IrqtuneError as err:
                log.error("try-restart %s failed: %s", shown(unit), err)
        running = self._wait(dict(jobs))
        done = [u for u in jobs if u not in running]
        failed = [u for u in done if self.unit_property(u, "ActiveState") == "failed"]
        if failed:
            log.error("try-restart %s failed: the unit is in state failed (journalctl -u %s)",
                      " ".join(map(shown, failed)), shown(failed[0]))
        if len(done) > len(failed):
            log.info("restarted %s", " ".join(shown(u) for u in done if u not in failed))
        if running:
            log.warning("%s: the restart still runs after %d s; systemd finishes it",
                        " ".join(map(shown, running)), RESTART_WAIT)

    def _wait(self, pending):
        """The units whose job still exists after RESTART_WAIT: a job's
        object goes when the job ends, and polling it needs no main loop to
        receive JobRemoved in TuneD's daemon."""
        deadline = self.clock() + RESTART_WAIT
        while pending:
            for unit, job in list(pending.items()):
                try:
                    self._get(job, "State")
                except IrqtuneError:            # no such object: the job ended
                    del pending[unit]
            if not pending or self.clock() >= deadline:
                break
            self.sleep(JOB_POLL)
        return list(pending)

    def active(self, units):
        """The units that are active now."""
        return [unit for unit in units if self.unit_property(unit, "ActiveState")
                in ("active", "reloading", "activating")]

    def ld_preload(self, unit, library):
        """LD_PRELOAD from the unit's own Environment=, without library."""
        for word in reversed(self.unit_property(unit, "Environment") or []):
            if word.startswith("LD_PRELOAD="):     # ld.so splits at spaces and colons
                items = [i for i in re.split(r"[ :]+", word[len("LD_PRELOAD="):])
                         if i and i != library]
                return ":".join(items) or None
        return None


class UnitProcesses:
    """The processes of systemd units, the one way to find them: a unit's
    control group (ControlGroup=) is asked of systemd and kept, and its
    cgroup.procs read in systemd's own hierarchy (cgroup v2, hybrid or v1,
    by /proc/self/mountinfo, read once).  systemd is asked again only when
    the group is empty, and then at most every `retry` seconds (the auto
    values look on every re-check)."""

    def __init__(self, kfs=KFS, bus=None, root="/", clock=time.monotonic, retry=0):
        self.kfs = kfs
        self.systemctl = Systemctl(bus)
        self.root = root
        self.clock = clock
        self.retry = retry
        self._groups = {}           # unit: control group path
        self._asked = {}            # unit: when systemd was last asked
        self._hierarchy = None      # systemd's: the layout changes only with a reboot

    def pids(self, unit):
        """The sorted pids of a unit that runs; IrqtuneError saying why
        there are none, the unit's name escaped (it may come from a
        command line)."""
        pids = self._procs(self._groups.get(unit))
        if pids:
            return pids
        name, now = shown(unit, quote=True), self.clock()
        if unit in self._asked and now - self._asked[unit] < self.retry:
            raise IrqtuneError("%s: the unit runs no process" % name)
        self._asked[unit] = now
        if not systemd_running(self.root):
            raise IrqtuneError("%s: systemd is not running on this host" % name)
        ctl = self.systemctl
        load = ctl.unit_property(unit, "LoadState")
        if load is None:
            raise IrqtuneError("%s: %s" % (name, ctl.failure))
        if load == "not-found":
            raise IrqtuneError("%s: no such unit (systemctl show: LoadState=%s)"
                               % (name, shown(load)))
        self._groups[unit] = ctl.unit_property(unit, "ControlGroup")
        pids = self._procs(self._groups[unit])
        if not pids:
            raise IrqtuneError("%s: the unit runs no process (ActiveState=%s)"
                               % (name, shown(ctl.unit_property(unit, "ActiveState") or "?")))
        return pids

    def _procs(self, group):
        if not group:
            return []
        if self._hierarchy is None:
            self._hierarchy = self.kfs.systemd_cgroup_root()
        return sorted(self.kfs.cgroup_procs(group, self._hierarchy))
