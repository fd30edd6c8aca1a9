# SPDX-License-Identifier: GPL-2.0-or-later
"""Per-NAPI deferral and IRQ suspension."""

from .config import OPTIONS, QUEUE_VALUES, VALUES, NapiConfig, parse_queues  # noqa: F401
from .tuner import NapiTuner, build, build_for_queues  # noqa: F401
