# SPDX-License-Identifier: GPL-2.0-or-later
"""Front ends, over the features: `irqtune doctor` (doctor/), `irqtune
metrics` (metrics), `irqtune status --watch` (watch), `irqtune verify`
(verify_report), TuneD's active profile as the doctor and the metrics
read it (activeprofile) and the TuneD plugins' option table
(plugin_options).  The command itself is irqtune/__main__.py.

The doctor, the metrics, watch and verify do not import each other
(.importlinter).
"""
