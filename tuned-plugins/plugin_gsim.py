# SPDX-License-Identifier: GPL-2.0-or-later
import threading

from . import base
import tuned.consts as consts
import tuned.logs
from tuned.plugins import irqtune_common as common

from irqtune import gsim, irqs
from irqtune.errors import OptionError
from irqtune.netlink.links import LinkWatcher
from irqtune.state import StateFile

log = tuned.logs.get()


class GsimPlugin(common.Guarded, base.Plugin):
	r"""
	`gsim`::

	Configures Global Software Interrupt Moderation (GSIM), a kernel
	feature that keeps the platform's total interrupt rate, each CPU's
	interrupt rate and each CPU's share of time in hard interrupt context
	under targets by delaying MSI/MSI-X interrupts adaptively. GSIM is not
	in mainline Linux: it needs a kernel with the GSIM patches (the irqtune
	sources carry them in `kernel-patches/gsim`). All three interface
	shapes that were posted are recognised: `/proc/irq/sw_moderation/`,
	the `/proc/irq/soft_moderation/` directory and the older
	`/proc/irq/soft_moderation` file. On a kernel without GSIM one warning
	names the missing interface, the rest of the profile applies, and
	verification reports the GSIM options as unsupported.
	+
	[option]`delay_us` is the longest moderation delay (0 to 500
	microseconds; 0 turns moderation off). [option]`target_intr_rate` is
	the global interrupt rate target in interrupts per second (0 to
	50000000, 0 = none; kernels that call it `target_irq_rate` are
	handled). [option]`hardirq_percent` is the per-CPU target for time in
	hard interrupt context (0 to 100, 0 = none; needs
	CONFIG_IRQ_TIME_ACCOUNTING). [option]`update_ms` is the control loop
	period (1 to 100 ms). With both targets 0 the delay is fixed. An empty
	value leaves the setting alone. Values are checked against these
	ranges before anything is written.
	+
	[option]`irqs` chooses the interrupts GSIM may moderate, as selectors
	separated by `;`: `nic:` followed by NIC names (commas between them,
	shell wildcards allowed) selects the queue interrupts of those NICs;
	`name:` followed by a regular expression selects interrupts whose name
	in `/proc/interrupts` matches it; `all` selects every interrupt GSIM
	can moderate (MSI/MSI-X, edge). Empty leaves every per-interrupt switch
	alone. Interrupts that appear later (a NIC added, a channel count
	changed) or whose switch the kernel reset (a device probed again) are
	moderated too: the plugin looks again on every link change and every
	few seconds.
	+
	[option]`variables_file` names a file of `gsim_<option>=value` lines
	(for example `gsim_delay_us=200`) whose values replace the options
	above; the `gsim` overlay profile uses
	`/etc/tuned/gsim-variables.conf`. A missing file changes nothing.
	+
	Every value and per-interrupt switch changed is saved (also in
	`/run/irqtune`, so that a restarted daemon still restores it) and put
	back when the profile is unapplied.
	+
	.Moderate the queues of all NICs and of NVMe devices
	====
	----
	[gsim]
	delay_us=100
	target_intr_rate=1000000
	hardirq_percent=70
	irqs=nic:*; name:^nvme\d+q\d+
	----
	====
	"""

	# Seams for tests: procfs and sysfs roots, state directory, rescan
	# period (s), whether a watcher thread runs, NAPI IRQ lookup.
	_gsim_proc_root = "/proc"
	_gsim_sysfs_root = "/sys"
	_gsim_state_dir = None
	_gsim_rescan_interval = 5.0
	_gsim_watch = True
	_gsim_napi_irqs = staticmethod(irqs.napi_irqs)

	def __init__(self, *args, **kwargs):
		super(GsimPlugin, self).__init__(*args, **kwargs)
		common.forward_library_log()

	@classmethod
	def _get_config_options(cls):
		return {
			"delay_us": None,
			"target_intr_rate": None,
			"hardirq_percent": None,
			"update_ms": None,
			"irqs": None,
			"variables_file": None,
		}

	@classmethod
	def get_config_options_hints(cls):
		return {
			"delay_us": "maximum moderation delay, 0-500 us (0 = off)",
			"target_intr_rate": "global interrupt rate target, 0-50000000 /s (0 = none)",
			"hardirq_percent": "per-CPU hard interrupt time target, 0-100 % (0 = none)",
			"update_ms": "control loop period, 1-100 ms",
			"irqs": "nic:NAMES; name:REGEX; all (selectors separated by ';')",
			"variables_file": "file of gsim_<option>=value lines overriding the options",
		}

	def _option(self, instance, name):
		return common.expanded_option(self._variables, instance, name)

	def _instance_init(self, instance):
		instance._has_static_tuning = True
		instance._has_dynamic_tuning = False
		instance._lock = threading.RLock()
		instance._watcher = None
		instance._tuner = None
		instance._gsim_missing = None
		options = {name: self._option(instance, name) for name in self._get_config_options()}
		options.update(common.overlay_file_options(self._variables, instance.name,
			options.pop("variables_file"), "gsim_", self._get_config_options()))
		config, errors = gsim.GsimConfig.from_options(options)
		try:
			selection = gsim.IrqSelection.parse(options["irqs"])
		except OptionError as err:
			errors.append(err)
			selection = gsim.IrqSelection()     # the targets still apply, no switch is touched
		for err in errors:
			log.error("instance %s: %s; the option is not applied" % (instance.name, err))
		instance._option_errors = errors
		instance._config = config
		if not config.items() and not selection:
			return
		iface = gsim.detect(self._gsim_proc_root)
		if iface is None:
			instance._gsim_missing = gsim.MISSING_MESSAGE
			log.warning("instance %s: %s" % (instance.name, gsim.MISSING_MESSAGE))
			return
		log.info("instance %s: GSIM interface %s" % (instance.name, iface))
		instance._tuner = gsim.GsimTuner(config, selection, iface,
			state=StateFile("gsim-" + instance.name, self._gsim_state_dir),
			sysfs_root=self._gsim_sysfs_root, napi_irqs=self._gsim_napi_irqs)

	def _instance_cleanup(self, instance):
		self._stop_watcher(instance)

	def _instance_apply_static(self, instance):
		tuner = instance._tuner
		if tuner is None:
			return
		with instance._lock:
			knobs, switched = tuner.apply()
		log.info("instance %s: GSIM: %d values written, moderation allowed on %d IRQs"
			% (instance.name, knobs, switched))
		if tuner.selection and self._gsim_watch and instance._watcher is None:
			instance._watcher = LinkWatcher(
				lambda ifindex: self._rescan(instance),
				lambda: self._rescan(instance),
				interval=self._gsim_rescan_interval)
			instance._watcher.start()

	def _rescan(self, instance):
		with instance._lock:
			if instance._tuner is not None:
				instance._tuner.apply_new_irqs()

	def _stop_watcher(self, instance):
		watcher = getattr(instance, "_watcher", None)
		if watcher is not None:
			instance._watcher = None
			watcher.stop()

	def _instance_verify_static(self, instance, ignore_missing, devices):
		ok = True
		for err in instance._option_errors:
			ok = common.verify_failed("%s: %s" % (instance.name, err))
		if instance._gsim_missing is not None:
			return self._verify_missing(instance, ignore_missing) and ok
		tuner = instance._tuner
		if tuner is None:
			return ok if instance._option_errors else None
		with instance._lock:
			for option, why in sorted(tuner.unsupported.items()):
				if ignore_missing:
					log.info(consts.STR_VERIFY_PROFILE_VALUE_MISSING % ("gsim " + option))
				else:
					ok = common.verify_failed("%s: %s: unsupported: %s"
						% (instance.name, option, why))
			for option, why in sorted(tuner.rejected.items(), key=lambda x: x[0]):
				ok = common.verify_failed("%s: %s" % (instance.name, why))
			for option, where, current, expected in tuner.verify_knobs():
				name = "%s (%s)" % (option, where)
				if current is not None and current == expected:
					log.info(consts.STR_VERIFY_PROFILE_VALUE_OK % (name, current))
				else:
					log.error(consts.STR_VERIFY_PROFILE_VALUE_FAIL % (name, current, expected))
					ok = False
			for irq, name, path, current, expected in tuner.verify_switches():
				device = "irq%d (%s)" % (irq, name)
				if not common.verify_value(device, path, current, expected):
					ok = False
		return ok

	def _verify_missing(self, instance, ignore_missing):
		"""Without GSIM each set option is unsupported, never passed."""
		wanted = sorted(instance._config.items())
		if self._option(instance, "irqs"):
			wanted.append("irqs")
		ok = True
		for option in wanted:
			if ignore_missing:
				log.info(consts.STR_VERIFY_PROFILE_VALUE_MISSING % ("gsim " + option))
			else:
				ok = common.verify_failed("%s: %s: unsupported: the kernel has no GSIM "
					"interface (/proc/irq/sw_moderation or /proc/irq/soft_moderation)"
					% (instance.name, option))
		if ignore_missing:
			return None if ok else False
		return ok

	def _instance_unapply_static(self, instance, rollback=False):
		# The watcher may wait for the lock: stop it before taking it.
		self._stop_watcher(instance)
		tuner = instance._tuner
		if tuner is None:
			return
		with instance._lock:
			if common.wants_restore(rollback):
				tuner.restore_all()
			else:
				log.info("instance %s: GSIM settings left in place; originals kept in %s"
					% (instance.name, tuner.state.path))
