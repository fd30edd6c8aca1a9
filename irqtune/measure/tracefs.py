# SPDX-License-Identifier: GPL-2.0-or-later
"""Tracepoint ids and record layouts, read from tracefs
(events/<system>/<name>/format), which perf_event_open needs.

Only read: nothing is enabled through tracefs.  When tracefs is mounted
nowhere (a host without systemd, which mounts it at boot), a child
process mounts it in a mount namespace of its own, reads the files and
exits; the mount ends with the namespace, the host's mounts stay as they
were.
"""

import ctypes
import json
import os
import re

from ..errors import IrqtuneError

CLONE_NEWNS = 0x00020000
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
MOUNT_POINT = "/sys/kernel/tracing"
_libc = ctypes.CDLL(None, use_errno=True)

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


def _read(system, names):
    with open("/proc/self/mounts") as f:
        roots = [r for r in mounted_tracefs(f.read()) if os.path.isdir(os.path.join(r, "events"))]
    if roots:
        return read_formats(roots[0], system, names)
    return _formats_in_private_mount(system, names)


def _formats_in_private_mount(system, names):
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:                            # child: no Python-level cleanup, just _exit
        status = 1
        try:
            os.close(rfd)
            result = _mount_and_read(system, names)
            os.write(wfd, json.dumps(result).encode())
            status = 0
        finally:
            os._exit(status)
    os.close(wfd)
    with os.fdopen(rfd, "rb") as pipe:
        text = pipe.read()
    os.waitpid(pid, 0)
    try:
        result = json.loads(text.decode())
    except ValueError:
        result = {"error": "the child that mounts tracefs failed"}
    if "error" in result:
        raise IrqtuneError("tracefs is not mounted and cannot be mounted privately: %s"
                           % result["error"])
    return result["formats"]


def _mount_and_read(system, names):
    if _libc.unshare(CLONE_NEWNS) != 0:
        return {"error": "unshare(CLONE_NEWNS): " + os.strerror(ctypes.get_errno())}
    # private, so that the mount below is not propagated to the host
    if _libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return {"error": "making / private: " + os.strerror(ctypes.get_errno())}
    if _libc.mount(b"tracefs", MOUNT_POINT.encode(), b"tracefs", 0, None) != 0:
        return {"error": "mount -t tracefs: " + os.strerror(ctypes.get_errno())}
    return {"formats": read_formats(MOUNT_POINT, system, names)}
