# SPDX-License-Identifier: GPL-2.0-or-later
"""The processes `irqtune doctor` inspects: a systemd unit's or one pid,
and entering their network namespace (NAPI ids and counters are per
namespace; a NAPI id from a socket is only found by napi-get there)."""

import ctypes
import errno
import os

from ...kernel.errors import IrqtuneError, describe_os_error, errno_error
from ...kernel.kfs import KFS
from ...kernel.netdevs import net_namespace
from ...shared.measure import procstat
from ...shared.systemd import UnitProcesses

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def comm(pid, kfs=KFS):
    """The process's name as its owner set it (any characters, escape
    sequences too): shown through irqtune.kernel.names.shown."""
    return kfs.read_optional(kfs.proc_path(pid, "comm")) or "?"


def check_pid(pid, kfs=KFS):
    """[pid] when it is a running user process; IrqtuneError otherwise (a
    zombie has no fds left to read, a kernel thread has no epoll loop)."""
    stat = procstat.read(pid, kfs)
    if stat is None:
        raise IrqtuneError("--pid %d: no such process" % pid)
    if not stat.user_running:
        why = ("a kernel thread" if stat.flags & procstat.PF_KTHREAD else
               "a zombie: it has exited and its parent has not reaped it")
        raise IrqtuneError("--pid %d: not a running user process (%s)" % (pid, why))
    return [pid]


def service_pids(unit, bus=None, kfs=KFS, root="/"):
    """The pids of a running unit (irqtune.shared.systemd.UnitProcesses:
    the auto values find theirs the same way)."""
    try:
        return UnitProcesses(kfs, bus, root).pids(unit)
    except IrqtuneError as err:
        raise IrqtuneError("--service %s" % err) from None


def enter_net_namespace_of(pid, kfs=KFS):
    """Move this thread into pid's network namespace when it is another;
    returns True when it did.  Only the namespace changes (setns), nothing
    in it."""
    if net_namespace(pid, kfs) in (None, net_namespace("thread-self", kfs)):
        return False
    fd = os.open(kfs.proc_path(pid, "ns/net"), os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            raise IrqtuneError("pid %d: cannot enter its network namespace: %s"
                               % (pid, describe_os_error(errno_error(ctypes.get_errno()), {
                                   errno.EPERM: "not permitted (%s): needs CAP_SYS_ADMIN"})))
    finally:
        os.close(fd)
    return True
