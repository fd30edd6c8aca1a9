# SPDX-License-Identifier: GPL-2.0-or-later
import os

from irqtune.kernel.caps import NapiCapabilities
from irqtune.features.napi import NapiConfig, NapiTuner
from irqtune.shared.ledger import Ledger
from irqtune.kernel.kfs import KernelFs
from support.fakes.systemd import FakeSystemd


def test_state_round_trip_and_removal(tmp_path):
    state = Ledger("napi-my instance/1", directory=str(tmp_path))
    assert state.path == str(tmp_path / "napi-my_instance_1.json")
    assert state.load() == {}
    state.save({"lo": {"napi": {"257": {"defer-hard-irqs": 3}}}})
    assert state.load()["lo"]["napi"]["257"]["defer-hard-irqs"] == 3
    state.remove()
    state.remove()
    assert state.load() == {}


def test_unreadable_state_is_ignored(tmp_path):
    state = Ledger("x", directory=str(tmp_path))
    (tmp_path / "x.json").write_text("{not json")
    assert state.load() == {}


def test_tuner_takes_originals_from_a_previous_run(tmp_path):
    """After kill -9 the saved originals, not the tuned values, are restored."""
    dev = tmp_path / "class/net/lo"
    dev.mkdir(parents=True)
    (dev / "napi_defer_hard_irqs").write_text("2\n")
    caps = NapiCapabilities()
    state = Ledger("napi", directory=str(tmp_path))
    first = NapiTuner(NapiConfig(defer_hard_irqs=100), caps, ledger=state,
                      kfs=KernelFs(sys=str(tmp_path)))
    first.apply("lo")
    # the daemon dies here; a new one applies the same profile
    second = NapiTuner(NapiConfig(defer_hard_irqs=100), caps, ledger=state,
                       kfs=KernelFs(sys=str(tmp_path)))
    second.apply("lo")
    second.restore_all()
    assert (dev / "napi_defer_hard_irqs").read_text() == "2\n"
    assert not (tmp_path / "napi.json").exists()


# -- the ledger's rules (irqtune.shared.ledger) ---------------------------------------

def test_a_ledger_that_cannot_be_written_stops_the_change(tmp_path, fake_kernel):
    """Nothing changes without its original on disk: the tuner raises
    LedgerError (the plugins' guard logs it) before the first write."""
    import pytest
    from support.fakes.gsim import SEED, gsim_tuner as tuner
    from irqtune.shared.ledger import LedgerError
    k = fake_kernel()
    before = k.knobs()
    (tmp_path / "not-a-dir").write_text("")
    t = tuner(k, SEED, state=Ledger("gsim-test", str(tmp_path / "not-a-dir")))
    with pytest.raises(LedgerError, match="cannot save originals to .*not-a-dir"):
        t.apply()
    assert k.knobs() == before and k.writes == []


def test_a_ledger_left_after_restore_is_logged_not_raised(tmp_path, caplog):
    from irqtune.shared.ledger import Ledger as L
    (tmp_path / "not-a-dir").write_text("")
    path = tmp_path / "not-a-dir" / "x.json"
    L("x", str(tmp_path / "not-a-dir")).update({"a": 1})
    # the errno's words and name from describe_os_error, the path said once
    assert [r.getMessage() for r in caplog.records] == [
        "cannot save originals to %s: File exists (EEXIST); nothing more is changed "
        "(free /run or fix its permissions)" % path]


def test_optin_records_its_drop_ins_before_writing_them(tmp_path, monkeypatch):
    """A daemon killed between the ledger and the drop-in leaves the next
    one the record of every file it may have written."""
    from irqtune.features import service_optin as so
    from irqtune.features.service_optin import optin as optin_module
    from support.fakes.optin import dropin, make_root
    root = make_root(tmp_path)
    ledger = Ledger("busy_poll_optin-t", str(tmp_path / "run"))
    seen = []
    real_write = optin_module.write_dropin

    def write(unit, path, content, earlier=None):
        seen.append(sorted(r["path"] for r in ledger.load().get("written", [])))
        return real_write(unit, path, content, earlier)
    monkeypatch.setattr(optin_module, "write_dropin", write)
    tuner = so.OptInTuner(so.ServiceOptIn("memcached, nginx", root=root,
                                          bus=FakeSystemd()), ledger=ledger)
    tuner.apply()
    both = sorted([dropin(root, "memcached.service"), dropin(root, "nginx.service")])
    assert seen == [both, both]
    assert [c.ok for c in tuner.verify()] == [True, True]
    tuner.restore_all()
    assert not os.path.exists(ledger.path) and not os.path.exists(both[0])
