# SPDX-License-Identifier: GPL-2.0-or-later
"""Zero-copy receive (devmem TCP, io_uring zcrx): NIC preparation."""

from .config import OPTIONS, OVERLAY_PREFIX, ZeroCopyConfig  # noqa: F401
from .leases import HeldLease, held_leases  # noqa: F401
from .tuner import ZeroCopyRxTuner, build  # noqa: F401
