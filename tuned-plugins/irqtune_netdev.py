# SPDX-License-Identifier: GPL-2.0-or-later
"""The base of the irqtune plugins that tune net devices (napi,
nic_housekeeping, zerocopy_rx): TuneD's hotplug devices, the default
devices=* limited to physical NICs, and renames - reported by TuneD 2.25+
(_move_device) or not (a link event under a name TuneD does not know,
_retune_link); the tuner follows them (irqtune.shared.tuner's contract).

Installed beside the plugins in TuneD's plugin package, like
irqtune_common.py; not a plugin (no "plugin_" prefix).
"""

import socket

from tuned.plugins import hotplug
from tuned.plugins import irqtune_common as common

from irqtune.kernel.netdevs import (default_selects_physical, ifname_of, is_virtual_netdev,
                                    netdev_names)
from irqtune.shared.overlay import overlaid

log = common.log


class NetDevicePlugin(common.TunerPlugin, hotplug.Plugin):
	"""Net devices with hotplug; the tuner's calls take device names.

	Device choice follows the stock net plugin (physical NICs) for the
	default devices=*, but any explicit devices= or devices_udev_regex=
	also reaches virtual devices (veth, ...), except lo.
	"""

	def _init_devices(self):
		self._devices_supported = True
		self._free_devices = set()
		self._assigned_devices = set()
		for device in self._hardware_inventory.get_devices("net"):
			if device.sys_name != "lo":
				self._free_devices.add(device.sys_name)
		self._hardware_inventory.subscribe(self, "net", self._hardware_events_callback)

	def _hardware_events_cleanup(self):
		self._hardware_inventory.unsubscribe(self)

	def _move_device(self, device_name):
		# TuneD 2.25+ calls this for a renamed NIC with the new name only;
		# the tuner knows the device by its ifindex.  TuneD's own device sets
		# take the new name too, so verify and a later remove event find it.
		# Guarded like every entry point (ENTRY_POINTS).
		ifindex = socket.if_nametoindex(device_name)
		for instance in list(self._instances.values()):
			if instance._tuner is None:
				continue
			with instance._lock:
				old = instance._tuner.follow_rename(device_name, ifindex)
				if old is None:
					continue
				for names in (instance.processed_devices, instance.assigned_devices,
						self._assigned_devices):
					if old in names:
						names.discard(old)
						names.add(device_name)
				instance._devices_seen.add(device_name)
			log.info("instance %s: %s is now called %s; its originals follow it"
				% (instance.name, old, device_name))
			return

	def instance_verify_tuning(self, instance, ignore_missing):
		# TuneD skips an instance that matched no device as inactive, so
		# its verify passes for a profile that tunes nothing (a typo in
		# devices=, a NIC named otherwise).  That fails here; an instance
		# whose devices were all unplugged since it tuned them is reported.
		if instance.processed_devices or instance.assigned_devices:
			return super().instance_verify_tuning(instance, ignore_missing)
		selector = _selector(instance)
		if instance._devices_seen:
			log.info("instance %s: %s matches no device now; it tuned %s before (unplugged?), "
				"nothing to verify" % (instance.name, selector,
				common.summarise(sorted(instance._devices_seen))))
			return None
		here = netdev_names()
		physical = instance.devices_udev_regex is None and \
			default_selects_physical(instance.devices_expression)
		return common.verify_failed("%s: %s matches no network device%s; devices here: %s"
			% (instance.name, selector, " (* means physical NICs)" if physical else "",
			", ".join(here) or "none"))

	def _get_device_objects(self, devices):
		return [self._hardware_inventory.get_device("net", x) for x in devices]

	def _get_matching_devices(self, instance, devices):
		nics = self._nics(instance)
		if nics is not None:
			# named explicitly: virtual devices (veth) too, never lo
			return set(self._device_matcher.match_list(nics, devices)) - {"lo"} \
				if nics.strip() else set()
		matched = super()._get_matching_devices(instance, devices)
		if instance.devices_udev_regex is None and \
				default_selects_physical(instance.devices_expression):
			matched = {d for d in matched if not is_virtual_netdev(d)}
		return matched

	def _nics(self, instance):
		"""The nics option (zerocopy_rx), which replaces devices=, as its
		variables file may set it (read again each time: device matching
		runs before _instance_init); None when the plugin has none or it is
		unset."""
		if not any(o.name == "nics" for o in self._feature.options):
			return None
		return overlaid(self._expanded_options(instance), self._feature.options,
			self._feature.overlay, self._expand).get("nics")

	def _instance_apply_static(self, instance):
		with instance._lock:
			devices = sorted(instance.assigned_devices)
			if devices:
				instance._devices_seen.update(devices)
				self._apply_devices(instance, devices)
		self._start_watching(instance)

	def _added_device_apply_tuning(self, instance, device_name):
		with instance._lock:
			instance._devices_seen.add(device_name)
			self._apply_devices(instance, [device_name])

	def _retune(self, instance, device):
		if device is not None and device in instance.processed_devices:
			super()._retune(instance, device)

	def _retune_link(self, instance, ifindex):
		# A name TuneD does not know may be a device renamed without a
		# move event (TuneD < 2.25): the tuner knows it by its ifindex.
		name = ifname_of(ifindex)
		if name not in instance.processed_devices and instance._tuner is not None:
			name = instance._tuner.known_as(ifindex, instance.processed_devices) or name
		self._retune(instance, name)

	def _retune_all(self, instance):
		for device in sorted(instance.processed_devices):
			self._retune(instance, device)

	def _verify_result(self, ok, checked):
		return ok

	def _removed_device_unapply_tuning(self, instance, device_name):
		# Also called when a device that still exists moves to another
		# instance (tuned-adm instance_acquire_devices): its originals go
		# back first, else the next instance would save tuned values as
		# originals.  A device that is gone only has its originals dropped.
		with instance._lock:
			if instance._tuner is not None:
				instance._tuner.restore(device_name)


def _selector(instance):
	"""The option that chose the instance's devices, as TuneD expanded it."""
	if instance.devices_udev_regex is not None:
		return "devices_udev_regex=%s" % instance.devices_udev_regex
	return "devices=%s" % (instance.devices_expression or "*").strip()

