# SPDX-License-Identifier: GPL-2.0-or-later
"""Kernel access, the lowest layer: the netlink families (netlink/),
procfs and sysfs (kfs), system calls (syscalls), interrupts and their
affinity (interrupts, irqs), network devices (netdevs), CPU sets (cpus),
what the running kernel offers (caps), the values administrators write
(values, names), the library's errors (errors), files written with their
modes (files) and the crash harness's write points (crashpoint).

Imports nothing of the layers above (.importlinter).
"""
