# SPDX-License-Identifier: GPL-2.0-or-later
"""The originals' plumbing every device tuner inherits (irqtune.shared.tuner.
DeviceTuner): the ledger written and read in one place, another
instance's originals taken over, a forgotten device dropped from every
book."""

import json
import os

from irqtune.shared.ledger import Ledger
from irqtune.shared.tuner import DeviceTuner


class Books(DeviceTuner):
    """A device tuner with one book beside its originals and JSON of its
    own (sets on disk as lists), as NapiTuner keeps NAPI ids."""

    def __init__(self, ledger, names):
        super().__init__(ledger, ifindex=names.get,
                         ifname=lambda i: {v: k for k, v in names.items()}.get(i))
        self.targets = {}
        self.originals = self._load_state()

    def _books(self):
        return [self.targets]

    def _from_ledger(self, originals):
        for saved in originals.values():
            saved["ids"] = set(saved.get("ids", ()))
        return originals

    def _to_ledger(self):
        return {n: dict(d, ids=sorted(d["ids"])) for n, d in self.originals.items()}

    def apply(self, *ifnames):
        for name in ifnames:
            self._originals_of(name, self._ifindex(name), ids=set())["ids"].add(3)
            self.targets[name] = "x"
        self._save_state()

    def verify(self, ifname):
        return []


def read(path):
    with open(path) as f:
        return json.load(f)


def test_the_ledger_round_trips_through_the_tuners_own_json(tmp_path):
    names = {"eth0": 7}
    ledger = Ledger("books-a", str(tmp_path))
    Books(ledger, names).apply("eth0")
    assert read(ledger.path) == {"eth0": {"ifindex": 7, "ids": [3]}}
    again = Books(ledger, names)
    assert again.originals == {"eth0": {"ifindex": 7, "ids": {3}}}
    again.forget("eth0")
    assert again.originals == {} and again.targets == {}
    assert read(ledger.path) == {}
    Books(ledger, names).restore_all()
    assert not os.path.exists(ledger.path)


def test_forget_drops_the_device_from_every_book(tmp_path):
    t = Books(Ledger("books-a", str(tmp_path)), {"eth0": 7, "eth1": 8})
    t.apply("eth0", "eth1")
    t.forget("eth0")
    assert set(t.originals) == set(t.targets) == {"eth1"}


def test_another_instances_originals_are_taken_over_in_this_tuners_form(tmp_path):
    Ledger("books-b", str(tmp_path)).save({"eth0": {"ifindex": 7, "ids": [1]},
                                          "eth1": {"ifindex": 99, "ids": [2]}})
    t = Books(Ledger("books-a", str(tmp_path), kin="books-"), {"eth0": 7, "eth1": 8})
    t.apply("eth0", "eth1")
    assert t.originals == {"eth0": {"ifindex": 7, "ids": {1, 3}},   # the other's, then ours
                           "eth1": {"ifindex": 8, "ids": {3}}}       # not that device


def test_a_restarted_daemon_finds_originals_under_the_names_devices_have_now(tmp_path):
    """Renamed while no daemon ran: the originals follow the ifindex; a
    device that is gone, or created again under its name, gets none."""
    ledger = Ledger("books-a", str(tmp_path))
    ledger.save({"eth0": {"ifindex": 7, "ids": [1]}, "eth1": {"ifindex": 8, "ids": [2]},
                 "eth2": {"ifindex": 9, "ids": [3]}, "eth3": {"ifindex": 10, "ids": [4]}})
    now = {"eth1": 7, "eth0": 8, "eth3": 11}        # swapped; eth2 gone; eth3 re-created
    assert Books(ledger, now).originals == {"eth1": {"ifindex": 7, "ids": {1}},
                                            "eth0": {"ifindex": 8, "ids": {2}}}
