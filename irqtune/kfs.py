# SPDX-License-Identifier: GPL-2.0-or-later
"""The one seam between the library and the kernel's file systems.

Every read and write of procfs and sysfs goes through a KernelFs, so that
tests run the same code on fixture trees (KernelFs(proc=..., sys=...)) and
so that nothing writes outside /proc and /sys.  Writes are one write()
call: procfs and sysfs take a value whole, and a short write would be a
different value.
"""

import os

from . import crashpoint


class KernelFs:
    """procfs and sysfs under two roots (the real ones by default)."""

    def __init__(self, proc="/proc", sys="/sys"):
        self.proc = str(proc)
        self.sys = str(sys)

    def __repr__(self):
        return "KernelFs(proc=%r, sys=%r)" % (self.proc, self.sys)

    def proc_path(self, *parts):
        return os.path.join(self.proc, *(str(p) for p in parts))

    def sys_path(self, *parts):
        return os.path.join(self.sys, *(str(p) for p in parts))

    def irq_path(self, irq, name):
        """/proc/irq/<irq>/<name>."""
        return self.proc_path("irq", irq, name)

    def net_path(self, ifname, *parts):
        """/sys/class/net/<ifname>/..."""
        return self.sys_path("class/net", ifname, *parts)

    # -- access -----------------------------------------------------------

    @staticmethod
    def read_text(path):
        """The file's text, stripped; OSError as the kernel gives it."""
        with open(path) as f:
            return f.read().strip()

    @staticmethod
    def read_optional(path):
        """The file's text, stripped, or None when it cannot be read."""
        try:
            return KernelFs.read_text(path)
        except OSError:
            return None

    @staticmethod
    def read_int(path):
        return int(KernelFs.read_text(path))

    @staticmethod
    def write_text(path, text):
        """One write() of text plus a newline; raises OSError."""
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        try:
            os.write(fd, (text + "\n").encode())
        finally:
            os.close(fd)
        if crashpoint.ENABLED:
            crashpoint.wrote(path)

    @staticmethod
    def write_int(path, value):
        KernelFs.write_text(path, "%d" % value)

    def listdir(self, path):
        """Entries of a directory, [] when it cannot be read."""
        try:
            return sorted(os.listdir(path))
        except OSError:
            return []


# The running kernel's file systems.
KFS = KernelFs()
