# SPDX-License-Identifier: GPL-2.0-or-later
"""TuneD adapter for irqtune.service_optin (see there for the rules)."""

from . import base
import tuned.consts as consts
import tuned.logs

from irqtune import service_optin
from irqtune.errors import IrqtuneError, UnsupportedError

log = tuned.logs.get()

# TuneD >= 2.21 passes an int; 2.20 a bool (True = full rollback).
_ROLLBACK_FULL = getattr(consts, "ROLLBACK_FULL", 2)


class BusyPollOptinPlugin(base.Plugin):
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

	# Seams for tests: root directory and systemctl runner of ServiceOptIn.
	_optin_root = "/"
	_optin_systemctl = None
	_optin_proc_root = "/proc"

	def __init__(self, *args, **kwargs):
		super(BusyPollOptinPlugin, self).__init__(*args, **kwargs)
		self._has_dynamic_options = False

	@classmethod
	def _get_config_options(cls):
		return {
			"services": "",
			"busy_poll_usecs": str(service_optin.DEFAULT_USECS),
			"busy_poll_budget": str(service_optin.DEFAULT_BUDGET),
			"prefer_busy_poll": str(service_optin.DEFAULT_PREFER),
			"restart": "false",
			"library": "",
		}

	@classmethod
	def get_config_options_hints(cls):
		return {
			"services": "systemd services to opt in (comma or space separated)",
			"busy_poll_usecs": "EPIOCSPARAMS busy_poll_usecs, 0..2147483647",
			"busy_poll_budget": "EPIOCSPARAMS busy_poll_budget, 0..65535 (>64 needs CAP_NET_ADMIN)",
			"prefer_busy_poll": "EPIOCSPARAMS prefer_busy_poll, 0 or 1",
			"restart": "restart running services so the change takes effect (default false)",
			"library": "path of libirqtune-busypoll.so (default: found in the arch libdir)",
		}

	def _option(self, instance, name):
		value = instance.options.get(name)
		if value is None:
			return ""
		return str(self._variables.expand(value)).strip()

	def _instance_init(self, instance):
		instance._has_static_tuning = True
		instance._has_dynamic_tuning = False
		instance._optin = None
		instance._optin_error = None
		instance._optin_unsupported = False
		instance._optin_applied = False
		instance._optin_previous = self._storage.get(self._storage_key(instance.name))
		try:
			values = service_optin.OptInValues(
				self._option(instance, "busy_poll_usecs"),
				self._option(instance, "busy_poll_budget"),
				self._option(instance, "prefer_busy_poll"))
			instance._optin = service_optin.ServiceOptIn(
				self._option(instance, "services"), values,
				library=self._option(instance, "library") or None,
				root=self._optin_root, systemctl=self._optin_systemctl,
				restart=service_optin.parse_bool(self._option(instance, "restart")),
				proc_root=self._optin_proc_root)
		except IrqtuneError as e:
			instance._optin_error = str(e)
			log.error("busy_poll_optin [%s]: %s" % (instance.name, e))

	def _instance_cleanup(self, instance):
		instance._optin = None

	def _instance_apply_static(self, instance):
		optin = instance._optin
		if optin is None:
			return
		key = self._storage_key(instance.name)
		try:
			optin.apply(previous_state=instance._optin_previous)
		except UnsupportedError as e:
			instance._optin_unsupported = True
			log.error("busy_poll_optin [%s]: %s" % (instance.name, e))
			return
		except IrqtuneError as e:
			instance._optin_error = str(e)
			log.error("busy_poll_optin [%s]: %s" % (instance.name, e))
			return
		instance._optin_applied = True
		instance._optin_previous = None
		if optin.written:
			self._storage.set(key, optin.export_state())
		else:
			self._storage.unset(key)

	def _instance_verify_static(self, instance, ignore_missing, devices):
		optin = instance._optin
		name = "busy_poll_optin [%s]" % instance.name
		if optin is None or instance._optin_error:
			log.error(consts.STR_VERIFY_PROFILE_FAIL % ("%s: %s" % (name, instance._optin_error)))
			return False
		if not optin.services:
			return None
		if instance._optin_unsupported:
			if ignore_missing:
				log.info(consts.STR_VERIFY_PROFILE_VALUE_MISSING % name)
				return None
			log.error(consts.STR_VERIFY_PROFILE_FAIL % ("%s: systemd not running, no drop-ins" % name))
			return False
		ok = True
		for unit, passed, detail in optin.verify():
			what = "%s %s drop-in" % (name, unit)
			if passed:
				log.info(consts.STR_VERIFY_PROFILE_VALUE_OK % (what, detail))
			else:
				log.error(consts.STR_VERIFY_PROFILE_VALUE_FAIL % (what, detail, optin.dropin_path(unit)))
				ok = False
		return ok

	def _instance_unapply_static(self, instance, rollback=False):
		optin = instance._optin
		if optin is None or not instance._optin_applied:
			return
		if isinstance(rollback, bool):
			full = rollback
		else:
			full = rollback == _ROLLBACK_FULL
		if not full:
			# Shutdown: keep the drop-ins so the services start opted in at
			# boot; the saved state lets the next apply take them over.
			log.info("busy_poll_optin [%s]: keeping drop-ins for %s across the shutdown"
				% (instance.name, ", ".join(e.unit for e in optin.written) or "no services"))
			return
		try:
			optin.unapply()
		except IrqtuneError as e:
			log.error("busy_poll_optin [%s]: %s" % (instance.name, e))
		instance._optin_applied = False
		self._storage.unset(self._storage_key(instance.name))
