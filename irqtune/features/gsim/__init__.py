# SPDX-License-Identifier: GPL-2.0-or-later
"""Global Software Interrupt Moderation (GSIM): detect, configure, restore.

interface: the three procfs shapes a kernel may carry, their knobs and
per-IRQ switches; config: target values and IRQ selection; tuner: the
tuner and its builder from a profile's options.
"""

from ...kernel.irqs import IrqInfo, parse_interrupts, read_interrupts
from .config import OPTIONS, OVERLAY_PREFIX, GsimConfig, IrqSelection
from .interface import (KNOBS, MISSING_MESSAGE, RT_MISSING_MESSAGE, RANGES, SHAPE_LATEST,
                        SHAPE_NAMES, SHAPE_V1, SHAPE_V4, GsimInterface, GsimWriteError,
                        accepted_range, detect, missing_message, parse_switch)
from .tuner import GsimTuner, build_tuner

__all__ = ["IrqInfo", "parse_interrupts", "read_interrupts", "KNOBS", "MISSING_MESSAGE", "OPTIONS",
           "OVERLAY_PREFIX", "RT_MISSING_MESSAGE", "missing_message", "RANGES", "SHAPE_LATEST",
           "SHAPE_NAMES", "SHAPE_V1", "SHAPE_V4", "GsimInterface", "GsimWriteError",
           "accepted_range", "detect", "parse_switch", "GsimConfig", "GsimTuner", "IrqSelection",
           "build_tuner"]
