# SPDX-License-Identifier: GPL-2.0-or-later
"""The library's netlink code against real veth NAPIs (run under pyroute2 0.7 and 0.9)."""

import errno
import logging
import socket

import pytest

from irqtune.kernel.caps import detect_napi_capabilities
from irqtune.kernel.netlink.genl import NetlinkRequestError
from irqtune.kernel.netlink.netdev import NapiFamily, QueueFamily
from irqtune.features.napi import NapiConfig, NapiTuner
from support.rawnapi import RawGenl


def test_dump_lists_one_napi_per_rx_queue(netns):
    with NapiFamily() as nl:
        napis = nl.napis(socket.if_nametoindex("vn0"))
    assert len(napis) == 2
    assert {"id", "ifindex", "defer-hard-irqs", "gro-flush-timeout",
            "irq-suspend-timeout"} <= set(napis[0])


def test_set_and_get_round_trip_with_wide_uint(netns):
    with NapiFamily() as nl:
        napi_id = nl.napis(socket.if_nametoindex("vn0"))[0]["id"]
        assert nl.set_napis({napi_id: {"gro-flush-timeout": 2**40 + 5,
                                       "defer-hard-irqs": 9}}) == {}
        got = nl.napi(napi_id)
    assert got["gro-flush-timeout"] == 2**40 + 5 and got["defer-hard-irqs"] == 9
    raw = RawGenl()
    assert [n for n in raw.napis("vn0") if n["id"] == napi_id][0]["gro-flush-timeout"] \
        == 2**40 + 5
    raw.close()


def test_errors_carry_errno_and_the_kernels_extack(netns):
    with NapiFamily() as nl:
        napi_id = nl.napis(socket.if_nametoindex("vn0"))[0]["id"]
        err = nl.set_napis({napi_id: {"defer-hard-irqs": 2**31}})[napi_id]
        # "integer out of range" from the policy, at the attribute's offset:
        # after the 16-byte netlink and 4-byte genl headers (the id follows it)
        assert err.errno == errno.ERANGE and isinstance(err, OSError)
        assert err.extack.message and err.extack.offset == 16 + 4
        assert err.extack.refused == "defer-hard-irqs"     # named from the echoed request
        assert str(err.extack) in str(err)
        assert nl.set_napis({2**31: {"defer-hard-irqs": 1}})[2**31].errno == errno.ENOENT
        # napi-get without its id: the kernel names the missing attribute
        with pytest.raises(NetlinkRequestError) as err:
            nl.do("reading a NAPI", 11)
        assert err.value.errno == errno.EINVAL and err.value.extack.missing == "id", \
            vars(err.value.extack)


def test_one_refused_request_in_a_batch_carries_its_extack_and_the_rest_applies(netns):
    """napi-set for both NAPIs in one batch, the first with a value the
    kernel's policy refuses: that request alone fails, with the kernel's
    extack; the second NAPI gets its values (read back without the library)."""
    with NapiFamily() as nl:
        first, second = sorted(n["id"] for n in nl.napis(socket.if_nametoindex("vn0")))
        errors = nl.set_napis({first: {"defer-hard-irqs": 2**31},
                               second: {"defer-hard-irqs": 7, "gro-flush-timeout": 3000}})
    assert set(errors) == {first}, errors
    assert errors[first].errno == errno.ERANGE and errors[first].extack, vars(errors[first])
    assert "NAPI %d" % first in str(errors[first]) and str(errors[first].extack) in str(errors[first])
    raw = RawGenl()
    got = {n["id"]: n for n in raw.napis("vn0")}
    raw.close()
    assert got[second]["defer-hard-irqs"] == 7 and got[second]["gro-flush-timeout"] == 3000
    assert got[first]["defer-hard-irqs"] == 0


def test_veth_links_no_queues_to_napis(netns):
    with QueueFamily() as qf:
        assert qf.rx_queue_napis(socket.if_nametoindex("vn0")) == {}


def test_capabilities_of_this_kernel(netns):
    caps = detect_napi_capabilities()
    assert caps.napi_set and {"defer-hard-irqs", "gro-flush-timeout",
                              "irq-suspend-timeout"} <= caps.settable
    assert caps.missing("irq-suspend-timeout") is None


def test_tuner_applies_verifies_and_restores_exactly(netns):
    raw = RawGenl()
    for i, napi in enumerate(raw.napis("vn0")):
        raw.set(napi["id"], defer_hard_irqs=i + 1, gro_flush_timeout=1000 * (i + 1))
    before = raw.napis("vn0")
    tuner = NapiTuner(NapiConfig(defer_hard_irqs=100, gro_flush_timeout=20000,
                                 irq_suspend_timeout=20000000), detect_napi_capabilities())
    assert tuner.apply("vn0") == 2
    assert all(check.ok for check in tuner.verify("vn0"))
    assert all(n["irq-suspend-timeout"] == 20000000 for n in raw.napis("vn0"))
    assert tuner.apply("vn0") == 0       # nothing left to change: no round trips
    tuner.restore_all()
    assert raw.napis("vn0") == before
    raw.close()


def test_new_napis_after_link_flap_are_tuned(netns):
    tuner = NapiTuner(NapiConfig(defer_hard_irqs=100), detect_napi_capabilities())
    tuner.apply("vn0")
    netns.exec("ip", "link", "set", "vn0", "down")
    netns.up("vn0")
    assert not all(check.ok for check in tuner.verify("vn0"))
    assert tuner.apply_new("vn0") == 2
    assert all(check.ok for check in tuner.verify("vn0"))


def test_napis_gone_between_dump_and_set_are_no_error(netns, caplog, monkeypatch):
    """A NIC removed (or its NAPIs recreated) while the tuner works - as
    when a hot-added NIC is deleted again - is no error in TuneD's log."""
    caplog.set_level(logging.INFO)
    tuner = NapiTuner(NapiConfig(defer_hard_irqs=100), detect_napi_capabilities())
    save = tuner._save_state

    def save_then_flap(*args, **kwargs):      # after the dump, before napi-set
        save(*args, **kwargs)
        netns.exec("ip", "link", "set", "vn0", "down")
        netns.up("vn0")
    monkeypatch.setattr(tuner, "_save_state", save_then_flap)
    assert tuner.apply("vn0") == 0
    assert "went away before it was set" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


def test_queue_scope_on_a_driver_without_queue_links(netns, caplog):
    caplog.set_level(logging.ERROR)
    raw = RawGenl()
    before = raw.napis("vn0")
    tuner = NapiTuner(NapiConfig(defer_hard_irqs=100), detect_napi_capabilities(), queues=[0])
    assert tuner.apply("vn0") == 0
    assert "does not link rx queues to NAPIs" in caplog.text
    assert raw.napis("vn0") == before
    raw.close()


def test_originals_follow_a_rename_the_tuner_was_not_told_of(netns, tmp_path):
    """ip link set vn0 name vr0 while tuned, no move event (TuneD < 2.25):
    verify of "vn0" judges vr0's NAPIs, and restore_all - of this tuner and
    of one a restarted daemon builds from the ledger - puts the originals
    back on vr0 rather than dropping them as a gone device's."""
    from irqtune.shared.ledger import Ledger
    raw = RawGenl()
    for i, napi in enumerate(raw.napis("vn0")):
        raw.set(napi["id"], defer_hard_irqs=i + 1, gro_flush_timeout=1000 * (i + 1))
    before = [(n["defer-hard-irqs"], n["gro-flush-timeout"], n["irq-suspend-timeout"])
              for n in raw.napis("vn0")]
    config = NapiConfig(defer_hard_irqs=100, gro_flush_timeout=20000,
                        irq_suspend_timeout=20000000)
    ledger = Ledger("napi-rename", str(tmp_path))
    for restart in (False, True):
        tuner = NapiTuner(config, detect_napi_capabilities(), ledger=ledger)
        assert tuner.apply("vn0") == 2
        netns.exec("ip", "link", "set", "vn0", "name", "vr0")
        if restart:
            tuner = NapiTuner(config, detect_napi_capabilities(), ledger=ledger)
            assert set(tuner.originals) == {"vr0"}
        else:
            checks = tuner.verify("vn0")
            assert len(checks) == 6 and all(c.ok and c.device == "vr0" for c in checks)
        tuner.restore_all()
        after = [(n["defer-hard-irqs"], n["gro-flush-timeout"], n["irq-suspend-timeout"])
                 for n in raw.napis("vr0")]
        assert after == before, "restart=%s" % restart
        netns.exec("ip", "link", "set", "vr0", "name", "vn0")
    raw.close()


def test_a_batch_reports_every_refused_request_wherever_it_is(netns):
    """Only the batch's last request asks for an ack; a refusal anywhere
    (last, or every one) must still come back with its own extack."""
    with NapiFamily() as nl:
        first, second = sorted(n["id"] for n in nl.napis(socket.if_nametoindex("vn0")))
        errors = nl.set_napis({first: {"defer-hard-irqs": 5}, second: {"defer-hard-irqs": 2**31}})
        assert set(errors) == {second} and errors[second].errno == errno.ERANGE
        assert errors[second].extack
        errors = nl.set_napis({first: {"defer-hard-irqs": 2**31}, 2**31: {"defer-hard-irqs": 1},
                               second: {"defer-hard-irqs": 2**31}})
        assert {k: e.errno for k, e in errors.items()} == {
            first: errno.ERANGE, 2**31: errno.ENOENT, second: errno.ERANGE}
        assert nl.set_napis({first: {"defer-hard-irqs": 6}}) == {}
        assert nl.napi(first)["defer-hard-irqs"] == 6


def test_restore_leaves_a_device_created_again_under_the_same_name_alone(netns):
    """Originals belong to the device (ifindex) they were saved from: vn0
    deleted and created again is another device, whose values stay."""
    tuner = NapiTuner(NapiConfig(defer_hard_irqs=100), detect_napi_capabilities())
    assert tuner.apply("vn0") == 2
    netns.exec("ip", "link", "del", "vn0")
    netns.add_veth("vn0", queues=2)
    raw = RawGenl()
    for napi in raw.napis("vn0"):
        raw.set(napi["id"], defer_hard_irqs=42)
    tuner.restore_all()
    assert [n["defer-hard-irqs"] for n in raw.napis("vn0")] == [42, 42]
    raw.close()
