# SPDX-License-Identifier: GPL-2.0-or-later
"""Per-NAPI deferral and IRQ suspension."""

from .config import OPTIONS, VALUES, NapiConfig, parse_queues  # noqa: F401
from .tuner import NapiTuner, build  # noqa: F401
