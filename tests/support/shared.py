# SPDX-License-Identifier: GPL-2.0-or-later
"""A file for a program the suites run as another user (nobody), where
that user can read it: a clone of the repository may be one only root can
read (root's home is 0700 on Debian, 0550 on Fedora), and a program of
the clone run as nobody then fails with "Permission denied"."""

import contextlib
import os
import shutil
import sys
import tempfile

# The interpreter for a program run as another user: the one a virtual
# environment in the clone (make check's build/venv-*) links to, which
# that user can reach; its standard library only (run it with -E -s).
PYTHON_FOR_ALL = os.path.realpath(sys.executable)


@contextlib.contextmanager
def readable_by_all(name, text):
    """The path of a file name holding text, mode 0644, in a directory of
    its own (0755) under /tmp - not $TMPDIR, which may be as private as
    the clone - removed afterwards."""
    directory = tempfile.mkdtemp(prefix="irqtune-shared-", dir="/tmp")
    try:
        os.chmod(directory, 0o755)
        path = os.path.join(directory, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "w") as f:
            f.write(text)
            os.fchmod(f.fileno(), 0o644)
        yield path
    finally:
        shutil.rmtree(directory)


def readable_copy(path):
    """readable_by_all of a copy of the file at path."""
    with open(path) as f:
        return readable_by_all(os.path.basename(path), f.read())
