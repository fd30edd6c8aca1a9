# SPDX-License-Identifier: GPL-2.0-or-later
"""irqtune: kernel access and tuning logic behind the irqtune TuneD plugins.

Importable without TuneD; logs through the standard ``logging`` module
under the ``irqtune`` logger.
"""

__version__ = "0.1.0"
