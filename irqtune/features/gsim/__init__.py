# SPDX-License-Identifier: GPL-2.0-or-later
"""Global Software Interrupt Moderation (GSIM): detect, configure, restore.

interface: the three procfs shapes a kernel may carry, their knobs and
per-IRQ switches; config: target values and IRQ selection; tuner: the
tuner and its builder from a profile's options.
"""

from ...kernel.irqs import parse_interrupts, read_interrupts
from .config import OPTIONS, OVERLAY_PREFIX, GsimConfig, IrqSelection
from .interface import (KNOBS, MISSING_MESSAGE, RT_MISSING_MESSAGE, SHAPE_LATEST, SHAPE_V1,
                        SHAPE_V4, detect, parse_switch)
from .tuner import GsimTuner, build_tuner

__all__ = ["parse_interrupts", "read_interrupts", "KNOBS", "MISSING_MESSAGE", "OPTIONS",
           "OVERLAY_PREFIX", "RT_MISSING_MESSAGE", "SHAPE_LATEST", "SHAPE_V1", "SHAPE_V4",
           "detect", "parse_switch", "GsimConfig", "GsimTuner", "IrqSelection", "build_tuner"]
