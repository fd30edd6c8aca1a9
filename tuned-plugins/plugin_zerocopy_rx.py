# SPDX-License-Identifier: GPL-2.0-or-later
from tuned.plugins import irqtune_netdev as netdev

from irqtune.frontends.plugins import PLUGINS


class ZerocopyRxPlugin(netdev.NetDevicePlugin):
	"""
	`zerocopy_rx`::

	Prepares the selected network devices for zero-copy receive - devmem
	TCP (netdev `bind-rx`) and io_uring zero-copy receive
	(`io_uring_register_ifq`) - the way their kernel documentation asks:
	the last rx queues, as many as [option]`queues`, are reserved for
	zero-copy flows, the rest keep serving ordinary traffic. Everything goes through the
	ethtool generic netlink family, flow rules through the `SIOCETHTOOL`
	ioctl.
	+
	The channel count is raised by [option]`queues` (at most to the
	device maximum), or set to [option]`channels` when given.
	[option]`header_split` (`on`/`off`) and [option]`hds_thresh` (bytes;
	0 puts every payload byte in the zero-copy buffer) are ring
	parameters; [option]`ntuple` switches the `rx-ntuple-filter` feature.
	[option]`rss` is `remaining` (the RSS indirection table spreads over
	the queues that are not reserved, like `ethtool -X _dev_ equal _N_`)
	or `leave`. [option]`flow_rules` lists destinations steered to the
	reserved queues, one after the other: `tcp4:5201`,
	`udp6:[2001:db8::1]:9000`. An empty value leaves a setting alone.
	+
	[option]`nics` replaces the instance's `devices=` (a TuneD device
	expression; empty selects no device) and [option]`variables_file`
	names a file of `zerocopy_<option>=value` lines that replace the
	options above: the `zerocopy-rx-host` overlay reads
	`/etc/tuned/zerocopy-rx-host-variables.conf` that way, so stacking
	it keeps the base profile's own variables file.
	+
	[option]`napi_defer_hard_irqs`, [option]`napi_gro_flush_timeout`,
	[option]`napi_irq_suspend_timeout` and [option]`napi_threaded` set
	per-NAPI values (as the `napi` plugin does) on the NAPIs of the
	reserved queues only; exclude those queues from other `napi`
	instances (their [option]`queues`).
	+
	[option]`queue_leases` leases reserved queues to containers (Linux
	7.1 queue leases, netdev `queue-create`): `QUEUE:NAMESPACE/DEVICE`
	items such as `3:pod-a/nk0` name a reserved rx queue and a netkit
	device by name in a named network namespace (`/run/netns/NAME`,
	`ip netns`), so they can be written before the container exists; the
	lease is made when both exist, also when the container starts later.
	The container then binds devmem or io_uring zero-copy receive to the
	netkit device's new queue. The kernel ends a lease only with its
	netkit device: unapplying the profile deletes the netkit devices
	holding the leases this plugin made (never one holding someone
	else's), so the container loses that interface. The lender's driver
	needs queue management ops (mlx5, bnxt, fbnic, gve; netdevsim).
	+
	Binding memory to the reserved queues is the application's part.
	Instances of this plugin should run before `napi` instances
	(`priority=` lower than theirs): the channel change recreates NAPIs.
	+
	Every original value is saved (also in `/run/irqtune`) and restored
	when the profile is unapplied: header split configured `auto` comes
	back as `auto`, an RSS table the driver had spread itself comes back
	as the driver's default, and only the flow rules this plugin added
	are deleted. A setting the driver does not support is named once per
	device and left out of verify; a value it refuses is named once with
	the driver's message and shown by verify. Devices added later are
	prepared when they appear, and flow rules a driver reset dropped are
	inserted again.
	+
	.Reserve two rx queues of eth1 for devmem TCP on port 5201
	====
	----
	[zerocopy_rx]
	priority=-10
	devices=eth1
	queues=2
	flow_rules=tcp4:5201 tcp6:5201
	----
	====
	"""

	_feature = PLUGINS["zerocopy_rx"]
