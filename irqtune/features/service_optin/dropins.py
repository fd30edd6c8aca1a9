# SPDX-License-Identifier: GPL-2.0-or-later
"""The opt-in's files: systemd drop-ins it writes, recognises and removes.

It never removes or overwrites a file it did not write: its files carry a
marker line; a file at its path without the marker is left alone (error),
a file with the marker but edited since it was written is left in place
on removal (warning).  A ``<unit>.d`` directory is removed only when this
module created it and it is empty.
"""

import logging
import os
from contextlib import suppress
from dataclasses import dataclass

from ...kernel import crashpoint, files
from ...kernel.errors import IrqtuneError, describe_os_error
from ...kernel.names import shown

log = logging.getLogger(__name__)

DROPIN_NAME = "50-irqtune-busypoll.conf"
UNIT_DIR = "etc/systemd/system"
MARKER = "# irqtune busy_poll_optin drop-in"
# Drop-in paths this process has written (one owner per service).
_CLAIMED = set()


def forget_claims():
    """Forget the drop-ins this process has written, as a new process starts
    knowing none: what a restarted daemon knows of them comes from the
    ledger alone.  For tests that play such a restart."""
    _CLAIMED.clear()


def dropin_content(library, values, ld_preload_before=None):
    """The drop-in text for one service."""
    preload = library if not ld_preload_before else "%s:%s" % (ld_preload_before, library)
    # one Environment= word: double-quoted, C escapes, '%' doubled
    quoted = ("LD_PRELOAD=" + preload).replace("\\", "\\\\").replace('"', '\\"') \
        .replace("%", "%%")
    lines = [
        MARKER,
        "# Written by the irqtune TuneD plugin busy_poll_optin while its profile",
        "# is active and removed when the profile is unapplied.  Edits make",
        "# irqtune leave the file in place.  Takes effect when the service starts.",
        "[Service]",
        'Environment="%s"' % quoted,
    ]
    lines += ["Environment=%s=%s" % pair for pair in values.environment()]
    return "\n".join(lines) + "\n"


@dataclass
class DropIn:
    """One drop-in as written: what to remove and how to recognise it."""

    unit: str
    path: str
    content: str
    created_dir: bool
    previous: str = None    # irqtune's own earlier file it replaced (restored on rollback)

    def export(self):
        """As plain data for the ledger (what a later process adopts)."""
        return {"unit": self.unit, "path": self.path, "content": self.content,
                "created_dir": self.created_dir}


def entries_from_state(state):
    """[DropIn] of records export() made; unreadable records are skipped."""
    entries = []
    for item in state or ():
        try:
            entries.append(DropIn(str(item["unit"]), str(item["path"]),
                                  str(item["content"]), bool(item["created_dir"])))
        except (KeyError, TypeError) as err:
            log.error("ignoring unreadable saved drop-in record %s: %s",
                      shown(item, quote="always"), err)
    return entries


def read_dropin(path):
    """The text of a drop-in, or None when it cannot be read."""
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def write_dropin(unit, path, content, earlier=None):
    """Write one drop-in; returns its DropIn.  earlier: the DropIn a
    previous run recorded for this unit (its created_dir carries over)."""
    directory = os.path.dirname(path)
    if path in _CLAIMED:
        raise IrqtuneError("%s: already opted in by another busy_poll_optin "
                           "instance; name each service once" % unit)
    previous = None
    if os.path.lexists(path):
        try:
            with open(path) as f:
                previous = f.read()
        except OSError as err:
            raise IrqtuneError("%s: cannot read existing %s: %s"
                               % (unit, path, describe_os_error(err, with_path=False)))
        if previous.split("\n", 1)[0] != MARKER:
            raise IrqtuneError("%s: %s exists and was not written by irqtune; "
                               "not touching it" % (unit, path))
        if previous != content:
            log.info("%s: replacing irqtune's earlier drop-in %s", unit, path)
    created_dir = bool(earlier and earlier.created_dir)
    if not os.path.isdir(directory):
        files.make_dirs(directory, 0o755)
        created_dir = True
    entry = DropIn(unit, path, content, created_dir, previous)
    try:
        files.replace_file(path, content, 0o644)
    except BaseException:
        if created_dir:
            with suppress(OSError):
                os.rmdir(directory)
        raise
    if crashpoint.ENABLED:
        crashpoint.wrote(path)
    _CLAIMED.add(path)
    return entry


def remove_dropins(entries):
    """Remove drop-ins we wrote, if unchanged; returns the units removed."""
    removed = []
    for entry in reversed(entries):
        try:
            with open(entry.path) as f:
                current = f.read()
        except FileNotFoundError:
            log.info("%s: drop-in %s already gone", entry.unit, entry.path)
            current = None
        except OSError as err:
            log.error("%s: cannot read %s: %s; left in place", entry.unit, entry.path,
                      describe_os_error(err, with_path=False))
            continue
        if current is not None and current != entry.content:
            log.warning("%s: %s was changed after irqtune wrote it; left in place",
                        entry.unit, entry.path)
            _CLAIMED.discard(entry.path)
            continue
        if current is not None:
            try:
                os.unlink(entry.path)
            except OSError as err:
                log.error("%s: cannot remove %s: %s", entry.unit, entry.path,
                          describe_os_error(err, with_path=False))
                continue
            if crashpoint.ENABLED:
                crashpoint.wrote("removed " + entry.path)
            removed.append(entry.unit)
        _CLAIMED.discard(entry.path)
        if entry.created_dir:   # not when someone else's drop-ins live there (OSError)
            with suppress(OSError):
                os.rmdir(os.path.dirname(entry.path))
    return removed


def roll_back(entries):
    """Undo one apply's writes: restore replaced files, remove new ones."""
    fresh = []
    for entry in entries:
        if entry.previous is None:
            fresh.append(entry)
            continue
        try:
            files.replace_file(entry.path, entry.previous, 0o644)
            if crashpoint.ENABLED:
                crashpoint.wrote(entry.path)
        except OSError as err:
            log.error("%s: cannot restore %s: %s", entry.unit, entry.path,
                      describe_os_error(err, with_path=False))
        _CLAIMED.discard(entry.path)
    remove_dropins(fresh)
