# SPDX-License-Identifier: GPL-2.0-or-later
"""Per-NAPI deferral and IRQ suspension.

config: target values (NapiConfig) and the queues= scope (parse_queues);
tuner: NapiTuner, which applies them through napi-set or the device-wide
sysfs fallback, verifies and restores.
"""

from .config import OPTIONS, THREADED_CHOICES, VALUES, NapiConfig, parse_queues
from .tuner import SYSFS_FILES, NapiTuner

__all__ = ["OPTIONS", "VALUES", "THREADED_CHOICES", "NapiConfig", "parse_queues", "SYSFS_FILES",
           "NapiTuner"]
