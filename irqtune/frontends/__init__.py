# SPDX-License-Identifier: GPL-2.0-or-later
"""The front ends, over the kernel, shared and features layers: the
`irqtune` commands (doctor, metrics, status, verify_report), TuneD's active
profile (activeprofile) and the plugins' registry (plugins: options and build);
docs/architecture.md."""
