# SPDX-License-Identifier: GPL-2.0-or-later
"""TuneD adapter for irqtune.service_optin (see there for the rules)."""

from . import base
import tuned.consts as consts
import tuned.logs
from tuned.plugins import irqtune_common as common

from irqtune import service_optin
from irqtune.errors import IrqtuneError, UnsupportedError
from irqtune.ledger import Ledger

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


class BusyPollOptinPlugin(common.Guarded, base.Plugin):
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
	Options: `services` (names, comma or space separated), `busy_poll_usecs`
	(0), `busy_poll_budget` (64; above 64 the service needs CAP_NET_ADMIN),
	`prefer_busy_poll` (1), `restart` (false), `library` (path; found
	automatically when empty).
	+
	Not reached: statically linked programs and runtimes that make epoll
	system calls directly (Go).  Programs started by hand:
	`irqtune-busypoll-run`.
	+
	.Opt memcached and nginx in
	====
	----
	[busy_poll_optin]
	services=memcached, nginx
	----
	====
	"""

	# Seams for tests: root directory, systemctl runner, /proc, state dir.
	_optin_root = "/"
	_optin_systemctl = None
	_optin_proc_root = "/proc"
	_optin_state_dir = None

	def __init__(self, *args, **kwargs):
		super(BusyPollOptinPlugin, self).__init__(*args, **kwargs)
		common.forward_library_log()

	@classmethod
	def _get_config_options(cls):
		return {
			"services": None,
			"busy_poll_usecs": None,
			"busy_poll_budget": None,
			"prefer_busy_poll": None,
			"restart": None,
			"library": None,
		}

	@classmethod
	def get_config_options_hints(cls):
		return {
			"services": "systemd services to opt in (comma or space separated)",
			"busy_poll_usecs": "EPIOCSPARAMS busy_poll_usecs, 0..2147483647 (default 0)",
			"busy_poll_budget": "EPIOCSPARAMS busy_poll_budget, 0..65535 (default 64; >64 needs CAP_NET_ADMIN)",
			"prefer_busy_poll": "EPIOCSPARAMS prefer_busy_poll, 0 or 1 (default 1)",
			"restart": "restart running services so the change takes effect (default false)",
			"library": "path of libirqtune-busypoll.so (default: found in the arch libdir)",
		}

	def _option(self, instance, name):
		return common.expanded_option(self._variables, instance, name)

	def _instance_init(self, instance):
		instance._has_static_tuning = True
		instance._has_dynamic_tuning = False
		instance._optin = None
		instance._optin_error = None
		instance._optin_unsupported = False
		instance._optin_applied = False
		# What an earlier daemon wrote (kill -9, or kept over a shutdown
		# until /run was cleared): the next apply takes it over.
		instance._optin_state = Ledger("busy_poll_optin-" + instance.name,
			self._optin_state_dir)
		try:
			values = service_optin.OptInValues(
				self._option(instance, "busy_poll_usecs") or service_optin.DEFAULT_USECS,
				self._option(instance, "busy_poll_budget") or service_optin.DEFAULT_BUDGET,
				self._option(instance, "prefer_busy_poll") or service_optin.DEFAULT_PREFER)
			instance._optin = service_optin.ServiceOptIn(
				self._option(instance, "services"), values,
				library=self._option(instance, "library") or None,
				root=self._optin_root, systemctl=self._optin_systemctl,
				restart=service_optin.parse_bool(self._option(instance, "restart")),
				proc_root=self._optin_proc_root)
		except IrqtuneError as err:
			instance._optin_error = str(err)
			log.error("instance %s: %s; no service is opted in" % (instance.name, err))

	def _instance_cleanup(self, instance):
		instance._optin = None

	def _instance_apply_static(self, instance):
		optin = instance._optin
		if optin is None:
			return
		previous = instance._optin_state.load().get("written")
		try:
			optin.apply(previous_state=previous)
		except UnsupportedError as err:
			instance._optin_unsupported = True
			log.error("instance %s: %s" % (instance.name, err))
			return
		except IrqtuneError as err:
			instance._optin_error = str(err)
			log.error("instance %s: %s" % (instance.name, err))
			return
		instance._optin_applied = True
		try:
			if optin.written:
				instance._optin_state.save({"written": optin.export_state()})
			else:
				instance._optin_state.remove()
		except OSError as err:
			log.warning("instance %s: cannot save %s: %s" % (instance.name,
				instance._optin_state.path, err))

	def _instance_verify_static(self, instance, ignore_missing, devices):
		optin = instance._optin
		name = "busy_poll_optin %s" % instance.name
		if optin is None or instance._optin_error:
			return common.verify_failed("%s: %s" % (name, instance._optin_error))
		if not optin.services:
			return None
		if instance._optin_unsupported:
			if ignore_missing:
				log.info(consts.STR_VERIFY_PROFILE_VALUE_MISSING % name)
				return None
			return common.verify_failed("%s: systemd is not running, no drop-ins" % name)
		ok = True
		for unit, passed, state in optin.verify():
			what = "%s: %s" % (name, optin.dropin_path(unit))
			if passed:
				log.info(consts.STR_VERIFY_PROFILE_VALUE_OK % (what, state))
			else:
				log.error(consts.STR_VERIFY_PROFILE_VALUE_FAIL % (what, state, "present"))
				ok = False
		return ok

	def _instance_unapply_static(self, instance, rollback=False):
		optin = instance._optin
		if optin is None or not instance._optin_applied:
			return
		if not _full_rollback(rollback):
			if optin.written:
				log.info("instance %s: keeping the drop-ins of %s for the next start"
					% (instance.name, ", ".join(e.unit for e in optin.written)))
			return
		try:
			optin.unapply()
		except IrqtuneError as err:
			log.error("instance %s: %s" % (instance.name, err))
		instance._optin_applied = False
		instance._optin_state.remove()
