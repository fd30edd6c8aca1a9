# SPDX-License-Identifier: GPL-2.0-or-later
"""latency-suspend through TuneD 2.27 under systemd on Linux 7.2's virtio-net.

The guest's NIC has 4 rx queues, each with its own NAPI (virtio_net links
queues to NAPIs and keeps their config across down/up since 6.15).  Every
value is read back with the raw netlink reader (tests/support/rawnapi.py),
never with the library under test.
"""

import pytest

from support.host7 import NON_DEFAULT_ORIGINALS, SUSPEND_VALUES, napi_values

VARS = "latency-suspend"     # its variables file
TUNED, ORIGINAL = SUSPEND_VALUES, NON_DEFAULT_ORIGINALS
values = napi_values


def set_originals(h):
    for nid in h.napis():
        h.napi_set(nid, **ORIGINAL)
    assert all(values(n) == ORIGINAL for n in h.napis().values())


def variables(h, **extra):
    v = {"suspend_nics": h.nic}
    v.update(extra)
    return {VARS: v}


@pytest.fixture
def h(host7):
    host7.off()
    set_originals(host7)
    yield host7
    host7.off()


def test_every_napi_tuned_verified_and_restored_by_off(h):
    assert len(h.napis()) == 4
    h.profile(h.lab_profile(), variables=variables(h))
    napis = h.napis()
    assert {nid: values(n) for nid, n in napis.items()} == {nid: TUNED for nid in napis}
    ok, log = h.verify()
    assert ok, log
    h.off()
    assert {nid: values(n) for nid, n in h.napis().items()} == {nid: ORIGINAL for nid in napis}


def test_profile_switch_restores_originals(h):
    h.profile(h.lab_profile(), variables=variables(h))
    before = set(h.napis())
    h.profile("virtual-guest")
    napis = h.napis()
    assert set(napis) == before
    assert all(values(n) == ORIGINAL for n in napis.values()), napis


def test_queues_select_exactly_their_napis(h):
    queues = h.rx_queue_napis()
    assert sorted(queues) == [0, 1, 2, 3], queues
    h.profile(h.lab_profile(), variables=variables(h, suspend_queues="0-1"))
    napis = h.napis()
    selected = {queues[0], queues[1]}
    for nid, n in napis.items():
        assert values(n) == (TUNED if nid in selected else ORIGINAL), (nid, queues, napis)
    ok, log = h.verify()
    assert ok, log


def test_persistent_napi_config_survives_down_up_without_rewrite(h):
    """virtio_net keeps NAPI ids and values over down/up: nothing to redo.
    A value changed behind TuneD's back before the cycle must still be
    there after it (a tuner that rewrote every NAPI on the link event
    would erase it) and verify must name it."""
    h.profile(h.lab_profile(), variables=variables(h))
    ids = sorted(h.napis())
    drifted = ids[0]
    h.napi_set(drifted, **{"defer-hard-irqs": 42})
    h.link_cycle()
    napis = h.napis()
    assert sorted(napis) == ids
    assert napis[drifted]["defer-hard-irqs"] == 42
    assert all(values(napis[i]) == TUNED for i in ids[1:])
    ok, log = h.verify()
    assert not ok and str(drifted) in log, log
    h.off()
    assert all(values(n) == ORIGINAL for n in h.napis().values())


@pytest.mark.parametrize("mode,number", [("enabled", 1), ("busy-poll", 2)])
def test_threaded_per_napi(h, mode, number):
    """threaded per NAPI: the NAPI kthread exists (pid in napi-get and a
    napi/<dev>-<id> task), verify passes, off restores non-threaded."""
    h.custom_profile("irqtune-threaded", "[main]\nsummary=threaded NAPI (test)\n\n"
                     "[napi]\ndevices=%s\nthreaded=%s\n" % (h.nic, mode))
    h.profile("irqtune-threaded")
    napis = h.napis()
    for nid, n in napis.items():
        assert n.get("threaded") == number, napis
        pid = n.get("pid")
        assert pid, napis
        comm = h.sh("cat /proc/%d/comm" % pid).strip()
        assert comm.startswith("napi/"), comm
    ok, log = h.verify()
    assert ok, log
    h.off()
    assert all(not n.get("threaded") and not n.get("pid") for n in h.napis().values())
