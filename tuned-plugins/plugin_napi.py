# SPDX-License-Identifier: GPL-2.0-or-later
from tuned.plugins import irqtune_netdev as netdev

from irqtune.frontends.plugins import PLUGINS


class NapiPlugin(netdev.NetDevicePlugin):
	"""
	`napi`::

	Sets IRQ deferral and IRQ suspension per NAPI instance of the selected
	network devices through the netdev generic netlink family (`napi-set`,
	Linux 6.13 and newer). On older kernels, [option]`defer_hard_irqs`,
	[option]`gro_flush_timeout` and [option]`threaded` fall back to the
	device-wide files in `/sys/class/net/_dev_/`; IRQ suspension has no
	such fallback.
	+
	[option]`defer_hard_irqs` is how many times in a row NAPI polls that
	find work keep the device IRQ masked (0 to 2147483647).
	[option]`gro_flush_timeout` is the timer that polls again while IRQs
	stay masked, and [option]`irq_suspend_timeout` the longest time an
	application busy polling with `prefer_busy_poll` may keep IRQs
	suspended. Timeouts are nanoseconds, or take a unit: `ns`, `us`, `ms`,
	`s` (`20us` or `20 us`), at most 1 s: a longer timer stalls receive
	long enough for TCP to retransmit, and is most likely a unit typo.
	Numbers are plain decimal digits (no `1_000`).
	[option]`threaded` is `disabled`, `enabled` or `busy-poll`
	(Linux 6.19). An empty value leaves the setting alone; a bad one is
	left out, with one log line naming it.
	+
	[option]`queues` limits the tuning to the NAPIs serving the listed rx
	queue indexes (for example `0-3,8`, each at most 65535), where the
	driver links queues to NAPIs. A bad [option]`queues` makes the
	instance tune nothing, rather than every NAPI.
	+
	Suspension only acts for epoll contexts with `prefer_busy_poll` set
	(see the `busy_poll_optin` plugin), and only together with non-zero
	deferral. On a kernel built without busy polling
	(`CONFIG_NET_RX_BUSY_POLL`) [option]`irq_suspend_timeout` and
	`threaded=busy-poll` are not applied, with one warning naming it. On
	PREEMPT_RT kernels the timer behind [option]`gro_flush_timeout` and
	[option]`irq_suspend_timeout` runs in the `ktimers` thread
	(SCHED_FIFO 1), so higher-priority realtime threads on the queue's CPU
	delay it.
	+
	The original value of every NAPI is saved (also in `/run/irqtune`, so
	that a restarted daemon still restores it) and put back when the
	profile is unapplied. NAPIs that a driver recreates with default values
	(link down/up, channel changes) are tuned again, on link events and
	every [option]`recheck_interval` seconds (default 5; 0 leaves only the
	link events). Virtual devices such
	as veth are only tuned when [option]`devices` or
	[option]`devices_udev_regex` selects devices explicitly.
	+
	[option]`gro_flush_timeout` and [option]`irq_suspend_timeout` may be
	`auto`: they start at the series' values (20 us, 20 ms) and then follow
	the services named in [option]`auto_services` (systemd services, or
	absolute paths of pid files, separated by commas; a pid file is read
	only when it is a regular file owned by root that no group or other
	may write, on a disk filesystem or tmpfs, in directories owned by root
	that no group or other may write (or sticky), with no symbolic link on
	the way, and its pid only while its process is
	the one that wrote it - started before the file was last written, so
	a pid taken over after the service ended is not measured - and neither
	init (pid 1, what a pid file written inside a pid namespace may hold)
	nor a thread, else it is
	refused in one log line, said once per file and cause, and the other
	services are measured): as soon as those
	use 5 % of a CPU, and then at most every [option]`auto_interval`
	seconds (10 to 86400, default 600), the plugin records their
	`epoll_wait` calls for 3 s, derives the values as `irqtune doctor`
	recommends them, and sets them when they leave a band of x1.5 around
	the values set; each change is one log line with its figures. A
	window with too few busy periods is tried again after 60 s, then
	twice as long each time, up to an hour. The
	measuring rides on the periodic re-check, so
	[option]`recheck_interval` must not be 0. `tuned-adm verify` checks
	the values last set; the originals are restored as always.
	+
	.Suspend IRQs for up to 20 ms on the first four rx queues of eth0
	====
	----
	[napi]
	devices=eth0
	queues=0-3
	defer_hard_irqs=100
	gro_flush_timeout=20us
	irq_suspend_timeout=20ms
	----
	====
	"""

	_feature = PLUGINS["napi"]
