# SPDX-License-Identifier: GPL-2.0-or-later
"""A root for the service opt-in (irqtune.features.service_optin): /etc and
/run of systemd, with or without systemd running, and the preload library
where the package puts it; the path of the drop-in the opt-in writes for a
unit under that root."""

import os

from irqtune.features import service_optin as so

LIB = "/usr/lib64/irqtune/libirqtune-busypoll.so"


def make_root(tmp_path, systemd=True, library=True):
    root = tmp_path / "root"
    (root / "etc/systemd/system").mkdir(parents=True)
    if systemd:
        (root / "run/systemd/system").mkdir(parents=True)
    if library:
        lib = root / LIB.lstrip("/")
        lib.parent.mkdir(parents=True)
        lib.write_bytes(b"\x7fELF")
    return str(root)


def dropin(root, unit):
    return os.path.join(root, "etc/systemd/system", unit + ".d", so.DROPIN_NAME)
