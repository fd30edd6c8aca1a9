# SPDX-License-Identifier: GPL-2.0-or-later
"""The napi tuner's queues= scope, at the library level: only the NAPIs the
named rx queues are linked to (queue-get's napi-id) are set, verified and
restored; the device's other NAPIs are nobody's business of this unit.

The integration tests cannot show this: veth links no rx queue to a NAPI.
The fake netdev family (support/fakes/netdev.py) answers as the build host's
virtio-net does on 6.18 - one NAPI per rx queue, queue i linked to the
i-th NAPI - here with four queue pairs.
"""

import pytest
from support.fakes.netdev import FULL, FakeNetdev

from irqtune.shared.ledger import Ledger
from irqtune.features.napi import NapiConfig, NapiTuner

SCOPE = [1, 3]
ADMIN = {"defer_hard_irqs": 2, "gro_flush_timeout": 50000}   # set before the profile


@pytest.fixture
def netdev(monkeypatch):
    fake = FakeNetdev().install(monkeypatch)
    fake.add_device(7, 4, **ADMIN)          # NAPIs 257-260, rx queue i on 257+i
    return fake


def scoped_tuner(tmp_path, queues=SCOPE):
    return NapiTuner(NapiConfig(defer_hard_irqs=100, gro_flush_timeout=20000,
                                irq_suspend_timeout=20000000), FULL, queues=queues,
                     ledger=Ledger("napi-scoped", str(tmp_path)),
                     ifindex={"eth0": 7}.get, ifname={7: "eth0"}.get)


def test_only_the_named_queues_napis_are_set(tmp_path, netdev):
    assert scoped_tuner(tmp_path).apply("eth0") == 2
    assert sorted(napi_id for napi_id, _ in netdev.sets) == [258, 260]
    assert netdev.values(7, "defer-hard-irqs") == [2, 100, 2, 100]
    assert netdev.values(7, "irq-suspend-timeout") == [0, 20000000, 0, 20000000]


def test_verify_judges_only_the_named_queues_napis(tmp_path, netdev):
    t = scoped_tuner(tmp_path)
    t.apply("eth0")
    checks = t.verify("eth0")
    assert sorted({c.what.split()[1] for c in checks}) == ["258", "260"]
    assert len(checks) == 6 and all(c.ok for c in checks)
    netdev.napi(257)["defer-hard-irqs"] = 7         # another unit's queue
    assert all(c.ok for c in t.verify("eth0"))
    netdev.napi(260)["gro-flush-timeout"] = 0       # this unit's queue 3
    assert [(c.what, c.current) for c in t.verify("eth0") if not c.ok] == \
        [("NAPI 260 gro_flush_timeout", 0)]


def test_restore_puts_back_only_the_named_queues_napis(tmp_path, netdev):
    t = scoped_tuner(tmp_path)
    t.apply("eth0")
    # meanwhile another [napi] unit of the profile tunes queue 0
    netdev.napi(257).update({"defer-hard-irqs": 50, "gro-flush-timeout": 10000})
    del netdev.sets[:]
    t.restore_all()
    assert sorted(napi_id for napi_id, _ in netdev.sets) == [258, 260]
    assert netdev.values(7, "defer-hard-irqs") == [50, 2, 2, 2]
    assert netdev.values(7, "gro-flush-timeout") == [10000, 50000, 50000, 50000]
    assert netdev.values(7, "irq-suspend-timeout") == [0, 0, 0, 0]


def test_napis_a_driver_recreated_are_tuned_again_within_the_scope(tmp_path, netdev):
    """A reset of a driver without persistent NAPI config: new ids, the
    kernel's defaults, the same queue links."""
    t = scoped_tuner(tmp_path)
    t.apply("eth0")
    netdev.remove_device(7)
    netdev.add_device(7, 4)                         # NAPIs 261-264
    del netdev.sets[:]
    assert t.apply_new("eth0") == 2
    assert sorted(napi_id for napi_id, _ in netdev.sets) == [262, 264]
    assert netdev.values(7, "defer-hard-irqs") == [0, 100, 0, 100]
    t.restore_all()
    # each position gets the original saved for it, the others stay as they are
    assert netdev.values(7, "defer-hard-irqs") == [0, 2, 0, 2]


def test_a_queue_the_device_lacks_is_named_and_the_rest_applies(tmp_path, netdev, caplog):
    t = scoped_tuner(tmp_path, queues=[3, 5])
    assert t.apply("eth0") == 1
    assert "eth0: rx queues 5 do not exist or have no NAPI" in caplog.text
    assert netdev.values(7, "defer-hard-irqs") == [2, 2, 2, 100]


def test_a_driver_linking_no_queue_to_a_napi_fails_verify(tmp_path, monkeypatch, caplog):
    """NAPIs without queue links (veth, drivers before netif_queue_set_napi()):
    the scope cannot be served, nothing is set - and verify must say so
    rather than find nothing to check."""
    fake = FakeNetdev().install(monkeypatch)
    fake.add_device(7, 4, linked=False, **ADMIN)
    t = scoped_tuner(tmp_path)
    assert t.apply("eth0") == 0 and fake.sets == []
    assert "does not link rx queues to NAPIs" in caplog.text
    checks = t.verify("eth0")
    assert checks and not any(c.ok for c in checks)
    assert "does not link rx queues to NAPIs" in checks[0].note
