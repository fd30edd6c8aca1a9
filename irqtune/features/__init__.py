# SPDX-License-Identifier: GPL-2.0-or-later
"""Features, one tuner per kernel mechanism; none imports another
(docs/architecture.md, "Layers")."""
