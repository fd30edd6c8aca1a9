# SPDX-License-Identifier: GPL-2.0-or-later
"""Files and directories irqtune creates outside /proc and /sys (service
drop-ins, the metrics textfile, the ledger's directory).

TuneD's daemon runs with umask 0, so a mode given to open() or mkdir()
is not the mode a file gets: every mode here is set with fchmod on the
open descriptor of the object just created, never by path (a path can be
swapped for a symlink between the create and the chmod).

replace_file replaces a file in one rename, so a reader - systemd,
node_exporter, a daemon reading the ledger - never sees half a file, and
a failure leaves no temporary file behind; it replaces regular files
only (the one writer of what root writes where others may name the path:
`irqtune metrics --output`).

read_root_only_stat reads a file that a profile names and root acts on (a
pid file: the process root measures) only when no other user could have
written it."""

import ctypes
import errno
import os
import platform
import stat
import tempfile
from contextlib import suppress

from .errors import IrqtuneError, errno_error
from .names import SHOWN_PATH_MAX, shown

# Filesystems whose files hold what was written to them and whose owners
# and modes are the kernel's record (statfs(2) f_type, linux/magic.h).
# A list of these rather than a list of pseudo filesystems to avoid:
# procfs, sysfs, cgroupfs and their kin are root's files whose text users
# shape (comm), FUSE reports whatever owner its server claims, and a
# filesystem added to the kernel next year is refused until named here.
WRITTEN_FILESYSTEMS = {0x01021994: "tmpfs", 0x858458F6: "ramfs", 0xEF53: "ext2/3/4",
                       0x58465342: "xfs", 0x9123683E: "btrfs", 0xF2F52010: "f2fs",
                       0xCA451A4E: "bcachefs", 0x2FC12FC1: "zfs", 0x794C7630: "overlay"}
# Names for the refusal line only.
PSEUDO_FILESYSTEMS = {0x9FA0: "proc", 0x62656572: "sysfs", 0x63677270: "cgroup2",
                      0x27E0EB: "cgroup", 0x65735546: "fuse", 0x64626720: "debugfs",
                      0x74726163: "tracefs", 0x73636673: "securityfs", 0xCAFE4A11: "bpf"}

# What read_root_only_stat accepts, for the lines that refuse a file.
ROOT_ONLY = ("a regular file owned by root that no group or other may write, on %s, in "
             "directories owned by root that no group or other may write (or sticky, as "
             "/tmp), with no symbolic link on the way"
             % ", ".join(sorted(WRITTEN_FILESYSTEMS.values())))


class NotRootOnly(IrqtuneError):
    """A file root would act on that another user could have written; the
    message says why."""


class NotRegularFile(IrqtuneError, OSError):
    """What is at a path replace_file was to replace is not a regular file;
    it is left as it is.  An OSError, so that every caller's handling of a
    failed write covers it; its words are the refusal, without the path."""

    def __init__(self, kind, path):
        self.refusal = "%s is there, not a regular file; left as it is" % kind
        super().__init__(errno.EEXIST, self.refusal, path)

    def __str__(self):
        return self.refusal


# What lstat's file type is called in a refusal.
_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))


def refuse_unless_regular(path):
    """NotRegularFile unless path is a regular file or nothing.  A rename
    over a device, FIFO or symlink takes it from whoever uses it (over
    /dev/null or the link /dev/stdout: the whole machine), and what was
    meant is not a file root should make there.  What could still be
    swapped in after this check is an entry of whoever may write the
    directory - a device node needs CAP_MKNOD - and the rename replaces
    that entry itself, never what a link points to."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        kind = next((kind for test, kind in _KINDS if test(mode)), "something")
        raise NotRegularFile(kind, path)


def replace_file(path, data, mode):
    """path holds data (text, written as UTF-8, or bytes) with mode
    afterwards, or is as it was; NotRegularFile when something else than a
    regular file is at path, OSError otherwise.  The temporary file is
    created by mkstemp (O_CREAT|O_EXCL: never through a symlink) and gets
    its mode on its descriptor."""
    refuse_unless_regular(path)
    payload = data.encode() if isinstance(data, str) else data
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


def make_dirs(path, mode):
    """Create path and its missing parents, each with mode whatever the
    umask (os.makedirs gives parents the umask's mode); an existing
    directory is left as it is.  OSError when a component is not a
    directory."""
    path = os.path.abspath(path)
    if os.path.isdir(path):
        return
    parent = os.path.dirname(path)
    if parent != path:
        make_dirs(parent, mode)
    try:
        os.mkdir(path, 0o700)       # owner-only until fchmod sets mode
    except FileExistsError:
        if not os.path.isdir(path):
            raise
        return                      # made meanwhile by another writer: theirs
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def read_root_only_stat(path, limit=4096):
    """The text (at most limit bytes) of a file that only root could have
    written, and the os.stat_result of the very file read (its mtime: when
    it was last written).

    path is absolute and normalised; it is opened one component at a time
    from /, each relative to the descriptor of the directory above and
    without following a symbolic link (proc's magic links, /proc/PID/root,
    are links too), and checked on its descriptor, so nothing on the way
    can be swapped between a check and the next step.  Every directory is
    root's (or the reader's) and not writable by group or others - or
    sticky, where only an entry's owner can move the entry, and the entry
    is root's as every component must be.  The file is a regular file
    (opened without waiting on a FIFO) of root's (or the reader's) that no
    group or other may write, on one of WRITTEN_FILESYSTEMS.

    NotRootOnly says what is not so; OSError when a component is missing
    or the file cannot be read."""
    names = path.split("/")
    if names[0] or any(name in ("", ".", "..") for name in names[1:]):
        raise NotRootOnly("it is not a normalised absolute path")
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _refuse_unless_roots(os.fstat(fd), "directory /", sticky=True)
        for i, name in enumerate(names[1:], 2):
            where = shown("/".join(names[:i]), SHOWN_PATH_MAX)
            last = i == len(names)
            below = _open_without_links(fd, name, os.O_NONBLOCK if last else os.O_DIRECTORY,
                                        "it" if last else where)
            os.close(fd)
            fd = below
            if not last:
                _refuse_unless_roots(os.fstat(fd), "directory " + where, sticky=True)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRootOnly("it is not a regular file")
        kind = _filesystem_type(fd)
        if kind not in WRITTEN_FILESYSTEMS:
            name = PSEUDO_FILESYSTEMS.get(kind)
            raise NotRootOnly("it is on %s (type %#x)" % ("a %s filesystem" % name if name
                                                          else "another filesystem", kind))
        _refuse_unless_roots(st, "it")
        return os.read(fd, limit).decode(errors="replace"), st
    finally:
        os.close(fd)


def _open_without_links(fd, name, flags, what):
    """name in directory fd, opened read-only; NotRootOnly naming it as
    what when it is a symbolic link."""
    try:
        return os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | flags, dir_fd=fd)
    except OSError as err:
        # a link is ELOOP, or ENOTDIR when a directory was asked for
        if err.errno in (errno.ELOOP, errno.ENOTDIR):
            with suppress(OSError):
                if stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                    raise NotRootOnly("%s is a symbolic link" % what) from None
        raise


def _refuse_unless_roots(st, what, sticky=False):
    """NotRootOnly unless st is root's (or the reader's) and only its owner
    may write it (or, sticky, it is a sticky directory)."""
    if st.st_uid not in (0, os.geteuid()):
        raise NotRootOnly("%s is owned by uid %d" % (what, st.st_uid))
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not (sticky and st.st_mode & stat.S_ISVTX):
        raise NotRootOnly("group or others may write %s (mode %04o)"
                          % (what, stat.S_IMODE(st.st_mode)))


# struct statfs begins with f_type: a long, but an unsigned int on s390x.
_F_TYPE = ctypes.c_uint if platform.machine() == "s390x" else ctypes.c_long
_libc = ctypes.CDLL(None, use_errno=True)


def _filesystem_type(fd):
    """fstatfs(2)'s f_type of fd (Python's os.fstatvfs has no type)."""
    buf = ctypes.create_string_buffer(256)          # struct statfs: 120 bytes on 64-bit
    if _libc.fstatfs(fd, buf) != 0:
        raise errno_error(ctypes.get_errno())
    return _F_TYPE.from_buffer(buf).value & 0xFFFFFFFF
