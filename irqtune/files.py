# SPDX-License-Identifier: GPL-2.0-or-later
"""Files irqtune owns outside /proc and /sys (service drop-ins, the metrics
textfile): each replaced in one rename, so a reader - systemd, node_exporter
- never sees half a file, and a failure leaves no temporary file behind.
(The ledger has its own writer: it also syncs the directory and turns
errors into LedgerError.)"""

import os
import tempfile


def replace_file(path, text, mode=0o644):
    """path holds text afterwards, or is as it was; OSError otherwise."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=directory)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
