# SPDX-License-Identifier: GPL-2.0-or-later
"""What the irqtune TuneD plugins share: the base that drives a tuner
(irqtune.shared.tuner's contract) - lock, link watcher, option errors, rollback
rules, the guard of every entry point -, the TuneD version shims, and the
base of the system-wide plugins (InstancePlugin).  The net-device base
(hotplug, renames) is irqtune_netdev.py's; what goes into TuneD's log
(the library's lines under the calling plugin's name, verify lines in
TuneD's format) is irqtune_tunedlog.py's.

Installed beside the plugins in TuneD's plugin package.  The module name
does not start with "plugin_", so TuneD's loader never takes it for a
plugin; plugins import it as a module (not its classes) so that their own
class stays the only Plugin subclass in their namespace.
"""

import functools
import re
import threading

import tuned.consts as consts
from tuned.plugins import base
from tuned.plugins import irqtune_tunedlog as tunedlog

from irqtune.kernel.errors import IrqtuneError, describe_os_error
from irqtune.kernel.names import option_name
from irqtune.kernel.netlink.links import LinkWatcher
from irqtune.shared.tuner import Env

log = tunedlog.log
_ROLLBACK_FULL = getattr(consts, "ROLLBACK_FULL", 2)
verify_failed = tunedlog.verify_failed
verify_checks = tunedlog.verify_checks


def wants_restore(rollback, full_only=False):
	"""Whether an unapply call asks for the originals back.

	TuneD 2.20 passes a bool (full_rollback): runtime values are restored
	either way.  2.21+ passes consts.ROLLBACK_NONE/SOFT/FULL = 0/1/2, and
	NONE (daemon exit with rollback=not_on_exit) means leave everything -
	the persisted originals then serve the next start.  full_only (a
	tuner's full_rollback_only: drop-ins meant to outlive a shutdown):
	only a full rollback, True in 2.20.  bool is an int subclass, so it is
	tested first.
	"""
	if isinstance(rollback, bool) or rollback is None:
		return bool(rollback) or not full_only
	return rollback == _ROLLBACK_FULL if full_only else rollback != 0


_VARIABLE_REF = re.compile(r"\$\{(\w+)\}")


def option_origin(text, value):
	"""For an option error's line: the profile variables the option's text
	in the profile refers to - the names an administrator edits in the
	variables file - and whether TuneD found them ("" for a value written
	in the unit itself)."""
	names = _VARIABLE_REF.findall(text) if isinstance(text, str) else []
	undefined = [n for n in names if "${%s}" % n in str(value)]
	if undefined:
		return ", variable %s not defined (in the profile or its variables file)" \
			% ", ".join(undefined)
	if names:
		return ", from variable %s" % ", ".join(names)
	return ""


# TuneD's entry points into a plugin: (what failed, what to do, value
# returned instead).  No exception may reach TuneD ("BUG: Unhandled
# exception", and in 2.20 the rest of the profile is not applied).
ENTRY_POINTS = {
	"_instance_init": ("setting up the instance",
		"the instance tunes nothing; fix the cause and apply the profile again", None),
	"_instance_cleanup": ("cleaning up the instance", "nothing to do", None),
	"_instance_apply_static": ("applying",
		"values may be set in part; fix the cause and apply the profile again "
		"(tuned-adm verify names what is not set)", None),
	"_instance_verify_static": ("verifying", "verify counts the instance as failed", False),
	"instance_verify_tuning": ("verifying", "verify counts the instance as failed", False),
	"_instance_unapply_static": ("restoring",
		"originals not put back stay saved in /run/irqtune for the next unapply", None),
	"_added_device_apply_tuning": ("tuning a new device",
		"fix the cause and apply the profile again", None),
	"_removed_device_unapply_tuning": ("releasing a device",
		"its originals may not be back; compare with tuned-adm verify", None),
	"_retune": ("tuning recreated NAPIs/IRQs again",
		"tuned-adm verify names what is not set", None),
	# A tuner's tick on the periodic re-check (napi: gro_flush_timeout=auto).
	"_follow_measurement": ("measuring for the auto values",
		"the values stay as they are; tuned-adm verify names what is not set", None),
	# TuneD 2.25+: a renamed NIC, by its new name (hotplug's move event).
	"_move_device": ("following the rename",
		"re-apply the profile", None),
}


def describe_error(err):
	"""One line for an exception: the library's own say what happened."""
	if isinstance(err, (IrqtuneError, OSError)):
		return describe_os_error(err)
	return "%s: %s (a bug in irqtune, please report it)" % (type(err).__name__, err)


def _guard(name, func):
	what, advice, fallback = ENTRY_POINTS[name]

	@functools.wraps(func)
	def guarded(self, instance, *args, **kwargs):
		with tunedlog.lines_of(self):
			try:
				return func(self, instance, *args, **kwargs)
			except Exception as err:    # noqa: BLE001 - see ENTRY_POINTS
				# An instance, or a device name (_move_device)
				name = getattr(instance, "name", None)
				log.error("%s: %s failed: %s; %s" % ("instance %s" % name if name is not None
					else instance, what, describe_error(err), advice))
				return fallback
	guarded._irqtune_guarded = True
	return guarded


class Guarded:
	"""Wraps every TuneD entry point a plugin class defines (ENTRY_POINTS) so
	that an exception becomes one log line naming what failed and what to
	do.  Done per class at definition, so subclasses need no decorators and
	TuneD's differing call signatures pass through untouched."""

	def __init_subclass__(cls, **kwargs):
		super().__init_subclass__(**kwargs)
		for name in ENTRY_POINTS:
			func = cls.__dict__.get(name)
			if func is not None and not getattr(func, "_irqtune_guarded", False):
				setattr(cls, name, _guard(name, func))


def summarise(names, shown=4):
	"""A list of names for one log line: all of a few, the count of many."""
	names = list(names)
	if len(names) <= shown:
		return ", ".join(names)
	return "%d devices (%s, ...)" % (len(names), ", ".join(names[:shown]))


class TunerPlugin(Guarded):
	"""What every irqtune plugin does around its tuner (irqtune.shared.tuner's
	contract): the lock, the link watcher, option errors, the rollback
	rules and verify's lines.  A plugin is its documentation and one
	lookup, _feature (irqtune.frontends.plugins.PLUGINS[name]): its options
	and the build that makes the tuner from them (None when the options
	make tuning impossible) with the option errors.

	instance._lock serialises the daemon's calls with the link watcher's.
	"""

	# The plugin's options and build (irqtune.shared.options.Feature).
	_feature = None
	# Whether the watcher may run at all (unit tests turn it off).
	_watch = True
	# Fields of the builds' irqtune.shared.tuner.Env that tests replace
	# (state_dir, kfs, root, bus, napi_irqs); empty: the running system.
	_seams = {}

	def __init__(self, *args, **kwargs):
		super().__init__(*args, **kwargs)
		tunedlog.forward_library_log()

	@classmethod
	def _get_config_options(cls):
		return {o.name: o.default for o in cls._feature.options}

	@classmethod
	def get_config_options_hints(cls):
		return {o.name: o.hint for o in cls._feature.options}

	def _expanded_options(self, instance):
		return {k: (self._variables.expand(v) if isinstance(v, str) else v)
				for k, v in instance.options.items()}

	def _instance_init(self, instance):
		instance._has_static_tuning = True
		instance._has_dynamic_tuning = False
		instance._lock = threading.RLock()
		instance._tuner = None
		instance._option_errors = []
		instance._watcher = None
		instance._devices_seen = set()      # devices tuned since the profile applied
		try:
			instance._tuner, errors = self._feature.build(self._expanded_options(instance),
				Env(instance.name, **dict(self._seams, expand=self._expand)))
			instance._option_errors = errors      # logged once here, reported again by verify
		finally:
			self._log_option_errors(instance)

	def _expand(self, value):
		"""A value of a variables file, with the profile's variables expanded."""
		return str(self._variables.expand(value)).strip()

	def _log_option_errors(self, instance):
		"""One line per bad value, under the option's name in the unit, with
		the variable it came from and what becomes of it: left out, or -
		when the errors left no tuner - the whole instance."""
		consequence = "the option is not applied" if instance._tuner is not None \
			else self._feature.without_tuner
		for err in instance._option_errors:
			origin = option_origin(instance.options.get(err.option), err.value)
			log.error("instance %s: %s%s; %s" % (instance.name, err, origin, consequence))

	def _instance_cleanup(self, instance):
		self._instance_stop_background(instance)

	# -- apply ------------------------------------------------------------

	def _apply_devices(self, instance, devices):
		"""tuner.apply(*devices) and its one summary line."""
		if instance._tuner is None:
			return
		result = instance._tuner.apply(*devices)
		if devices:
			log.info("instance %s: %s: %s" % (instance.name, summarise(devices),
				instance._tuner.describe(result)))
		elif result:
			log.info("instance %s: %s" % (instance.name, instance._tuner.describe(result)))

	def _start_watching(self, instance):
		if instance._tuner is None or instance._watcher is not None or not self._watch \
				or not instance._tuner.needs_watching:
			return
		instance._watcher = LinkWatcher(
			lambda ifindex: self._retune_link(instance, ifindex),
			lambda: self._recheck(instance), interval=instance._tuner.recheck_interval)
		instance._watcher.start()

	def _recheck(self, instance):
		"""Every re-check interval: what drivers recreated is tuned again,
		then a tuner whose values follow a measurement (napi's auto) measures."""
		self._retune_all(instance)
		if instance._tuner is not None:
			self._follow_measurement(instance)

	def _follow_measurement(self, instance):
		change = instance._tuner.tick(instance._lock)
		if change is not None:
			log.info("instance %s: %s" % (instance.name, change.line()))

	def _retune(self, instance, device):
		with instance._lock:
			if instance._tuner is None:
				return
			result = instance._tuner.apply_new(device)
			if result:
				log.info("instance %s: %s tuned again: %s" % (instance.name,
					"%s:" % device if device else "", instance._tuner.describe(result)))

	# -- verify -----------------------------------------------------------

	def _instance_verify_static(self, instance, ignore_missing, devices):
		"""Option errors, values refused at apply, unsupported values, then
		the tuner's Checks.  None when nothing was there to check."""
		with instance._lock:
			ok = True
			for err in instance._option_errors:
				ok = verify_failed("%s: %s" % (instance.name, err))
			tuner = instance._tuner
			if tuner is None:
				return ok if instance._option_errors else None
			for what, why in sorted(tuner.rejected.items()):
				ok = verify_failed("%s: %s" % (instance.name, why))
			skipped = 0
			for what, why in sorted(tuner.unsupported.items()):
				what = option_name(what)
				if ignore_missing:
					log.info(consts.STR_VERIFY_PROFILE_VALUE_MISSING
						% ("%s %s" % (self.name, what)))
					skipped += 1
				else:
					ok = verify_failed("%s: %s: unsupported: %s" % (instance.name, what, why))
			checked = False
			for device in self._verify_targets(devices):
				checks = tuner.verify(device)
				checked = checked or bool(checks)
				if not verify_checks(device, checks):
					ok = False
			if ok and skipped and not checked and not instance._option_errors:
				return None
			return self._verify_result(ok, checked or not ok or bool(instance._option_errors))

	def _verify_targets(self, devices):
		return sorted(devices)

	def _verify_result(self, ok, checked):
		return ok

	# -- unapply ----------------------------------------------------------

	def _instance_unapply_static(self, instance, rollback=None):
		# The watcher may wait for the lock: stop it before taking it.
		self._instance_stop_background(instance)
		with instance._lock:
			tuner = instance._tuner
			if tuner is None:
				return
			if wants_restore(rollback, tuner.full_rollback_only):
				tuner.restore_all()
			else:
				log.info("instance %s: values left in place for the next start%s"
					% (instance.name, "; originals kept in %s" % tuner.ledger.path
						if tuner.ledger is not None else ""))

	def _instance_stop_background(self, instance):
		watcher = getattr(instance, "_watcher", None)
		if watcher is not None:
			instance._watcher = None
			watcher.stop()


class InstancePlugin(TunerPlugin, base.Plugin):
	"""A tuner of the whole system (no devices): apply() and verify(None)."""

	def _instance_apply_static(self, instance):
		with instance._lock:
			self._apply_devices(instance, ())
		self._start_watching(instance)

	def _retune_link(self, instance, ifindex):
		self._retune(instance, None)

	def _retune_all(self, instance):
		self._retune(instance, None)

	def _verify_targets(self, devices):
		return [None]

	def _verify_result(self, ok, checked):
		# Nothing configured, nothing checked: TuneD counts None as skipped.
		return ok if checked else None
