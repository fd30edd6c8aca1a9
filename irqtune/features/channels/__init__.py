# SPDX-License-Identifier: GPL-2.0-or-later
"""Housekeeping-limited NIC queues: channel counts and queue IRQ affinity.

On a host whose CPUs are mostly isolated, a NIC should have no more queues
than there are housekeeping CPUs, and its queue IRQs should fire on those
CPUs only; otherwise moving every vector onto the few housekeeping CPUs
exhausts their interrupt vectors.  HousekeepingTuner does both for a set of
devices, saves what it changes (in memory and in a Ledger) and restores
it exactly.

Order matters: originals of the queue IRQ affinities are read before the
channel count changes (drivers re-spread their IRQs on a channel change),
channels are set, then the queue IRQs are looked up again (some drivers
allocate new vectors) and made affine.  Restore runs the other way round:
channels first, then the saved affinities.

Refusals (EBUSY, EOPNOTSUPP, EINVAL from the driver; EPERM, or EIO before
Linux 6.12, from a managed IRQ) are logged once per device and cause and
kept for verify.
"""

from .config import OPTIONS, HousekeepingConfig, parse_channels, parse_irq_affinity  # noqa: F401
from .counts import plan_channels  # noqa: F401
from .tuner import HousekeepingTuner, build  # noqa: F401
