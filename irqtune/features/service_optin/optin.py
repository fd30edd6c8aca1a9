# SPDX-License-Identifier: GPL-2.0-or-later
"""ServiceOptIn: the drop-ins of one set of services, written and removed
as one (see the package text for the rules)."""

import logging
import os

from ...kernel.caps import NO_BUSY_POLL, detect_kernel_features
from ...kernel.errors import IrqtuneError, UnsupportedError, describe_os_error
from ...kernel.kfs import KFS
from ...shared.epoll import preload_loaded
from ...shared.systemd import SYSTEMD_RUNNING_MARKER, Systemctl, systemd_running
from .config import (BUDGET_WITHOUT_CAP, LIBRARY_NAME, OptInValues, check_library_path,
                     find_library, parse_services, reroot)
from .dropins import (DROPIN_NAME, UNIT_DIR, DropIn, dropin_content, entries_from_state,
                      read_dropin, remove_dropins, roll_back, write_dropin)

log = logging.getLogger(__name__)


class ServiceOptIn:
    """Opt a set of services in: apply, verify, unapply.

    root relocates the configuration paths (/etc, /run/systemd), kfs the
    procfs read for a service's mapped libraries; bus is
    irqtune.shared.systemd.Systemctl's seam (default: the system bus).
    """

    def __init__(self, services, values=None, library=None, root="/",
                 bus=None, restart=False, kfs=KFS):
        self.services = parse_services(services) if isinstance(services, str) \
            else parse_services(", ".join(services))
        self.values = values if values is not None else OptInValues()
        self.library = check_library_path(library) if library else None
        self.root = root
        self.kfs = kfs
        self.systemctl = Systemctl(bus)
        self.restart = restart
        self.written = []

    def dropin_dir(self, unit):
        return os.path.join(reroot(self.root, UNIT_DIR), unit + ".d")

    def dropin_path(self, unit):
        return os.path.join(self.dropin_dir(unit), DROPIN_NAME)

    def preload_status(self, unit):
        """'loaded', 'not-loaded', 'inactive' or 'unknown' for the main process."""
        pid = self.systemctl.unit_property(unit, "MainPID")
        if pid is None:
            return "unknown"
        if pid == 0:
            return "inactive"
        loaded = preload_loaded(pid, self.kfs,
                                self._resolved_library(quiet=True) or LIBRARY_NAME)
        return {True: "loaded", False: "not-loaded", None: "unknown"}[loaded]

    def _resolved_library(self, quiet=False):
        if self.library:
            return self.library
        try:
            return find_library(self.root)
        except UnsupportedError:
            if quiet:
                return None
            raise

    def plan(self):
        """[(unit, drop-in text)] for the named services; raises
        UnsupportedError without systemd, the library or busy polling in
        the kernel (EPIOCSPARAMS exists only with CONFIG_NET_RX_BUSY_POLL)."""
        if detect_kernel_features(self.kfs).busy_poll is False:
            raise UnsupportedError(
                "%s: epoll instances cannot be set to busy poll, so services %s "
                "are not opted in; nothing was written"
                % (NO_BUSY_POLL, ", ".join(self.services)))
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
            if self.systemctl.unit_property(unit, "LoadState") == "not-found":
                log.warning("%s: no such unit (yet); the drop-in applies once it "
                            "is installed", unit)
            before = self.systemctl.ld_preload(unit, library)
            if before:
                log.info("%s: the unit sets LD_PRELOAD=%s; the drop-in keeps it "
                         "and appends %s", unit, before, library)
            plans.append((unit, dropin_content(library, self.values, before)))
        return plans

    def apply(self, previous_state=None, record=None):
        """Write the drop-ins and reload systemd.  Returns the services that
        run with the old environment until restarted (restarted already when
        ``restart`` is set).

        ``previous_state`` is what an earlier process recorded
        (export_state): its drop-ins for services still named are taken
        over, the others are removed under the usual rules.  ``record`` is
        called with the records of every drop-in that may exist once the
        writes start (the ledger: on disk before the change).
        """
        if self.written:
            raise IrqtuneError("already applied")
        earlier = {e.unit: e for e in entries_from_state(previous_state)}
        stale = [e for u, e in earlier.items() if u not in self.services]
        if not self.services:
            if stale:
                remove_dropins(stale)
                if systemd_running(self.root):
                    self.systemctl.daemon_reload_logged()
            log.info("no services named: nothing to opt in")
            return []
        plans = self.plan()
        if record is not None:
            record([e.export() for e in stale] + [
                DropIn(unit, self.dropin_path(unit), content,
                       bool(unit in earlier and earlier[unit].created_dir)
                       or not os.path.isdir(self.dropin_dir(unit))).export()
                for unit, content in plans])
        written = []
        try:
            for unit, content in plans:
                written.append(write_dropin(unit, self.dropin_path(unit), content,
                                            earlier.get(unit)))
            self.systemctl.daemon_reload()
        except (OSError, IrqtuneError) as err:
            roll_back(written)
            if written:
                self.systemctl.daemon_reload_logged()
            if isinstance(err, IrqtuneError):
                raise
            raise IrqtuneError("cannot write drop-in: %s; nothing left behind"
                               % describe_os_error(err))
        self.written = written
        if stale:
            remove_dropins(stale)
            self.systemctl.daemon_reload_logged()
        for entry in written:
            log.info("%s: opted in to busy polling via %s", entry.unit, entry.path)
        return self._after_change("opt-in")

    def _after_change(self, what):
        # A running main process that already has (opt-in) or no longer has
        # (opt-out) the library mapped needs no restart; anything else does.
        done = "loaded" if what == "opt-in" else "not-loaded"
        running = [unit for unit in self.systemctl.active(self.services)
                   if self.preload_status(unit) != done]
        if running and self.restart:
            self.systemctl.try_restart(running)
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
        remove_dropins(entries)
        if systemd_running(self.root):
            self.systemctl.daemon_reload_logged()
        return self._after_change("opt-out")

    def export_state(self):
        """What apply wrote, as plain data a later process can adopt."""
        return [e.export() for e in self.written]

    def verify(self):
        """[(unit, ok, state)]: whether each drop-in holds what apply wrote.

        state is "present" (as written), "changed", "missing" or
        "not written" (apply did not write it).
        """
        results = []
        expected = {e.unit: e for e in self.written}
        for unit in self.services:
            entry = expected.get(unit)
            current = read_dropin(self.dropin_path(unit))
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
