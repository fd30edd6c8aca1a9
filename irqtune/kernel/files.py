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

import errno
import os
import stat
import tempfile
from contextlib import suppress

from .errors import IrqtuneError

# What read_root_only_stat accepts, for the lines that refuse a file.
ROOT_ONLY = "a regular file owned by root that no group or other may write, not a symbolic link"


class NotRootOnly(IrqtuneError):
    """A file root would act on that another user could have written; the
    message says why."""


class NotRegularFile(OSError):
    """What is at a path replace_file was to replace is not a regular file;
    it is left as it is.  An OSError, so that every caller's handling of a
    failed write covers it."""


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
        raise NotRegularFile(errno.EEXIST, "%s is there, not a regular file; left as it is" % kind, path)


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
    written - a regular file owned by root (or by the reader) that no group
    or other may write - and the os.stat_result of the very file read (its
    mtime: when it was last written).  Checked on the descriptor that is
    read (fstat), opened without following a symbolic link and without
    waiting on a FIFO, so nothing can be swapped in between the check and
    the read.  NotRootOnly when the file is not such a file, OSError when
    it cannot be opened or read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise NotRootOnly("it is a symbolic link") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRootOnly("it is not a regular file")
        if st.st_uid not in (0, os.geteuid()):
            raise NotRootOnly("it is owned by uid %d" % st.st_uid)
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise NotRootOnly("group or others may write it (mode %04o)"
                              % stat.S_IMODE(st.st_mode))
        return os.read(fd, limit).decode(errors="replace"), st
    finally:
        os.close(fd)
