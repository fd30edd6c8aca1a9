# SPDX-License-Identifier: GPL-2.0-or-later
"""/proc/interrupts of a virtio-net NIC (virtio1 at PCI 0000:00:03.0) with
two queue pairs on four CPUs: IRQ 24 its config vector, 25-28 its queue
vectors.  The procfs fixture of the channels unit tests
(tests/unit/features/test_channels.py) and of the crash harness's queue IRQ
affinity (tests/crash/run.py)."""

INTERRUPTS = """\
           CPU0       CPU1       CPU2       CPU3
 24:          0          0          0          0  PCI-MSIX-0000:00:03.0   0-edge      virtio1-config
 25:          0          0          0          0  PCI-MSIX-0000:00:03.0   1-edge      virtio1-input.0
 26:          0          0          0          0  PCI-MSIX-0000:00:03.0   2-edge      virtio1-output.0
 27:          0          0          0          0  PCI-MSIX-0000:00:03.0   3-edge      virtio1-input.1
 28:          0          0          0          0  PCI-MSIX-0000:00:03.0   4-edge      virtio1-output.1
"""
QUEUE_IRQS = (25, 26, 27, 28)
