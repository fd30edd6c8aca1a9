# SPDX-License-Identifier: GPL-2.0-or-later
"""TuneD adapter for irqtune.features.service_optin (see there for the rules)."""

from tuned.plugins import irqtune_common as common

from irqtune.frontends.plugins import PLUGINS


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

	_feature = PLUGINS["busy_poll_optin"]
