# SPDX-License-Identifier: GPL-2.0-or-later
"""The bench's one writer of local files and its checks: the results, the
plots and the docs' markdown a run or a saved run's command writes, as
root, into directories others may write.

  write_file             path holds the data with a mode, or is as it was
  refuse_unless_regular  NotRegularFile for a link, device, FIFO, directory
  results_dir            --out, made when missing

and its one reader, of a saved run or the docs' markdown: read_regular,
a regular file's bytes (xz-decompressed for a .xz), bounded (saved.py).
"""

import errno
import lzma
import os
import stat
import tempfile
from contextlib import suppress
from pathlib import Path

from .guard import BadArgument, shown

RESULT_MODE, RESULT_DIR_MODE = 0o644, 0o755     # results are for reading, and committing
LIMIT = 32 << 20        # bytes read (decompressed) at most
XZ_MEMORY = 128 << 20   # xz's decoder: xz -9's 64 MiB dictionary, twice over


class NotRegularFile(OSError):
    """What is at a path write_file was to replace is not a regular file."""


# what lstat's file type is called in a refusal
FILE_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"),
              (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
              (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))


def refuse_unless_regular(path):
    """NotRegularFile unless path is a regular file or nothing (as the
    irqtune library's files.refuse_unless_regular)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        kind = next((kind for test, kind in FILE_KINDS if test(mode)), "something")
        raise NotRegularFile(errno.EEXIST, "%s is there, not a regular file; left as it is" % kind, str(path))


def write_file(path, data, mode=RESULT_MODE):
    """The bench's one writer (results, plots, the docs' markdown), as the
    irqtune library's files.replace_file writes: path holds data (text as
    UTF-8, or bytes) with mode afterwards, or is as it was.  The bench runs
    as root in directories others may write (--out, the default "."), so a
    symlink, device, FIFO or directory at path is refused (NotRegularFile),
    the temporary file is made by mkstemp (O_EXCL: never through a link)
    and renamed over path.  The bench does not import the library: it is
    installed on hosts without it (the administrator's machine, the client)."""
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


def results_dir(out):
    """Path of --out, made (mode RESULT_DIR_MODE) when missing."""
    out = Path(out)
    with suppress(FileExistsError):
        out.mkdir(mode=RESULT_DIR_MODE, parents=True)
    return out


def read_regular(path):
    """The bytes of path if it is a regular file; never waits on a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as err:
        raise BadArgument("%s: %s" % (shown(str(path), 300), err.strerror)) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise BadArgument("%s: not a regular file" % shown(str(path), 300))
        chunks, size = [], 0
        while size <= LIMIT:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
    except OSError as err:
        raise BadArgument("%s: %s" % (shown(str(path), 300), err.strerror)) from None
    finally:
        os.close(fd)
    if str(path).endswith(".xz"):
        xz = lzma.LZMADecompressor(lzma.FORMAT_XZ, memlimit=XZ_MEMORY)
        try:
            data = xz.decompress(data, max_length=LIMIT + 1)
        except lzma.LZMAError as err:
            raise BadArgument("%s: not xz data this reads (%s; at most %d MiB of decoder memory)"
                              % (shown(str(path), 300), err, XZ_MEMORY >> 20)) from None
        if len(data) <= LIMIT and not xz.eof:
            raise BadArgument("%s: xz data cut short" % shown(str(path), 300))
    if len(data) > LIMIT:
        raise BadArgument("%s: larger than %d MiB" % (shown(str(path), 300), LIMIT >> 20))
    return data
