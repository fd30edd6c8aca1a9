# SPDX-License-Identifier: GPL-2.0-or-later
"""The one seam between the library and the kernel's file systems.

Every read and write of procfs and sysfs goes through a KernelFs, so that
tests run the same code on fixture trees (KernelFs(proc=..., sys=...)) and
so that nothing writes outside /proc and /sys.  Writes are one write()
call: procfs and sysfs take a value whole, and a short write would be a
different value.

Text is read as UTF-8 with every byte that does not decode kept as a lone
surrogate (surrogateescape, as os.listdir() and os.readlink() return
names): much of it is shaped by other users - a process's name and the
paths it maps, the mount points below their directories - and no byte
sequence may stop a reader.  A path read so is the same path to os
functions; irqtune.kernel.names.shown() prints such a byte as \\xNN.
"""

import os

from . import crashpoint


# Where systemd mounts its own hierarchy, in the order it prefers them
# (systemd's src/shared/mount-setup.c and cg_unified_cached()).
_SYSTEMD_HIERARCHIES = (("/sys/fs/cgroup", "cgroup2"),
                        ("/sys/fs/cgroup/unified", "cgroup2"),
                        ("/sys/fs/cgroup/systemd", "cgroup"))


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

    def systemd_cgroup_root(self):
        """The directory of systemd's own control group hierarchy, below
        which a unit's ControlGroup= lies, by what /proc/self/mountinfo says
        is mounted where systemd mounts it: cgroup v2 at /sys/fs/cgroup
        (unified), else cgroup v2 at /sys/fs/cgroup/unified (hybrid, which
        systemd tracks units in), else the v1 hierarchy name=systemd at
        /sys/fs/cgroup/systemd (legacy: RHEL 8's default).  /sys/fs/cgroup
        when mountinfo says none of them."""
        mounted = {}
        text = self.read_optional(self.proc_path("self", "mountinfo")) or ""
        for line in text.splitlines():
            # "36 25 0:31 / /sys/fs/cgroup rw,... shared:9 - cgroup2 cgroup2 rw,...";
            # a later line at the same mount point is mounted on top and wins
            mount, _, fs = line.partition(" - ")
            mount, fs = mount.split(), fs.split()
            if len(mount) >= 5 and len(fs) >= 3:
                mounted[mount[4]] = (fs[0], fs[2].split(","))
        for point, fstype in _SYSTEMD_HIERARCHIES:
            found, options = mounted.get(point, (None, ()))
            if found == fstype and (fstype == "cgroup2" or "name=systemd" in options):
                return self.sys_path(point[len("/sys/"):])
        return self.sys_path("fs/cgroup")

    def cgroup_procs(self, cgroup, root=None):
        """The pids in a control group of systemd's hierarchy (a unit's
        ControlGroup=, root from systemd_cgroup_root()); [] when it cannot
        be read."""
        root = root or self.systemd_cgroup_root()
        text = self.read_optional(os.path.join(root, cgroup.lstrip("/"), "cgroup.procs"))
        return [int(p) for p in (text or "").split() if p.isascii() and p.isdigit()]

    # -- access -----------------------------------------------------------

    @staticmethod
    def open_text(path):
        """The file opened for reading its text line by line, decoded as
        every read here is; OSError as the kernel gives it."""
        return open(path, encoding="utf-8", errors="surrogateescape")

    @staticmethod
    def read_text(path):
        """The file's text, stripped; OSError as the kernel gives it."""
        with KernelFs.open_text(path) as f:
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

    @staticmethod
    def listdir(path):
        """Entries of a directory, sorted; [] when it cannot be read."""
        try:
            return sorted(os.listdir(path))
        except OSError:
            return []


# The running kernel's file systems.
KFS = KernelFs()
