#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# PCP's pmdaopenmetrics runs every executable in its config.d and ingests
# what it prints as OpenMetrics: the per-NAPI metrics of `irqtune metrics`
# appear as openmetrics.irqtune.irqtune_*, one instance per NAPI (labels
# device, napi, netns), with the same help text Prometheus shows.
# IRQTUNE names another irqtune command (tests run a checkout's).
exec ${IRQTUNE:-/usr/bin/irqtune} metrics
