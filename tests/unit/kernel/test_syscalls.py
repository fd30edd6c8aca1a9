# SPDX-License-Identifier: GPL-2.0-or-later
"""The system call numbers the doctor (pidfd_getfd, pidfd_open) and the
measurement (perf_event_open) call libc's syscall() with, from the
kernel's tables (arch/*/entry/syscalls/syscall*.tbl, arch/*/kernel/
syscalls/syscall*.tbl, include/uapi/asm-generic/unistd.h)."""

import errno
import os
import re

import pytest

from irqtune.kernel import syscalls
from irqtune.kernel.errors import UnsupportedError


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


# -- every entry of the table against the kernel's own tables (issue 39 item 10)

FIXTURES = os.path.join(os.path.dirname(__file__), "syscall_fixtures")
# platform.machine() names -> (fixture, number added by the ABI)
MACHINES = {
    "x86_64": ("x86_64.h", 0), "i686": ("i386.h", 0), "i386": ("i386.h", 0),
    "aarch64": ("asm-generic.h", 0),
    "riscv64": ("asm-generic.h", 0), "loongarch64": ("asm-generic.h", 0),
    "armv7l": ("arm.tbl", 0), "ppc64le": ("powerpc.tbl", 0), "ppc64": ("powerpc.tbl", 0),
    "s390x": ("s390.tbl", 0), "alpha": ("alpha.tbl", 0), "mips64": ("mips-n64.tbl", 5000),
}
_DEFINE = re.compile(r"^#define __NR_(\w+) (\d+)$")
_TBL = re.compile(r"^(\d+)\s+\w+\s+(\w+)\b")


def kernel_numbers(fixture, offset):
    """{name: number} of a fixture: header #defines or table lines."""
    found = {}
    with open(os.path.join(FIXTURES, fixture)) as f:
        for line in f:
            m = _DEFINE.match(line.strip())
            if m:
                found[m.group(1)] = int(m.group(2)) + offset
                continue
            m = _TBL.match(line)
            if m:
                found[m.group(2)] = int(m.group(1)) + offset
    return found


@pytest.mark.parametrize("name", sorted(syscalls.NUMBERS))
def test_every_number_in_the_table_is_the_kernels(name):
    """A wrong number would call another system call (i686's 336 is
    perf_event_open; 335 is rt_tgsigqueueinfo)."""
    table = syscalls.NUMBERS[name]
    assert set(table) <= set(MACHINES), set(table) - set(MACHINES)
    for machine, number in sorted(table.items()):
        fixture, offset = MACHINES[machine]
        assert kernel_numbers(fixture, offset).get(name) == number, (name, machine, number)


def test_the_kernels_tables_are_all_in_the_table():
    """What a fixture knows, the table has: no architecture left out."""
    for machine, (fixture, offset) in MACHINES.items():
        for name, number in kernel_numbers(fixture, offset).items():
            assert syscalls.NUMBERS[name].get(machine) == number, (name, machine)


@pytest.mark.parametrize("header,machine", [
    ("/usr/include/x86_64-linux-gnu/asm/unistd_64.h", "x86_64"),
    ("/usr/include/x86_64-linux-gnu/asm/unistd_32.h", "i686"),
    ("/usr/include/asm-generic/unistd.h", "aarch64")])
def test_this_hosts_headers_agree(header, machine):
    """The fixtures as this host's kernel headers have them, where installed."""
    if not os.path.exists(header):
        pytest.skip("%s not installed" % header)
    with open(header) as f:
        defined = {m.group(1): int(m.group(2)) for m in
                   (_DEFINE.match(line.strip()) for line in f) if m}
    for name, table in syscalls.NUMBERS.items():
        assert defined[name] == table[machine], (name, machine)
