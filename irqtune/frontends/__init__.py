# SPDX-License-Identifier: GPL-2.0-or-later
"""Front ends over the features: the doctor, metrics, status --watch, verify,
TuneD's active profile, the plugins' option table (docs/architecture.md)."""
