# SPDX-License-Identifier: GPL-2.0-or-later
"""The bench's one writer of local files and its checks: the results, the
plots and the docs' markdown a run or a saved run's command writes, as
root, into directories others may write.

  write_file             path holds the data with a mode, or is as it was
  refuse_unless_regular  NotRegularFile for a link, device, FIFO, directory
  results_dir            --out, made when missing
"""

import errno
import os
import stat
import tempfile
from contextlib import suppress
from pathlib import Path

RESULT_MODE, RESULT_DIR_MODE = 0o644, 0o755     # results are for reading, and committing


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
