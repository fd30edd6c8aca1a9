# SPDX-License-Identifier: GPL-2.0-or-later
"""Kernel access, the lowest layer: netlink, procfs and sysfs, system calls,
values, CPU sets, errors (docs/architecture.md, "Layers")."""
