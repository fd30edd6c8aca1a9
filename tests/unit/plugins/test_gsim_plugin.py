# SPDX-License-Identifier: GPL-2.0-or-later
"""The gsim TuneD plugin, loaded into the installed TuneD's plugin package
and driven through TuneD's own Plugin/Instance/Storage/Variables classes,
against the procfs fixtures and fake kernel of test_gsim."""

import logging
import os
import re
import time

import pytest

from support.tuned_loader import Cfg, create_instance, load_plugin_module

from irqtune.features import gsim
from irqtune.kernel.kfs import KernelFs

from support.fakes.gsim import ETH0_QUEUES, ORIGINAL_KNOBS, FakeKernel, set_originals

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SEED = {"delay_us": "100", "target_intr_rate": "1000000", "hardirq_percent": "70",
        "irqs": "nic:eth0"}


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """make(kernel or None, options, watch=False) -> (plugin, instance)."""
    pytest.importorskip("tuned.plugins")
    module = load_plugin_module("gsim")
    from tuned.plugins.instance import Factory as InstanceFactory
    from tuned.profiles.variables import Variables
    from tuned.storage import Factory as StorageFactory, PickleProvider

    provider = PickleProvider(path=str(tmp_path / "save.pickle"))
    state_dir = str(tmp_path / "state")
    made = []

    def make(kernel, options, watch=False, interval=0.2, variables=None):
        proc = kernel.proc if kernel is not None else str(tmp_path / "noproc")
        sysfs = kernel.sys if kernel is not None else str(tmp_path / "nosys")
        os.makedirs(os.path.join(proc, "irq"), exist_ok=True)
        cls = type("TestGsimPlugin", (module.GsimPlugin,), {
            "_seams": {"kfs": KernelFs(proc, sysfs), "state_dir": state_dir, "napi_irqs": None},
            "_watch": watch})
        monkeypatch.setattr(gsim.GsimTuner, "recheck_interval", interval)
        cls.__module__ = module.__name__    # Plugin.name derives from it
        v = Variables()
        for key, value in (variables or {}).items():
            v.add_variable(key, value)
        p = cls(None, StorageFactory(provider), None, None, None, InstanceFactory(), Cfg(), v)
        inst = create_instance(p, "gsim", options)
        p.initialize_instance(inst)
        made.append((p, inst))
        return p, inst

    make.module = module
    make.state_dir = state_dir
    lib_log = logging.getLogger("irqtune")
    saved = (list(lib_log.handlers), lib_log.propagate, lib_log.level)
    yield make
    for p, inst in made:
        p._instance_stop_background(inst)
    lib_log.handlers[:], lib_log.propagate = saved[0], saved[1]
    lib_log.setLevel(saved[2])


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    def make(shape=gsim.SHAPE_LATEST, **kwargs):
        k = FakeKernel(tmp_path / "k", shape, **kwargs)
        monkeypatch.setattr(gsim.interface, "_write_text", k.write)
        return k
    return make


def tuned_messages(caplog, level=logging.DEBUG):
    return [r.getMessage() for r in caplog.records
            if r.name.startswith("tuned") and r.levelno >= level]


def test_options_and_hints(plugin):
    opts = plugin.module.GsimPlugin._get_config_options()
    assert set(opts) == {"delay_us", "target_intr_rate", "hardirq_percent", "update_ms", "irqs",
                         "variables_file"}
    assert set(plugin.module.GsimPlugin.get_config_options_hints()) == set(opts)
    assert "target_intr_rate" in plugin.module.GsimPlugin.__doc__


@pytest.mark.parametrize("shape", [gsim.SHAPE_LATEST, gsim.SHAPE_V4, gsim.SHAPE_V1])
def test_apply_verify_unapply(plugin, kernel, caplog, shape):
    k = kernel(shape)
    set_originals(k)
    before = (k.knobs(), k.switches(k.irqs))
    p, inst = plugin(k, SEED)
    with caplog.at_level(logging.INFO):
        p.instance_apply_tuning(inst)
    assert "GSIM: 3 values written, moderation allowed on 3 IRQs" in caplog.text
    assert k.knobs()["delay_us"] == 100 and k.knobs()[k.target_name] == 1000000
    assert all(k.switches(ETH0_QUEUES).values())
    caplog.clear()
    with caplog.at_level(logging.INFO):
        assert p.instance_verify_tuning(inst, False) is True
    text = "\n".join(tuned_messages(caplog))
    assert "verify: passed: 'delay_us (%s)' = '100'" % gsim.detect(k.kfs).knob_path(
        "delay_us") in text
    for irq in ETH0_QUEUES:
        assert re.search(r"verify: passed: device irq%d \(virtio0-\w+\.\d\): '.*/%d/%s' = '1'"
                         % (irq, irq, k.switch_name), text), text
    assert "failed" not in text
    # TuneD 2.20 passes a bool
    p.instance_unapply_tuning(inst, True)
    assert (k.knobs(), k.switches(k.irqs)) == before
    assert not os.listdir(plugin.state_dir)


def test_variables_are_expanded(plugin, kernel):
    k = kernel()
    p, inst = plugin(k, {"delay_us": "${d}", "irqs": "${sel}"},
                     variables={"d": "250", "sel": "name:^nvme0q[1-9]"})
    p.instance_apply_tuning(inst)
    assert k.values["delay_us"] == 250
    assert k.switches([40, 41, 42]) == {40: False, 41: True, 42: True}


def test_variables_file_overrides_the_profile(plugin, kernel, tmp_path, caplog):
    k = kernel()
    vfile = tmp_path / "gsim-variables.conf"
    vfile.write_text("# comment\n#gsim_delay_us=1\ngsim_delay_us = 200\n"
                     "gsim_irqs=name:${pat}\nbogus=1\ngsim_nope=2\n")
    with caplog.at_level(logging.ERROR):
        p, inst = plugin(k, dict(SEED, variables_file=str(vfile)),
                         variables={"pat": "^nvme0q1$"})
        p.instance_apply_tuning(inst)
    assert k.values["delay_us"] == 200 and k.values["target_intr_rate"] == 1000000
    assert k.switches([25, 41]) == {25: False, 41: True}
    errors = tuned_messages(caplog, logging.ERROR)
    assert len(errors) == 2 and ":5: ignored" in errors[0] and ":6: ignored" in errors[1]


def test_missing_variables_file_changes_nothing(plugin, kernel, tmp_path, caplog):
    k = kernel()
    with caplog.at_level(logging.WARNING):
        p, inst = plugin(k, dict(SEED, variables_file=str(tmp_path / "none.conf")))
        p.instance_apply_tuning(inst)
    assert k.values["delay_us"] == 100 and tuned_messages(caplog, logging.WARNING) == []


def test_verify_fails_for_changes_behind_its_back(plugin, kernel, caplog):
    k = kernel()
    p, inst = plugin(k, SEED)
    p.instance_apply_tuning(inst)
    k.set_knob("target_intr_rate", 5)
    k._set_switch(27, False)
    with caplog.at_level(logging.INFO):
        assert p.instance_verify_tuning(inst, False) is False
    text = "\n".join(tuned_messages(caplog))
    assert "verify: failed: 'target_intr_rate (%s/irq/sw_moderation/target_intr_rate)' = '5', " \
        "expected '1000000'" % k.proc in text
    assert "verify: failed: device irq27 (virtio0-input.1): '%s/irq/27/allow_sw_moderation' " \
        "= '0', expected '1'" % k.proc in text


def test_kernel_without_gsim(plugin, caplog):
    with caplog.at_level(logging.DEBUG):
        p, inst = plugin(None, SEED)
        p.instance_apply_tuning(inst)
    warnings = tuned_messages(caplog, logging.WARNING)
    assert len(warnings) == 1, warnings
    assert "/proc/irq/sw_moderation" in warnings[0] and "kernel-patches/gsim" in warnings[0]
    caplog.clear()
    with caplog.at_level(logging.INFO):
        assert p.instance_verify_tuning(inst, False) is False
    text = tuned_messages(caplog)
    assert sorted(line.split(": ")[3] for line in text) == sorted(SEED)
    assert all("unsupported" in line and "verify: failed" in line for line in text), text
    assert not any("passed" in line for line in text)
    caplog.clear()
    with caplog.at_level(logging.INFO):
        assert p._instance_verify_static(inst, True, set()) is None
    assert len([m for m in tuned_messages(caplog) if "skipped, missing" in m]) == 4
    p.instance_unapply_tuning(inst, True)


def test_bad_value_is_one_error_and_the_rest_applies(plugin, kernel, caplog):
    k = kernel()
    with caplog.at_level(logging.ERROR):
        p, inst = plugin(k, dict(SEED, delay_us="600"))
        p.instance_apply_tuning(inst)
    errors = tuned_messages(caplog, logging.ERROR)
    assert len(errors) == 1, errors
    assert "delay_us" in errors[0] and "'600'" in errors[0] and "from 0 to 500" in errors[0]
    assert k.values["delay_us"] == 0 and k.values["target_intr_rate"] == 1000000
    assert all(k.switches(ETH0_QUEUES).values())
    caplog.clear()
    with caplog.at_level(logging.INFO):
        assert p.instance_verify_tuning(inst, False) is False
    assert "invalid value '600'" in caplog.text


def test_bad_irqs_touches_no_switch_but_the_targets_apply(plugin, kernel, caplog):
    k = kernel()
    with caplog.at_level(logging.ERROR):
        p, inst = plugin(k, dict(SEED, irqs="eth0"))
        p.instance_apply_tuning(inst)
    errors = tuned_messages(caplog, logging.ERROR)
    assert len(errors) == 1 and "irqs" in errors[0] and "nic:" in errors[0]
    assert [w for w in k.writes if w[0].split("/")[1].isdigit()] == []
    assert k.values["delay_us"] == 100 and k.values["target_intr_rate"] == 1000000
    caplog.clear()
    with caplog.at_level(logging.INFO):
        assert p.instance_verify_tuning(inst, False) is False
    assert "verify: failed: 'gsim: irqs: invalid value 'eth0'" in caplog.text
    p.instance_unapply_tuning(inst, True)
    assert k.values["delay_us"] == 0


def test_kernel_erange_in_log_and_verify(plugin, kernel, caplog):
    k = kernel()
    k.ranges["target_intr_rate"] = (0, 2000000)
    with caplog.at_level(logging.ERROR):
        p, inst = plugin(k, dict(SEED, target_intr_rate="3000000"))
        p.instance_apply_tuning(inst)
    errors = tuned_messages(caplog, logging.ERROR)
    assert len(errors) == 1, errors
    assert "target_intr_rate" in errors[0] and "'3000000'" in errors[0]
    assert "ERANGE" in errors[0] and "from 0 to 50000000" in errors[0]
    assert k.values["delay_us"] == 100
    caplog.clear()
    with caplog.at_level(logging.INFO):
        assert p.instance_verify_tuning(inst, False) is False
    assert "verify: failed: 'gsim: target_intr_rate: invalid value '3000000'" in caplog.text


def test_hardirq_unsupported_reported(plugin, kernel, caplog):
    k = kernel(time_accounting=False)
    p, inst = plugin(k, SEED)
    p.instance_apply_tuning(inst)
    with caplog.at_level(logging.INFO):
        assert p.instance_verify_tuning(inst, False) is False
        assert p._instance_verify_static(inst, True, set()) is True
    assert "hardirq_percent: unsupported" in caplog.text
    assert "verify: skipped, missing: 'gsim hardirq_percent'" in caplog.text


@pytest.mark.parametrize("rollback,restored", [(False, True), (True, True), (0, False),
                                               (1, True), (2, True)])
def test_rollback_signatures(plugin, kernel, rollback, restored):
    """bool (2.20) restores either way; 2.21+ ROLLBACK_NONE (0) leaves the
    settings and the saved originals for the next start."""
    k = kernel()
    set_originals(k, switches_on=())
    p, inst = plugin(k, SEED)
    p.instance_apply_tuning(inst)
    p._instance_unapply_static(inst, rollback)
    assert (k.values["delay_us"] == ORIGINAL_KNOBS["delay_us"]) is restored
    assert (not any(k.switches(ETH0_QUEUES).values())) is restored
    assert bool(os.listdir(plugin.state_dir)) is not restored


def test_restarted_daemon_restores_the_first_originals(plugin, kernel):
    """kill -9 after apply: the next daemon applies again over tuned values
    and, on off, restores the originals saved in the state file."""
    k = kernel()
    set_originals(k)
    before = (k.knobs(), k.switches(k.irqs))
    p, inst = plugin(k, SEED)
    p.instance_apply_tuning(inst)
    # no unapply: the daemon died
    p2, inst2 = plugin(k, SEED)
    p2.instance_apply_tuning(inst2)
    assert k.values["delay_us"] == 100
    p2.instance_unapply_tuning(inst2, True)
    assert (k.knobs(), k.switches(k.irqs)) == before


def test_watcher_moderates_irqs_that_appear_later(plugin, kernel):
    k = kernel()
    p, inst = plugin(k, dict(SEED, irqs="nic:eth*"), watch=True, interval=0.1)
    p.instance_apply_tuning(inst)
    assert inst._watcher is not None
    k.add_irq(29, "PCI-MSIX-0000:00:03.0", "5-edge", "virtio0-input.2", msi_of="eth0")
    deadline = time.monotonic() + 10
    while not k.switch(29) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert k.switch(29) is True
    p.instance_unapply_tuning(inst, True)
    assert inst._watcher is None
    assert k.switch(29) is False and k.switch(31) is False


def test_no_options_does_nothing(plugin, kernel, caplog):
    k = kernel()
    with caplog.at_level(logging.DEBUG):
        p, inst = plugin(k, {})
        p.instance_apply_tuning(inst)
        assert p._instance_verify_static(inst, False, set()) is None
    assert k.writes == [] and tuned_messages(caplog, logging.WARNING) == []



def test_library_lines_carry_the_plugins_name(plugin, caplog):
    """TuneD's log names the plugin whose entry point ran, also for what the
    library and the shared base logged (the integration suite greps for
    plugin_gsim)."""
    with caplog.at_level(logging.DEBUG):
        p, inst = plugin(None, SEED)
        p.instance_apply_tuning(inst)
    missing = [r for r in caplog.records if gsim.MISSING_MESSAGE in r.getMessage()]
    assert [r.name for r in missing] == ["tuned.plugins.plugin_gsim"]
