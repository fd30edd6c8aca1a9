# SPDX-License-Identifier: GPL-2.0-or-later
"""The ledger of originals: what every tuner must put back, and its rules.

Rules every tuner keeps (one place each, here):

- First value wins.  An original is recorded the first time a value is
  seen, before it is changed, and never overwritten while the tuning is
  active: re-applying (a retune after driver churn, a daemon restarted
  after kill -9) cannot mistake a tuned value for an original
  (``first()``).
- On disk before the change.  The ledger is a JSON file under
  /run/irqtune (tmpfs: it dies with the kernel state it describes, so a
  reboot never restores stale values; the directory 0700 and the files
  0600 whatever the umask, as root restores what they say), written
  with fsync (the file, then its directory for the rename) before the
  value it protects is changed (``Ledger.save``).
- One error policy.  A ledger that cannot be written stops the change it
  was to protect: ``save`` raises LedgerError, which the plugins' guard
  turns into one log line (nothing is changed without its original on
  disk).  After a restore or a forget the in-memory ledger is the truth and
  a failed write is logged, not raised (``Ledger.update``).  An unreadable
  ledger is ignored with a warning.
- Identities that survive churn.  Originals are keyed by what a driver
  keeps when it recreates an object, not by the kernel's ids:
  a device by name and ifindex (``device_entry``: a device created again
  under the same name is a different device); a NAPI by its device and its
  position in id order (``positioned``); a queue IRQ of a device by the
  device and the vector's action name (``vector_keys``: drivers request
  their vectors again under the same names, but the numbers may change);
  an IRQ picked system-wide (GSIM) by its number and its action name
  (``irq_entry``: a number reused by another vector is a different IRQ);
  a systemd service by its unit name.

Tuners reach their ledger through irqtune.shared.tuner.Tuner only (_save_state,
_load_state: the one place that picks save or update and reads originals
back); each says how its originals look as JSON.
"""

import json
import logging
import os

from ..kernel import files
from ..kernel.errors import IrqtuneError, describe_os_error
from ..kernel.kfs import KernelFs
from ..kernel.netdevs import ifindex_of, ifname_of

log = logging.getLogger(__name__)

STATE_DIR = "/run/irqtune"


class LedgerError(IrqtuneError):
    """The ledger could not be written: the change it protects is not made."""


class Ledger:
    """One tuner's originals on disk: /run/irqtune/<name>.json.

    kin: the name prefix of the ledgers of the same plugin's other
    instances ("napi-"), whose device entries this one inherits
    (``kin_device``).
    """

    def __init__(self, name, directory=None, kin=None):
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
        self.path = os.path.join(directory or STATE_DIR, safe + ".json")
        self.kin = kin

    def kin_device(self, ifname, ifindex):
        """The originals another instance of the same plugin saved for the
        device (ifname, ifindex), or None.

        A device moves between instances (instance_acquire_devices): the
        first restores and forgets it, the second saves its originals and
        tunes it.  A daemon killed then and started again hands the device
        back to the instance its profile names, which would take the second
        instance's values for originals: the older entry wins, as within a
        ledger (first value wins), and both instances restore the same."""
        if not self.kin:
            return None
        directory = os.path.dirname(self.path)
        for name in KernelFs.listdir(directory):
            path = os.path.join(directory, name)
            if path == self.path or not name.startswith(self.kin) or not name.endswith(".json"):
                continue
            entry = Ledger(name[:-5], directory).load().get(ifname)
            if isinstance(entry, dict) and entry.get("ifindex") == ifindex:
                log.info("%s: originals saved by another instance (%s) are taken over",
                         ifname, path)
                return entry
        return None

    def load(self):
        try:
            with open(self.path) as f:
                return json.load(f)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as err:
            log.warning("ignoring unreadable state file %s: %s", self.path,
                        describe_os_error(err, with_path=False))
            return {}

    def save(self, data):
        """Write data (fsync, mode 0600 whatever the umask) before a change;
        LedgerError when it cannot."""
        try:
            files.make_dirs(os.path.dirname(self.path), 0o700)
            files.replace_file(self.path, json.dumps(data, sort_keys=True), 0o600)
            # The rename is an entry of the directory: on disk only once
            # the directory is (a file system that persists /run).
            fd = os.open(os.path.dirname(self.path), os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as err:
            raise LedgerError("cannot save originals to %s: %s; nothing more is changed "
                              "(free /run or fix its permissions)"
                              % (self.path, describe_os_error(err, with_path=False))) from None

    def update(self, data):
        """Write data after a restore or forget; a failure is logged."""
        try:
            self.save(data)
        except LedgerError as err:
            log.error("%s", err)

    def remove(self):
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        except OSError as err:
            log.error("cannot remove %s: %s", self.path, describe_os_error(err, with_path=False))


def first(book, key, value):
    """Record value as the original of key unless one is recorded; True
    when this call recorded it (the ledger then needs saving)."""
    if key in book:
        return False
    book[key] = value
    return True


def device_entry(originals, ifname, ifindex, **empty):
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


def name_now(name, saved_ifindex, ifindex=ifindex_of, ifname=ifname_of):
    """The name the device saved as (name, saved_ifindex) has now: name
    itself, its new name after a rename, or None when no device has that
    ifindex (ifindex: name -> index or None; ifname: index -> name or None)."""
    if saved_ifindex is None:
        return None
    if ifindex(name) == saved_ifindex:
        return name
    return ifname(saved_ifindex)


def take_device(originals, ifname, ifindex=ifindex_of):
    """Pop ifname's originals; (entry, ifindex) when they belong to the
    device that has the name now, else (None, None): a device that is gone,
    or was created again, has nothing of ours to put back."""
    saved = originals.pop(ifname, None)
    if not saved:
        return None, None
    now = ifindex(ifname)
    if now is None or now != saved.get("ifindex"):
        return None, None
    return saved, now


def positioned(napis):
    """[(position, NAPI)] of one device's NAPIs: the index in id order, which
    drivers keep when they recreate their NAPIs (ids only grow)."""
    return list(enumerate(sorted(napis, key=lambda napi: napi["id"])))


def irq_entry(book, irq, name):
    """The original recorded for IRQ number irq while it carried action
    name, or None: a number freed by one driver and requested by another
    vector is a different interrupt."""
    saved = book.get(str(irq))
    return saved if saved is not None and saved.get("name") == name else None


def forget_changed_irqs(book, names):
    """Drop the originals of IRQs that are gone or carry another name now
    (names: {irq: action name} of the IRQs present); returns those dropped."""
    dropped = []
    for key in list(book):
        if names.get(int(key)) != book[key].get("name"):
            dropped.append(key)
            del book[key]
    return dropped


def vector_keys(vectors):
    """{irq: key} of one device's queue vectors [(irq, action name)].

    The key is the action name, which a driver requests again unchanged
    when it frees and re-requests its vectors (a reset, a re-probe of a
    virtio device), while the IRQ number may come back different: the
    vector that returns inherits the original of the one it replaces.
    Vectors sharing a name are told apart by their order ("eth3#2"); a
    vector without a name is known by its number ("irq 32").
    """
    keys, count = {}, {}
    for irq, name in sorted(vectors):
        if not name:
            keys[irq] = "irq %d" % irq
            continue
        count[name] = count.get(name, 0) + 1
        keys[irq] = name if count[name] == 1 else "%s#%d" % (name, count[name])
    return keys


def vector_book(book, names):
    """A device's vector originals {key: {"irq": n, "affinity": cpulist}},
    also from a ledger saved before vectors were keyed by name
    ({"27": "0-3"}): such an entry takes the name IRQ 27 carries now
    (names: {irq: action name}); one whose IRQ is gone is dropped."""
    out = {}
    for key, value in book.items():
        if isinstance(value, dict):
            out[key] = value
        elif key.isdigit() and int(key) in names:
            irq = int(key)
            out.setdefault(names[irq] or "irq %d" % irq, {"irq": irq, "affinity": value})
    return out
