# SPDX-License-Identifier: GPL-2.0-or-later
from irqtune.caps import NapiCapabilities
from irqtune.napi import NapiConfig, NapiTuner
from irqtune.ledger import Ledger
from irqtune.kfs import KernelFs


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
