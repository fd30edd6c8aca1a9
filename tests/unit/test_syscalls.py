# SPDX-License-Identifier: GPL-2.0-or-later
"""The system call numbers the doctor (pidfd_getfd, pidfd_open) and the
measurement (perf_event_open) call libc's syscall() with, from the
kernel's tables (arch/*/entry/syscalls/syscall*.tbl, arch/*/kernel/
syscalls/syscall*.tbl, include/uapi/asm-generic/unistd.h)."""

import errno
import os

import pytest

from irqtune import syscalls
from irqtune.errors import UnsupportedError


@pytest.mark.parametrize("name, machine, number", [
    ("pidfd_getfd", "x86_64", 438), ("pidfd_getfd", "aarch64", 438),
    ("pidfd_getfd", "alpha", 548), ("pidfd_getfd", "mips64", 5438),
    ("pidfd_open", "x86_64", 434), ("pidfd_open", "alpha", 544),
    ("perf_event_open", "x86_64", 298), ("perf_event_open", "aarch64", 241),
    ("perf_event_open", "s390x", 331), ("perf_event_open", "armv7l", 364),
])
def test_numbers_per_architecture(name, machine, number):
    assert syscalls.number(name, machine) == number


def test_unknown_architecture_is_named_with_the_known_ones():
    with pytest.raises(UnsupportedError,
                       match=r"^pidfd_getfd: system call number unknown for architecture "
                             r"sparc64 \(known: aarch64, alpha, "):
        syscalls.number("pidfd_getfd", "sparc64")


def test_call_returns_the_result_or_raises_with_errno():
    """getpid and close on a closed fd, through the table's own machinery."""
    nr_getpid = {"x86_64": 39, "aarch64": 172}.get(os.uname().machine)
    if nr_getpid is None:
        pytest.skip("getpid's number is written here for x86_64 and aarch64 only")
    assert syscalls.call(nr_getpid) == os.getpid()
    r, w = os.pipe()
    os.close(r)
    os.close(w)
    nr_close = {"x86_64": 3, "aarch64": 57}[os.uname().machine]
    with pytest.raises(OSError) as err:
        syscalls.call(nr_close, r)
    assert err.value.errno == errno.EBADF
