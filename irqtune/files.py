# SPDX-License-Identifier: GPL-2.0-or-later
"""Files and directories irqtune creates outside /proc and /sys (service
drop-ins, the metrics textfile, the ledger's directory).

TuneD's daemon runs with umask 0, so a mode given to open() or mkdir()
is not the mode a file gets: every mode here is set with fchmod on the
open descriptor of the object just created, never by path (a path can be
swapped for a symlink between the create and the chmod).

replace_file replaces a file in one rename, so a reader - systemd,
node_exporter - never sees half a file, and a failure leaves no temporary
file behind.  (The ledger writes its file itself: it also syncs the
directory and turns errors into LedgerError; its directory comes from
make_dirs.)"""

import os
import tempfile


def replace_file(path, text, mode):
    """path holds text with mode afterwards, or is as it was; OSError
    otherwise.  The temporary file is created by mkstemp (O_CREAT|O_EXCL:
    never through a symlink) and gets its mode on its descriptor."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=directory)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
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

