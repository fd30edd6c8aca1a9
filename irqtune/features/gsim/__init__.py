# SPDX-License-Identifier: GPL-2.0-or-later
"""Global Software Interrupt Moderation (GSIM): detect, configure, restore."""

from .config import OPTIONS, OVERLAY_PREFIX, GsimConfig, IrqSelection  # noqa: F401
from .interface import (KNOBS, MISSING_MESSAGE, RT_MISSING_MESSAGE,  # noqa: F401
                        SHAPE_LATEST, SHAPE_V1, SHAPE_V4, detect, parse_switch)
from .tuner import GsimTuner, build  # noqa: F401
