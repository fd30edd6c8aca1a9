# SPDX-License-Identifier: GPL-2.0-or-later
"""Another process's epoll instances, read from the kernel without
disturbing it.

For each epoll file descriptor of the target (``anon_inode:[eventpoll]``
in /proc/PID/fd):

- ``pidfd_getfd()`` duplicates it into this process; ``EPIOCGPARAMS`` on
  the duplicate reads the busy-poll parameters the kernel holds for the
  instance (the same ``struct eventpoll`` the target's fd refers to);
- /proc/PID/fdinfo/EPFD lists the instance's targets (``tfd:`` lines: the
  target's fd number and the file's inode); stat() of /proc/PID/fd/TFD
  tells sockets from other files, and its inode is compared with fdinfo's,
  so an fd number the target has since closed and reused is not mistaken
  for the registered file;
- ``SO_INCOMING_NAPI_ID`` of each socket names the NAPI it last received
  from.  Reading it needs a duplicate of the socket, and duplicating a
  socket re-tags it with this process's net_cls / net_prio values (below):
  sockets are duplicated only where that writes back the values they
  hold, else their NAPI ids stay unread and the instance says why
  (``napi_unread``).

Nothing is written: only get operations, and every duplicate is closed
before the next one is taken (``try/finally``).  pidfd_getfd needs
ptrace-attach rights over the target (root, or CAP_SYS_PTRACE).

The target's owner chooses how many instances and watches there are, so
the inspection goes as far as its Bounds and says what it left out
(Inspection.skipped); fdinfo is read line by line, the lines past the
bound only counted.

A socket's only reader of SO_INCOMING_NAPI_ID is getsockopt() on a file
of the socket, and the only way to another process's is pidfd_getfd().
Every fd it installs goes through the kernel's __receive_sock()
(net/core/sock.c), which writes the caller's net_cls classid and net_prio
index into the socket (sock_update_classid, sock_update_netprioidx): the
target's packets would then be classified as the doctor's (HTB classes,
priority maps, iptables -m cgroup).  Epoll fds are not sockets and are
left as they are.

The write changes nothing when the caller's values are the socket's.
That is known when neither controller can tell two tasks apart: net_cls
and net_prio have no cgroup v2 interface, so while they are bound to the
v2 hierarchy (hierarchy 0 in /proc/cgroups) every task uses the root
cgroup's values, and a v1 hierarchy holding only its root cgroup gives
one value too.  A socket made under a cgroup removed since carries the
root values as well: moving a task re-tags the sockets of its fd table
(net_prio_attach, cgrp_attach of net_cls) and a cgroup is only removed
once empty.  Any other state (a v1 hierarchy with child cgroups, as
container runtimes on cgroup v1 make) leaves the sockets alone.
"""

import errno
import fcntl
import os
import re
import select
import socket
import stat
import struct
import time
from dataclasses import dataclass, field
from itertools import islice

from ..kernel import syscalls
from ..kernel.errors import IrqtuneError, UnsupportedError, describe_os_error
from ..kernel.kfs import KFS

# _IOR(0x8A, 0x02, struct epoll_params) and its 8 bytes (include/uapi/linux/eventpoll.h).
EPIOCGPARAMS = (2 << 30) | (8 << 16) | (0x8A << 8) | 0x02
EPOLL_PARAMS = struct.Struct("=IHBB")
SO_INCOMING_NAPI_ID = 56
EVENTPOLL_LINK = "anon_inode:[eventpoll]"
LIBRARY_NAME = "libirqtune-busypoll.so"

_TFD = re.compile(r"tfd:\s*(\d+)\s+events:\s*([0-9a-f]+).*?\bino:([0-9a-f]+)")


@dataclass(frozen=True)
class Bounds:
    """How far one process's inspection goes.  Each watch examined costs a
    stat() of /proc/PID/fd/N, each socket a pidfd_getfd() and a
    getsockopt(), and the counts are the target owner's: up to
    fs.epoll.max_user_watches (about 4 % of low memory, 5.4 million on a
    24 GiB host); unbounded, 500 instances x 2000 watches took the doctor
    211 MiB and 36-82 s here.  The chain needs a sample: whether an instance
    watches sockets, and whether they receive from more than one NAPI."""
    # Netty's default is two event loops per CPU (256 on a 128-CPU host);
    # memcached and nginx hold one instance per worker thread or process
    instances: int = 256
    # of each instance, in fdinfo's order: enough to find its sockets
    # among the pipes, eventfds and timers an event loop also watches
    watches: int = 256
    # of each instance: the flows of 64 sockets that RSS spreads over two
    # queues all land on one with probability 2**-63, so a mix is seen
    sockets: int = 64
    # the whole inspection, beside the doctor's window (3 s by default)
    seconds: float = 5.0


BOUNDS = Bounds()


@dataclass(frozen=True)
class EpollParams:
    busy_poll_usecs: int
    busy_poll_budget: int
    prefer_busy_poll: int


@dataclass
class EpollTarget:
    fd: int
    inode: int
    kind: str = "?"        # "socket", "other" or "gone" (closed since registered)
    napi_id: int = 0       # SO_INCOMING_NAPI_ID, 0: none received yet


@dataclass
class EpollInstance:
    pid: int
    fd: int
    params: EpollParams = None
    error: str = None               # why params could not be read
    targets: list = field(default_factory=list)     # the watches examined
    napi_unread: str = None         # why the sockets' NAPI ids were not read
    watches: int = 0                # fdinfo's tfd: lines, examined or not

    @property
    def sockets(self):
        return [t for t in self.targets if t.kind == "socket"]

    @property
    def napi_ids(self):
        """Distinct NAPIs the instance's sockets last received from."""
        return sorted({t.napi_id for t in self.sockets if t.napi_id})


@dataclass
class Inspection:
    """One process's epoll instances, as far as the bounds let it go."""
    pid: int
    bounds: Bounds = BOUNDS
    instances: list = field(default_factory=list)  # EpollInstance, the ones inspected
    epoll_fds: int = 0              # epoll instances the process holds (to the time bound)
    watches: int = 0                # of the instances inspected
    out_of_time: bool = False

    def skipped(self):
        """One line saying what the bounds left out, None when nothing."""
        b = self.bounds
        left = []
        if self.epoll_fds > b.instances:
            left.append("the first %s epoll instances" % _number(b.instances))
        if any(i.watches > len(i.targets) == b.watches for i in self.instances):
            left.append("the first %s watches of each" % _number(b.watches))
        if any(len(i.sockets) > b.sockets for i in self.instances):
            left.append("the NAPI ids of the first %s sockets of each" % _number(b.sockets))
        if not left and not self.out_of_time:
            return None
        text = "%s, %s" % (_counted(self.epoll_fds, "epoll instance"),
                           _counted(self.watches, "watch", "watches"))
        if self.epoll_fds > len(self.instances):
            text += " in the %s inspected" % _number(len(self.instances))
        if self.out_of_time:
            text += " (as far as counted)"
        said = ["examined " + ", ".join(left)] if left else []
        if self.out_of_time:
            said.append("the inspection stopped at its %g s bound" % b.seconds)
        return "%s: %s; the rest not inspected" % (text, "; ".join(said))


def _number(n):
    return "{:,}".format(n)


def _counted(n, one, many=None):
    return "%s %s" % (_number(n), one if n == 1 else many or one + "s")


def watched_files(lines):
    """(fd, inode) of each tfd: line of an eventpoll fdinfo, taken as the
    lines are read."""
    for line in lines:
        match = _TFD.match(line)
        if match:
            yield int(match.group(1)), int(match.group(3), 16)


def _pidfd_open(pid):
    """os.pidfd_open (Python 3.9+), else the system call."""
    if hasattr(os, "pidfd_open"):
        return os.pidfd_open(pid)
    return syscalls.call(syscalls.number("pidfd_open"), pid, 0)


class ProcessFds:
    """Duplicates fds of one process (pidfd_open + pidfd_getfd); close() it."""

    def __init__(self, pid):
        self.pid = pid
        self._nr = syscalls.number("pidfd_getfd")
        self._pidfd = None
        try:
            self._pidfd = _pidfd_open(pid)
        except ProcessLookupError:
            raise IrqtuneError("pid %d: no such process" % pid) from None
        except OSError as err:
            if err.errno == errno.ENOSYS:
                raise UnsupportedError("the kernel has no pidfd_open (Linux >= 5.3)") from None
            raise IrqtuneError("pid %d: pidfd_open: %s" % (pid, describe_os_error(err))) from None

    def close(self):
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def dup(self, fd):
        """A duplicate of the target's fd (O_CLOEXEC); raises OSError."""
        try:
            return syscalls.call(self._nr, self._pidfd, fd, 0)
        except OSError as err:
            if err.errno == errno.ENOSYS:
                raise UnsupportedError("the kernel has no pidfd_getfd (Linux >= 5.6)") from None
            raise


def check_pidfd_getfd():
    """Raise UnsupportedError when this kernel cannot duplicate another
    process's fds (probed on our own stdin-independent pipe)."""
    r, w = os.pipe()
    try:
        with ProcessFds(os.getpid()) as fds:
            os.close(fds.dup(r))
    finally:
        os.close(r)
        os.close(w)


def epoll_params_of_fd(fd):
    """EpollParams of an epoll fd of ours; OSError (ENOTTY: kernel < 6.9 or
    without CONFIG_NET_RX_BUSY_POLL)."""
    usecs, budget, prefer, _pad = EPOLL_PARAMS.unpack(
        fcntl.ioctl(fd, EPIOCGPARAMS, bytes(EPOLL_PARAMS.size)))
    return EpollParams(usecs, budget, prefer)


def kernel_has_epoll_params():
    """(True, None) when EPIOCGPARAMS works on a fresh epoll fd, else (False, why)."""
    e = select.epoll()
    try:
        epoll_params_of_fd(e.fileno())
        return True, None
    except OSError as err:
        return False, describe_os_error(err, {errno.ENOTTY: "%s"})
    finally:
        e.close()


def epoll_fds(pid, kfs=KFS):
    """The target's epoll fd numbers, in the order /proc lists them
    (ascending), as they are read: a process may hold a million fds."""
    fddir = kfs.proc_path(pid, "fd")
    try:
        entries = os.scandir(fddir)
    except FileNotFoundError:
        raise IrqtuneError("pid %d: no such process" % pid) from None
    except PermissionError:
        raise IrqtuneError("pid %d: cannot read %s (not root?)" % (pid, fddir)) from None
    with entries:
        for entry in entries:
            try:
                if os.readlink(entry.path) == EVENTPOLL_LINK:
                    yield int(entry.name)
            except OSError:      # closed meanwhile
                continue


def preload_loaded(pid, kfs=KFS, library=LIBRARY_NAME):
    """Whether the busy-poll preload library is mapped in the process
    (None: its maps cannot be read).  Read line by line: the process
    chooses how many mappings it has, and what their paths hold."""
    try:
        with kfs.open_text(kfs.proc_path(pid, "maps")) as maps:
            return any(line.rstrip().endswith(library) for line in maps)
    except OSError:
        return None


def _napi_id_of(fd):
    s = socket.socket(fileno=fd)
    try:
        return s.getsockopt(socket.SOL_SOCKET, SO_INCOMING_NAPI_ID)
    except OSError:
        return 0      # not an inet socket (unix, netlink): no NAPI
    finally:
        s.detach()    # the caller closes fd


def inspect_process(pid, kfs=KFS, bounds=BOUNDS, clock=time.monotonic):
    """Inspection of pid: its epoll instances, each with its params and
    targets, as far as bounds let it go."""
    found = Inspection(pid, bounds)
    deadline = clock() + bounds.seconds
    with ProcessFds(pid) as fds:
        for epfd in epoll_fds(pid, kfs):
            if clock() > deadline:
                found.out_of_time = True
                break
            found.epoll_fds += 1
            if found.epoll_fds > bounds.instances:
                continue         # counted only
            inst = _inspect_instance(pid, epfd, fds, kfs, bounds, lambda: clock() > deadline)
            if inst is not None:
                found.instances.append(inst)
                found.watches += inst.watches
                found.out_of_time = len(inst.targets) < min(inst.watches, bounds.watches)
    return found


def _inspect_instance(pid, epfd, fds, kfs, bounds, late):
    """The EpollInstance of one epoll fd, None when it was closed meanwhile;
    late() says the time bound has passed."""
    inst = EpollInstance(pid, epfd)
    try:
        dup = fds.dup(epfd)       # an eventpoll file: nothing to re-tag
    except OSError as err:
        if err.errno == errno.EBADF:      # closed meanwhile
            return None
        inst.error = "pidfd_getfd: %s" % describe_os_error(err)
        return inst
    try:
        inst.params = epoll_params_of_fd(dup)
    except OSError as err:
        inst.error = "EPIOCGPARAMS: %s" % describe_os_error(err)
    finally:
        os.close(dup)
    why = socket_dup_disturbs(kfs)     # again for each instance: cgroups come and go
    read = 0
    try:
        with kfs.open_text(kfs.proc_path(pid, "fdinfo", epfd)) as info:
            for tfd, inode in islice(watched_files(info), bounds.watches):
                target = _inspect_target(pid, tfd, inode, kfs)
                if target.kind == "socket" and why is not None:
                    inst.napi_unread = why
                elif target.kind == "socket" and read < bounds.sockets:
                    _read_napi_id(fds, target)
                    read += 1
                inst.targets.append(target)
                if late():
                    break
            # the rest only counted: the kernel wrote them all already
            inst.watches = len(inst.targets) + sum(1 for line in info if line.startswith("tfd:"))
    except OSError:          # closed meanwhile (or the process exited): what was read stands
        return inst if inst.targets else None
    return inst


def _inspect_target(pid, tfd, inode, kfs):
    """The registered file's kind, from stat() through /proc/PID/fd: no
    duplicate, so no socket is touched."""
    target = EpollTarget(tfd, inode)
    try:
        st = os.stat(kfs.proc_path(pid, "fd", tfd))
    except OSError:
        target.kind = "gone"
        return target
    if st.st_ino != inode:
        target.kind = "gone"          # the fd number now names another file
    elif stat.S_ISSOCK(st.st_mode):
        target.kind = "socket"
    else:
        target.kind = "other"
    return target


def _read_napi_id(fds, target):
    """SO_INCOMING_NAPI_ID of a socket target, through a duplicate (only
    where socket_dup_disturbs() found none)."""
    try:
        dup = fds.dup(target.fd)
    except OSError:
        target.kind = "gone"
        return
    try:
        if os.fstat(dup).st_ino != target.inode:
            target.kind = "gone"      # closed and reused since the stat()
        else:
            target.napi_id = _napi_id_of(dup)
    finally:
        os.close(dup)


CONTROLLERS = ("net_cls", "net_prio")


def parse_cgroups(text):
    """{controller: (hierarchy id, cgroups, enabled)} of /proc/cgroups."""
    found = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 4 and not line.startswith("#"):
            found[fields[0]] = tuple(int(f) for f in fields[1:])
    return found


def why_sockets_stay(cgroups_text):
    """None when duplicating a socket rewrites the values it holds, else
    the sentence saying which controller could tell them apart."""
    busy = ["%s (cgroup v1 hierarchy %d holds %d cgroups)" % (name, hierarchy, count)
            for name, (hierarchy, count, _enabled) in sorted(parse_cgroups(cgroups_text).items())
            if name in CONTROLLERS and hierarchy != 0 and count > 1]
    if not busy:
        return None
    return ("%s in use: reading a socket's NAPI id means duplicating it (pidfd_getfd), "
            "which would re-tag it with the doctor's net_cls/net_prio values (the kernel's "
            "__receive_sock)" % " and ".join(busy))


def socket_dup_disturbs(kfs=KFS):
    """why_sockets_stay() for this host; None without /proc/cgroups (a
    kernel without cgroups keeps no classification in sockets)."""
    text = kfs.read_optional(kfs.proc_path("cgroups"))
    return why_sockets_stay(text) if text is not None else None
