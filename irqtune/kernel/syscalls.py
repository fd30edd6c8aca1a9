# SPDX-License-Identifier: GPL-2.0-or-later
"""System calls the library makes through libc's syscall(): Python's os
module does not wrap perf_event_open, pidfd_getfd and the mount API
(fsopen, fsconfig, fsmount), and pidfd_open only from Python 3.9 on.

Their numbers depend on the architecture.  Calls added since Linux 5.1
share one number on every architecture but alpha, which adds 110, and
64-bit MIPS, which adds 5000 (pidfd_open, pidfd_getfd); older ones differ
everywhere (perf_event_open).  The table names what is known rather than
assuming x86_64, and is the one place an architecture is added.
"""

import ctypes
import platform

from .errors import UnsupportedError, errno_error

# Linux >= 5.1: the number of every architecture in asm-generic's table
# (and those that follow it), alpha's, and 64-bit MIPS's: its n64 ABI (what
# Debian's mips64el runs) numbers from __NR_Linux = 5000
# (arch/mips/include/uapi/asm/unistd.h).  Machines by the names Linux's
# uname gives them (platform.machine()): arm64 is "aarch64".  Each entry
# is checked against the kernel's tables (tests/unit/kernel/syscall_fixtures).
_SHARED = ("x86_64", "aarch64", "armv7l", "i686", "i386", "ppc64le", "ppc64",
           "s390x", "riscv64", "loongarch64")


def _shared(number):
    return dict({machine: number for machine in _SHARED}, alpha=number + 110,
                mips64=number + 5000)


NUMBERS = {
    "perf_event_open": {"x86_64": 298, "aarch64": 241, "riscv64": 241, "loongarch64": 241,
                        "ppc64le": 319, "ppc64": 319, "s390x": 331, "i686": 336,
                        "i386": 336, "armv7l": 364},
    "pidfd_open": _shared(434),         # Linux 5.3
    "pidfd_getfd": _shared(438),        # Linux 5.6
    "fsopen": _shared(430),             # Linux 5.2
    "fsconfig": _shared(431),
    "fsmount": _shared(432),
}

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def number(name, machine=None):
    """The number of system call name on machine (default: this one);
    UnsupportedError naming the known ones where it is not in the table."""
    machine = machine or platform.machine()
    known = NUMBERS[name]
    if machine not in known:
        raise UnsupportedError("%s: system call number unknown for architecture %s (known: %s)"
                               % (name, machine, ", ".join(sorted(known))))
    return known[machine]


def call(nr, *args):
    """syscall(nr, *args) (args as ctypes takes them): its non-negative
    result, or OSError with the errno it set."""
    ret = _libc.syscall(ctypes.c_long(nr), *args)
    if ret < 0:
        raise errno_error(ctypes.get_errno())
    return ret
