# SPDX-License-Identifier: GPL-2.0-or-later
"""Test-only crash points: SIGKILL right after the Nth kernel write.

The crash-point harness (tests/crash, `make crash-check`) proves that no
original is lost whatever write a process dies after: the ledger must be
on disk before every change (irqtune.shared.ledger).  It starts the process under
test - the TuneD daemon, or the library in a subprocess - with
IRQTUNE_CRASH_DIR naming a directory of its own.  While <dir>/after exists
it holds a number N: each kernel write appends one line naming what it
wrote to <dir>/writes, and the write that makes the Nth line kills the
process with SIGKILL before it does anything else (N = 0: count only,
which is how the harness learns how many writes an operation makes).
Removing <dir>/after disarms it.

The write paths call wrote() once each, right after the kernel took the
write: KernelFs.write_text (procfs, sysfs), a generic netlink request
that changes something (irqtune.kernel.netlink: napi-set, channels, rings,
features, RSS), an ntuple rule ioctl, a systemd drop-in written or
removed.  Without the variable ENABLED is False and each write path pays
one test of a module constant; nothing here is read at run time.
"""

import os
import signal

ENV = "IRQTUNE_CRASH_DIR"
_DIR = os.environ.get(ENV) or None
ENABLED = _DIR is not None


def wrote(what):
    """One kernel write done (what: a path or a request); see the module."""
    try:
        with open(os.path.join(_DIR, "after")) as f:
            after = int(f.read().strip() or 0)
    except (OSError, ValueError):
        return      # disarmed
    fd = os.open(os.path.join(_DIR, "writes"), os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a+") as f:
        f.write(" ".join(str(what).split()) + "\n")
        f.flush()
        f.seek(0)
        count = sum(1 for _ in f)
    if after and count >= after:
        os.kill(os.getpid(), signal.SIGKILL)
