# SPDX-License-Identifier: GPL-2.0-or-later
"""A process's /proc/PID/stat, as the measurement reads it: its state,
flags, CPU time and start time (proc(5); the fields after the command
name, which may itself hold spaces and parentheses)."""

import os
import time

from ...kernel.kfs import KFS

PF_KTHREAD = 0x00200000


class Stat:
    """The fields of one read of /proc/PID/stat."""

    def __init__(self, text):
        fields = text.rpartition(")")[2].split()
        self.state = fields[0]
        self.flags = int(fields[6])
        self.cpu_ticks = int(fields[11]) + int(fields[12])      # utime + stime
        self.start_ticks = int(fields[19])                      # since boot

    @property
    def user_running(self):
        """Neither a zombie (or dead) nor a kernel thread."""
        return self.state not in ("Z", "X", "x") and not self.flags & PF_KTHREAD

    def started_at(self):
        """The start as wall-clock seconds (time.time()'s), to the clock
        tick (truncated)."""
        booted_at = time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)
        return booted_at + self.start_ticks / os.sysconf("SC_CLK_TCK")


def read(pid, kfs=KFS):
    """Stat of pid, None when it is gone (or the line cannot be read)."""
    text = kfs.read_optional(kfs.proc_path(pid, "stat"))
    if not text:
        return None
    try:
        return Stat(text)
    except (IndexError, ValueError):
        return None
