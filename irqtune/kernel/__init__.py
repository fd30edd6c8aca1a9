# SPDX-License-Identifier: GPL-2.0-or-later
"""Kernel access, the lowest layer: netlink families, procfs and sysfs,
system calls, interrupts and their affinity, network devices, network
namespaces, CPU sets, what the kernel offers and the NAPI attributes, the
values administrators write, names, files, crash points, errors
(docs/architecture.md, "Layers")."""
