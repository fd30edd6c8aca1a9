#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# PCP's pmdaopenmetrics runs every executable in its config.d and ingests
# what it prints as OpenMetrics: the per-NAPI metrics of `irqtune metrics`
# appear as openmetrics.irqtune.irqtune_*, one instance per NAPI (labels
# device, napi, netns), with the same help text Prometheus shows.
# IRQTUNE names another irqtune command (tests run a checkout's).
#
# PCP before 6.1 runs these scripts as root (later ones as the pcp user).
# The metrics need no root (irqtune(8), METRICS: only the preload state of
# services running as other users does), so root drops to the
# irqtune-metrics user, with no capabilities left, before irqtune runs.
user=irqtune-metrics
if [ "$(id -u)" = 0 ]; then
	if ! id "$user" >/dev/null 2>&1; then
		echo "irqtune.sh: user $user does not exist (systemd-sysusers irqtune-metrics.conf creates it); not running irqtune as root" >&2
		exit 1
	fi
	exec setpriv --reuid="$user" --regid="$user" --clear-groups --inh-caps=-all \
		--bounding-set=-all --no-new-privs -- ${IRQTUNE:-/usr/bin/irqtune} metrics
fi
exec ${IRQTUNE:-/usr/bin/irqtune} metrics
