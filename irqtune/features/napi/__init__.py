# SPDX-License-Identifier: GPL-2.0-or-later
"""Per-NAPI deferral and IRQ suspension.

config: target values (NapiConfig) and the queues= scope (parse_queues);
tuner: NapiTuner, which applies them through napi-set or the device-wide
sysfs fallback, verifies and restores.
"""

from .config import OPTIONS, VALUES, NapiConfig, parse_queues  # noqa: F401
from .tuner import NapiTuner  # noqa: F401
