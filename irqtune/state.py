# SPDX-License-Identifier: GPL-2.0-or-later
"""Saved originals that outlive the TuneD process.

TuneD keeps what it must restore in memory; after `kill -9` and a restart
it would take the tuned values for originals.  Each tuner therefore mirrors
its originals into a JSON file under /run/irqtune: tmpfs, so the file dies
with the kernel state it describes and a reboot never restores stale values.
"""

import json
import logging
import os

log = logging.getLogger(__name__)

STATE_DIR = "/run/irqtune"


class StateFile:
    def __init__(self, name, directory=None):
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
        self.path = os.path.join(directory or STATE_DIR, safe + ".json")

    def load(self):
        try:
            with open(self.path) as f:
                return json.load(f)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as err:
            log.warning("ignoring unreadable state file %s: %s", self.path, err)
            return {}

    def save(self, data):
        os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(data, f, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def remove(self):
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def load_devices(self, ifindex):
        """Saved per-device originals {ifname: {"ifindex": n, ...}} whose device
        still exists under the same ifindex (ifindex: name -> index or None);
        a device removed and created again is not the one they belong to."""
        originals = {}
        for ifname, saved in self.load().items():
            if ifindex(ifname) == saved.get("ifindex"):
                originals[ifname] = saved
            else:
                log.info("%s: saved originals belong to a device that is gone", ifname)
        if originals:
            names = sorted(originals)
            log.info("restoring saved originals of %s from %s", ", ".join(names[:4]) +
                     (" and %d more" % (len(names) - 4) if len(names) > 4 else ""), self.path)
        return originals


def device_originals(originals, ifname, ifindex, **empty):
    """originals[ifname] for the device that has ifindex now.

    An entry saved for an earlier device of the same name (unplugged and
    plugged again, driver reloaded) describes values that died with it: it
    is replaced by a fresh one {"ifindex": ifindex, **empty}.
    """
    saved = originals.get(ifname)
    if saved is not None and saved.get("ifindex") != ifindex:
        log.info("%s: the device was re-created (ifindex %s -> %s); its old originals "
                 "no longer apply", ifname, saved.get("ifindex"), ifindex)
        saved = None
    if saved is None:
        saved = originals[ifname] = dict({"ifindex": ifindex}, **empty)
    return saved
