# SPDX-License-Identifier: GPL-2.0-or-later
"""systemd: whether it runs, service unit names, systemctl calls (an
injectable callable argv -> (returncode, stdout)) and a unit's processes;
for the opt-in, the doctor and the services the auto values measure."""

import logging
import os
import re
import shlex
import subprocess
import time

from ..kernel.errors import IrqtuneError, OptionError, describe_os_error
from ..kernel.kfs import KFS
from ..kernel.names import shown

log = logging.getLogger("irqtune.features.service_optin")

SYSTEMD_RUNNING_MARKER = "run/systemd/system"
_UNIT_RE = re.compile(r"^[A-Za-z0-9:_.\\-]+(@[A-Za-z0-9:_.\\-]*)?\.service$")
_OTHER_UNIT_TYPES = ("socket", "target", "mount", "automount", "swap", "timer",
                     "path", "slice", "scope", "device")


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


def default_systemctl(argv):
    """Run systemctl with an argument list; (returncode, stdout)."""
    try:
        proc = subprocess.run(["systemctl"] + list(argv), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as err:
        return 127, describe_os_error(err)
    out = proc.stdout if proc.returncode == 0 else (proc.stderr.strip() or proc.stdout)
    return proc.returncode, out


class Systemctl:
    """The systemctl calls of the opt-in, over run(argv) -> (rc, stdout)."""

    def __init__(self, run=None):
        self.run = run or default_systemctl

    def show(self, unit, prop):
        """One property of a unit; the name after "--", so that one starting
        with '-' (from a command line) is looked up, never taken as an option."""
        rc, out = self.run(["show", "--property=" + prop, "--value", "--", unit])
        return out.strip() if rc == 0 else None

    def daemon_reload(self):
        rc, out = self.run(["daemon-reload"])
        if rc != 0:
            raise IrqtuneError("systemctl daemon-reload failed (%d): %s" % (rc, out.strip()))

    def daemon_reload_logged(self):
        try:
            self.daemon_reload()
        except IrqtuneError as err:
            log.error("%s", err)

    def try_restart(self, units):
        if not units:
            return
        rc, out = self.run(["try-restart", "--"] + list(units))
        if rc != 0:
            log.error("systemctl try-restart %s failed (%d): %s",
                      " ".join(units), rc, out.strip())
        else:
            log.info("restarted %s", " ".join(units))

    def active(self, units):
        """The units that are active now."""
        return [unit for unit in units
                if self.show(unit, "ActiveState") in ("active", "reloading", "activating")]

    def ld_preload(self, unit, library):
        """LD_PRELOAD from the unit's own Environment=, without library."""
        env = self.show(unit, "Environment")
        if not env:
            return None
        try:
            words = shlex.split(env)
        except ValueError:
            words = env.split()
        for word in reversed(words):
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

    def __init__(self, kfs=KFS, systemctl=None, root="/", clock=time.monotonic, retry=0):
        self.kfs = kfs
        self.systemctl = Systemctl(systemctl)
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
        load = self.systemctl.show(unit, "LoadState")
        if load in (None, "not-found"):
            raise IrqtuneError("%s: no such unit (systemctl show: LoadState=%s)"
                               % (name, shown(load or "?")))
        self._groups[unit] = self.systemctl.show(unit, "ControlGroup")
        pids = self._procs(self._groups[unit])
        if not pids:
            raise IrqtuneError("%s: the unit runs no process (ActiveState=%s)"
                               % (name, shown(self.systemctl.show(unit, "ActiveState") or "?")))
        return pids

    def _procs(self, group):
        if not group:
            return []
        if self._hierarchy is None:
            self._hierarchy = self.kfs.systemd_cgroup_root()
        return sorted(self.kfs.cgroup_procs(group, self._hierarchy))
