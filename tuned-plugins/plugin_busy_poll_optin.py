# SPDX-License-Identifier: GPL-2.0-or-later
"""TuneD adapter for irqtune.features.service_optin (see there for the rules)."""

import tuned.consts as consts
import tuned.logs
from tuned.plugins import irqtune_common as common

from irqtune.features import service_optin
from irqtune.kernel.kfs import KernelFs
from irqtune.services.ledger import Ledger
from irqtune.services.options import parse_options
from irqtune.frontends.plugin_options import PLUGINS

log = tuned.logs.get()

_ROLLBACK_FULL = getattr(consts, "ROLLBACK_FULL", 2)


def _full_rollback(rollback):
	"""Whether an unapply removes the drop-ins.

	Unlike runtime values (common.wants_restore), drop-ins are meant to
	outlive a shutdown, as the bootloader plugin's changes do: only a full
	rollback (profile switch, TuneD stopped by the administrator) removes
	them.  TuneD 2.20 passes that as a bool, 2.21+ as ROLLBACK_FULL (2);
	bool is an int subclass, so it is tested first.
	"""
	if isinstance(rollback, bool):
		return rollback
	return rollback == _ROLLBACK_FULL


class BusyPollOptinPlugin(common.InstancePlugin):
	"""
	`busy_poll_optin`::

	Opts systemd services in to epoll busy polling, and so to per-NAPI IRQ
	suspension, without changing the applications.  For each service named
	in `services` it writes
	`/etc/systemd/system/<service>.d/50-irqtune-busypoll.conf`, which
	preloads `libirqtune-busypoll.so` (package irqtune-preload); the library
	sets `EPIOCSPARAMS` on every epoll instance the service creates through
	libc.  systemd's configuration is reloaded; services are restarted only
	with `restart=true`, otherwise the running ones that need a restart are
	logged.  Switching the profile away or stopping TuneD removes exactly
	the files it wrote; a system shutdown keeps them, so the services start
	opted in at the next boot.
	+
	Options: `services` (names separated by commas; a name with a space
	inside is refused, not split), `busy_poll_usecs` (0; at most 1000000,
	one second: a longer busy poll per `epoll_wait` only spins a CPU),
	`busy_poll_budget` (64; above 64 the service needs CAP_NET_ADMIN),
	`prefer_busy_poll` (1), `restart` (false), `library` (path; found
	automatically when empty).  Numbers are plain decimal digits.  A bad
	value opts no service in; every bad value gets its own log line.
	+
	Not reached: statically linked programs and runtimes that make epoll
	system calls directly (Go).  Programs started by hand:
	`irqtune-busypoll-run`.  On a kernel built without busy polling
	(`CONFIG_NET_RX_BUSY_POLL`, which `EPIOCSPARAMS` needs) nothing is
	written, with one error naming it.
	+
	.Opt memcached and nginx in
	====
	----
	[busy_poll_optin]
	services=memcached, nginx
	----
	====
	"""

	# Seams for tests: root directory, systemd's bus, /proc, ledger dir.
	_optin_root = "/"
	_optin_bus = None
	_optin_proc_root = "/proc"
	_optin_state_dir = None

	_declared = PLUGINS["busy_poll_optin"]

	_without_tuner = "no service is opted in"

	def _make_tuner(self, instance, options):
		def option(name):
			return common.expanded_option(self._variables, instance, name)
		# Every bad value is reported, not only the first one.
		given = {name: option(name) for name in self._get_config_options()}
		values, errors = service_optin.OptInValues.from_options(given)
		checked, more = parse_options(self._declared, {name: given[name]
			for name in ("services", "restart", "library")})
		errors += more
		if errors:
			self._option_errors_found(instance, errors)
			return None     # no service is opted in
		optin = service_optin.ServiceOptIn(checked.get("services", ()), values,
			library=checked.get("library"), root=self._optin_root,
			bus=self._optin_bus, restart=checked.get("restart", False),
			kfs=KernelFs(proc=self._optin_proc_root))
		# What an earlier daemon wrote (kill -9, or kept over a shutdown
		# until /run was cleared): the tuner's first apply takes it over.
		return service_optin.OptInTuner(optin,
			ledger=Ledger("busy_poll_optin-" + instance.name, self._optin_state_dir),
			label="busy_poll_optin " + instance.name)

	def _wants_restore(self, rollback):
		return _full_rollback(rollback)
