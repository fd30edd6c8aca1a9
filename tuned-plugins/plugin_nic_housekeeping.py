# SPDX-License-Identifier: GPL-2.0-or-later
from tuned.plugins import irqtune_netdev as netdev

from irqtune.frontends.plugins import PLUGINS


class NicHousekeepingPlugin(netdev.NetDevicePlugin):
	"""
	`nic_housekeeping`::

	Keeps the queues of the selected network devices, and the interrupts
	serving them, on the housekeeping CPUs of a host whose other CPUs are
	isolated (realtime and NFV hosts). Channel counts are read and set
	through the ethtool generic netlink family; queue IRQ affinity through
	`/proc/irq/_N_/smp_affinity_list`.
	+
	[option]`channels` is `housekeeping` (as many channels as there are
	housekeeping CPUs, at most the device maximum) or a count. Combined
	channels are set where the driver has them, else rx and tx channels.
	[option]`irq_affinity` is `housekeeping` or a CPU list; it applies to
	the queue interrupts of the device (found through napi-get, the
	device's MSI vectors and the interrupt names), not to its
	configuration or mailbox vectors. An empty value leaves the setting
	alone.
	+
	[option]`housekeeping_cpus` names the housekeeping CPUs explicitly;
	when it is empty they are the online CPUs minus the isolated ones
	(`/sys/devices/system/cpu/isolated`, `nohz_full`, `isolcpus=` on the
	kernel command line), or all online CPUs when nothing is isolated.
	+
	Instances of this plugin should run before `napi` instances
	(`priority=` lower than theirs): a channel change recreates or removes
	NAPIs. Original channel counts and affinities are saved (also in
	`/run/irqtune`) and restored when the profile is unapplied. Drivers
	that refuse a count and managed interrupts whose affinity the kernel
	owns are reported once and shown by verify. Devices added later or
	re-created by a driver reload are tuned when they appear, and queue
	interrupts that appear after a driver reset are made affine; changes
	someone else makes to known interrupts or to the channel count are
	shown by verify, not reverted.
	+
	.Two combined channels on the two housekeeping CPUs of eth0
	====
	----
	[nic_housekeeping]
	priority=-10
	devices=eth0
	channels=housekeeping
	irq_affinity=housekeeping
	housekeeping_cpus=0-1
	----
	====
	"""

	_feature = PLUGINS["nic_housekeeping"]
