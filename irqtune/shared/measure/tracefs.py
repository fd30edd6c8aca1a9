# SPDX-License-Identifier: GPL-2.0-or-later
"""Tracepoint ids and record layouts, read from tracefs
(events/<system>/<name>/format), which perf_event_open needs.

Only read: nothing is enabled through tracefs.  When tracefs is mounted
nowhere (a host without systemd, which mounts it at boot), it is read
through a mount attached nowhere.
"""

import os
import re

from ...kernel import syscalls
from ...kernel.errors import IrqtuneError, describe_os_error
from ...kernel.kfs import KFS

MOUNT_POINT = "/sys/kernel/tracing"
# include/uapi/linux/mount.h
FSOPEN_CLOEXEC, FSCONFIG_CMD_CREATE, FSMOUNT_CLOEXEC = 1, 6, 1

_ID = re.compile(r"^ID:\s*(\d+)", re.M)
_FIELD = re.compile(r"field:(.*?)\s+(\w+)(\[\w*\])?;\s*offset:(\d+);\s*size:(\d+);"
                    r"\s*signed:(\d+);")


def parse_format(text):
    """{"id": n, "fields": {name: [offset, size, signed]}} of a tracefs
    format file."""
    match = _ID.search(text)
    if not match:
        raise ValueError("no ID line")
    fields = {m.group(2): [int(m.group(4)), int(m.group(5)), m.group(6) == "1"]
              for m in _FIELD.finditer(text)}
    return {"id": int(match.group(1)), "fields": fields}


def mounted_tracefs(mounts_text):
    """Directories where tracefs is mounted (also under debugfs), best first."""
    found = []
    for line in mounts_text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[2] == "tracefs":
            found.append(parts[1])
        elif len(parts) >= 3 and parts[2] == "debugfs":
            found.append(os.path.join(parts[1], "tracing"))
    return sorted(found, key=lambda p: p != MOUNT_POINT)


def read_formats(root, system, names):
    """{name: parse_format(...)}; names the kernel lacks are left out."""
    formats = {}
    for name in names:
        try:
            with open(os.path.join(root, "events", system, name, "format")) as f:
                formats[name] = parse_format(f.read())
        except (OSError, ValueError):
            continue
    return formats


# (system, names) -> formats, kept for the life of the process
_known = {}


def formats(system, names):
    """The formats of tracepoints system:name; IrqtuneError when tracefs
    cannot be read at all.  Kept for the life of the process: ids and
    layouts change only with the kernel, so a daemon that measures again
    (gro_flush_timeout=auto) neither reads tracefs nor mounts it again."""
    key = (system, tuple(names))
    if key not in _known:
        _known[key] = _read(system, names)
    return _known[key]


def _read(system, names, kfs=KFS):
    mounts = kfs.read_text(kfs.proc_path("self", "mounts"))    # other users' mount points too
    roots = [r for r in mounted_tracefs(mounts) if os.path.isdir(os.path.join(r, "events"))]
    if roots:
        return read_formats(roots[0], system, names)
    return _formats_in_detached_mount(system, names)


def _formats_in_detached_mount(system, names):
    """Read through a tracefs mount attached nowhere (fsopen, fsmount:
    Linux 5.2), gone when its fd closes: the host's mounts stay as they
    were, and no process is forked - the library runs in TuneD's
    multi-threaded daemon, where a forked child holds copies of locks
    other threads held."""
    try:
        fs = syscalls.call(syscalls.number("fsopen"), b"tracefs", FSOPEN_CLOEXEC)
        try:
            syscalls.call(syscalls.number("fsconfig"), fs, FSCONFIG_CMD_CREATE, None, None, 0)
            mount = syscalls.call(syscalls.number("fsmount"), fs, FSMOUNT_CLOEXEC, 0)
        finally:
            os.close(fs)
    except OSError as err:
        raise IrqtuneError("tracefs is not mounted and cannot be mounted detached: %s"
                           % describe_os_error(err)) from None
    try:
        return read_formats("/proc/self/fd/%d" % mount, system, names)
    finally:
        os.close(mount)
