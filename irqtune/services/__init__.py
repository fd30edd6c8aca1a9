# SPDX-License-Identifier: GPL-2.0-or-later
"""Shared services over kernel access: the ledger, the tuner contract, option
declarations, systemd, counters, the measurement (docs/architecture.md)."""
