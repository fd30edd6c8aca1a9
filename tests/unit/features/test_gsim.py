# SPDX-License-Identifier: GPL-2.0-or-later
"""irqtune.features.gsim against procfs/sysfs fixtures of the three GSIM shapes.

Plain files stand in for procfs; FakeKernel (support/fakes/gsim.py)
replaces the library's write function with what each shape's kernel code
does on a write (ERANGE or clamping, "name=value" on the v1-v3 file,
EOPNOTSUPP for hardirq_percent without IRQ time accounting, interrupts
that disappear), so that the library's reactions to the kernel are what
is tested.
"""

import errno
import json
import logging
import os

import pytest

from irqtune.features import gsim
from irqtune.kernel import irqs
from irqtune.kernel.errors import OptionError
from irqtune.shared.ledger import Ledger
from irqtune.kernel.kfs import KernelFs
from support.fakes.gsim import ETH0_QUEUES, IRQS, NCPU, SEED, interrupts_text, set_originals
from support.fakes.gsim import gsim_tuner as tuner

ALL_SHAPES = [gsim.SHAPE_LATEST, gsim.SHAPE_V4, gsim.SHAPE_V1]


# -- detection and parsing ----------------------------------------------------

def test_detect_none(tmp_path):
    os.makedirs(tmp_path / "irq" / "24")
    assert gsim.detect(KernelFs(str(tmp_path))) is None
    assert "/proc/irq/sw_moderation" in gsim.MISSING_MESSAGE
    assert "/proc/irq/soft_moderation" in gsim.MISSING_MESSAGE
    assert "kernel-patches/gsim" in gsim.MISSING_MESSAGE


@pytest.mark.parametrize("shape", ALL_SHAPES)
def test_detect_shapes(fake_kernel, shape):
    k = fake_kernel(shape)
    iface = gsim.detect(k.kfs)
    assert iface.shape == shape
    assert {o: iface.read_knob(o) for o in gsim.KNOBS} == {
        "delay_us": 0, "target_intr_rate": 0, "hardirq_percent": 0, "update_ms": 5}
    assert iface.switch_path(25).endswith(k.switch_name)
    assert iface.read_switch(25) is False
    assert iface.switch_path(999) is None and iface.read_switch(999) is None


@pytest.mark.parametrize("shape", [gsim.SHAPE_V1, gsim.SHAPE_V4])
def test_old_target_name_is_mapped(fake_kernel, shape):
    k = fake_kernel(shape, target_name="target_irq_rate")
    iface = gsim.detect(k.kfs)
    assert iface.kernel_names["target_intr_rate"] == "target_irq_rate"
    iface.write_knob("target_intr_rate", 5000)
    assert k.values["target_irq_rate"] == 5000
    assert iface.read_knob("target_intr_rate") == 5000
    if shape == gsim.SHAPE_V1:
        assert k.writes[-1] == ("irq/soft_moderation", "target_irq_rate=5000")


@pytest.mark.parametrize("text, state", [
    ("on irq 25 trigger 0x0 Edge unmanaged lazy handle_irq handle_edge_irq+0x0/0x170\n", True),
    ("off irq 25 trigger 0x0 Edge managed unlazy handle_irq handle_fasteoi_irq+0x0/0x1d0\n",
     False),
    ("1\n", True), ("0\n", False), ("on\n", True), ("off\n", False)])
def test_parse_switch_line_and_word(text, state):
    assert gsim.parse_switch(text) is state


@pytest.mark.parametrize("text", ["", "\n", "maybe irq 25\n", "2\n"])
def test_parse_switch_rejects_unknown_states(text):
    with pytest.raises(ValueError):
        gsim.parse_switch(text)


def test_v1_switch_line_is_read_and_written(fake_kernel):
    k = fake_kernel(gsim.SHAPE_V1)
    iface = gsim.detect(k.kfs)
    with open(iface.switch_path(25)) as f:
        assert f.read().startswith("off irq 25 trigger 0x")
    assert iface.read_switch(25) is False
    iface.write_switch(25, True)
    assert iface.read_switch(25) is True and k.switch(25) is True


def test_v4_per_irq_switch_named_moderation(fake_kernel):
    k = fake_kernel(gsim.SHAPE_V4, switch_name="moderation")
    iface = gsim.detect(k.kfs)
    assert iface.switch_path(25).endswith("/25/moderation")
    iface.write_switch(25, True)
    assert k.switch(25) is True


def test_parse_interrupts():
    parsed = irqs.parse_interrupts(interrupts_text(IRQS))
    assert sorted(parsed) == sorted(IRQS)
    info = parsed[25]
    assert (info.chip, info.kind, info.name) == ("PCI-MSIX-0000:00:03.0", "1-edge",
                                                  "virtio0-input.0")
    assert info.count == sum(250 + c for c in range(NCPU))
    assert info.eligible and not parsed[1].eligible and not parsed[9].eligible
    assert parsed[50].eligible       # PCI-MSI, edge


def test_parse_interrupts_two_column_trigger():
    text = ("           CPU0       CPU1\n"
            " 11:          0          0     GICv3  27 Level     arch_timer\n"
            " 70:         12          3  ITS-MSI 524288 Edge      eth0-rx-0\n")
    parsed = irqs.parse_interrupts(text)
    assert parsed[70].name == "eth0-rx-0" and parsed[70].eligible
    assert parsed[11].name == "arch_timer" and not parsed[11].eligible


def test_config_ranges():
    config, errors = gsim.GsimConfig.from_options(
        {"delay_us": "500", "target_intr_rate": "50000000", "hardirq_percent": "0",
         "update_ms": " 1 "})
    assert errors == []
    assert config.items() == {"delay_us": 500, "target_intr_rate": 50000000,
                              "hardirq_percent": 0, "update_ms": 1}
    assert gsim.GsimConfig.from_options({"delay_us": ""})[0].items() == {}


@pytest.mark.parametrize("option,value,accepted", [
    ("delay_us", "501", "from 0 to 500"),
    ("delay_us", "-1", "from 0 to 500"),
    ("target_intr_rate", "50000001", "from 0 to 50000000"),
    ("target_intr_rate", "1M", "from 0 to 50000000"),
    ("hardirq_percent", "101", "from 0 to 100"),
    ("update_ms", "0", "from 1 to 100"),
    ("update_ms", "abc", "from 1 to 100"),
    # issue 35: the message showed "${gsimdelayus}" (underscores stripped
    # before parsing); digit separators are no longer taken at all
    ("delay_us", "${gsim_delay_us}", "from 0 to 500"),
    ("target_intr_rate", "50_000_000", "from 0 to 50000000"),
])
def test_config_rejects(option, value, accepted):
    options = dict(SEED, **{option: value})
    config, errors = gsim.GsimConfig.from_options(options)
    assert len(errors) == 1
    err = errors[0]
    assert err.option == option and err.value == value and accepted in str(err)
    assert option not in config.items()
    assert len(config.items()) == len(SEED) - (option in SEED)


def test_selection_parse():
    s = gsim.IrqSelection.parse("nic:eth0, eth1 ; name:^nvme\\d+q[1-9]")
    assert s.nics == ("eth0", "eth1") and s.patterns[0].pattern == "^nvme\\d+q[1-9]"
    assert gsim.IrqSelection.parse("all").everything
    assert not gsim.IrqSelection.parse("") and not gsim.IrqSelection.parse(None)


@pytest.mark.parametrize("bad", ["eth0", "nic:", "name:", "name:[", "every", "all:x",
                                 "nic:eth0;bogus:1", "nic:a$b"])
def test_selection_rejects(bad):
    with pytest.raises(OptionError) as info:
        gsim.IrqSelection.parse(bad)
    assert info.value.option == "irqs" and "nic:" in str(info.value)


def nic_irqs(k, spec, napi_irqs=None):
    sel = gsim.IrqSelection.parse(spec)
    return sorted(sel.select(irqs.read_interrupts(k.kfs), k.kfs, napi_irqs))


def test_nic_queue_irqs(fake_kernel):
    """Queue vectors of the virtio PCI function one level above the netdev's
    device, without the config vector (irqtune.kernel.irqs does the finding)."""
    k = fake_kernel()
    assert nic_irqs(k, "nic:eth0") == ETH0_QUEUES
    assert nic_irqs(k, "nic:eth1") == [31]
    assert nic_irqs(k, "nic:veth0") == [] and nic_irqs(k, "nic:nope") == []
    # IRQs that the driver links to its NAPIs count whatever their name
    k.add_irq(60, "PCI-MSIX-0000:00:03.0", "5-edge", "eth0", msi_of="eth0")
    assert nic_irqs(k, "nic:eth0") == ETH0_QUEUES
    assert nic_irqs(k, "nic:eth0", lambda n: {60} if n == "eth0" else set()) == \
        ETH0_QUEUES + [60]


def test_nic_queue_irqs_skip_misc_vectors(fake_kernel):
    """ixgbe-style: a vector named like the NIC itself, mlx5-style async."""
    k = fake_kernel()
    k.add_irq(60, "PCI-MSIX-0000:00:03.0", "5-edge", "eth0", msi_of="eth0")
    k.add_irq(61, "PCI-MSIX-0000:00:03.0", "6-edge", "mlx5_async0@pci:0000:00:03.0",
              msi_of="eth0")
    k.add_irq(62, "PCI-MSIX-0000:00:03.0", "7-edge", "eth0-TxRx-4", msi_of="eth0")
    assert nic_irqs(k, "nic:eth0") == ETH0_QUEUES + [62]


def test_selection_select(fake_kernel):
    k = fake_kernel()
    ints = irqs.read_interrupts(k.kfs)
    sel = gsim.IrqSelection.parse("nic:eth*; name:^nvme\\d+q[1-9]")
    assert sorted(sel.select(ints, k.kfs, None)) == ETH0_QUEUES + [31, 41, 42]
    t = tuner(k, {}, irqs="all")
    assert sorted(t.switches.selected(ints)) == [24, 25, 26, 27, 28, 30, 31, 40, 41, 42, 50]


# -- apply, verify, restore -----------------------------------------------------

@pytest.mark.parametrize("shape", ALL_SHAPES)
def test_apply_verify_restore(fake_kernel, shape):
    k = fake_kernel(shape)
    set_originals(k)
    before = (k.knobs(), k.switches(k.irqs))
    t = tuner(k, dict(SEED, update_ms="2"))
    knobs, switched = t.apply()
    assert (knobs, switched) == (4, 3)      # 26 was on already
    assert k.knobs() == {"delay_us": 100, "target_intr_rate": 1000000,
                         "hardirq_percent": 70, "update_ms": 2}
    assert k.switches(k.irqs) == {**before[1], **{i: True for i in ETH0_QUEUES}}
    # delay_us (which starts moderation) is written last
    assert "delay_us" in k.writes[-1][0] + k.writes[-1][1]
    assert [(o, c, e) for o, _, c, e in t.verify_knobs()] == [
        ("delay_us", 100, 100), ("target_intr_rate", 1000000, 1000000),
        ("hardirq_percent", 70, 70), ("update_ms", 2, 2)]
    assert [(i, c) for i, _, _, c, _ in t.verify_switches()] == [(i, 1) for i in ETH0_QUEUES]
    t.restore_all()
    assert (k.knobs(), k.switches(k.irqs)) == before
    # delay_us (which stops moderation) is restored first
    first_restore = [w for w in k.writes if "delay_us" in w[0] + w[1]]
    assert k.writes.index(first_restore[-1]) == len(k.writes) - 4 - 3


def test_apply_twice_writes_nothing_new(fake_kernel):
    k = fake_kernel()
    t = tuner(k, SEED)
    t.apply()
    n = len(k.writes)
    assert t.apply() == (0, 0) and len(k.writes) == n


@pytest.mark.parametrize("shape", ALL_SHAPES)
def test_verify_sees_changes_behind_its_back(fake_kernel, shape):
    k = fake_kernel(shape)
    t = tuner(k, SEED)
    t.apply()
    k.set_knob("delay_us", 5)
    k._set_switch(27, False)
    knobs = {o: (c, e) for o, _, c, e in t.verify_knobs()}
    assert knobs["delay_us"] == (5, 100)
    assert (27, 0) in [(i, c) for i, _, _, c, _ in t.verify_switches()]


def test_kernel_erange_is_reported_with_option_value_and_range(fake_kernel, caplog):
    k = fake_kernel()
    k.ranges["delay_us"] = (0, 300)         # a kernel stricter than the postings
    t = tuner(k, dict(SEED, delay_us="400"))
    with caplog.at_level(logging.ERROR, logger="irqtune"):
        t.apply()
    assert k.values["delay_us"] == 0
    assert k.values["target_intr_rate"] == 1000000 and k.switches(ETH0_QUEUES) == \
        {i: True for i in ETH0_QUEUES}
    err = t.rejected["delay_us"]
    assert isinstance(err, OptionError) and err.option == "delay_us" and err.value == 400
    text = str(err)
    assert "ERANGE" in text and "from 0 to 500" in text and "'400'" in text
    assert [r.getMessage() for r in caplog.records] == ["gsim: " + text]
    assert "delay_us" not in [o for o, *_ in t.verify_knobs()]
    t.restore_all()
    assert k.values["target_intr_rate"] == 0


def test_v4_clamping_is_detected(fake_kernel):
    k = fake_kernel(gsim.SHAPE_V4)
    k.ranges["update_ms"] = (1, 10)
    t = tuner(k, {"update_ms": "50"})
    t.apply()
    assert k.values["update_ms"] == 10
    assert "kept 10" in str(t.rejected["update_ms"])
    t.restore_all()
    assert k.values["update_ms"] == 5


def test_hardirq_percent_without_time_accounting(fake_kernel):
    k = fake_kernel(time_accounting=False)
    t = tuner(k, SEED)
    t.apply()
    assert k.values["hardirq_percent"] == 0 and k.values["delay_us"] == 100
    assert "CONFIG_IRQ_TIME_ACCOUNTING" in t.unsupported["hardirq_percent"]
    assert [o for o, *_ in t.verify_knobs()] == ["delay_us", "target_intr_rate"]


def test_missing_knob_file(fake_kernel):
    k = fake_kernel(gsim.SHAPE_V4)
    os.unlink(os.path.join(k.proc, "irq/soft_moderation/hardirq_percent"))
    t = tuner(k, SEED)
    assert "hardirq_percent" in t.unsupported["hardirq_percent"]
    t.apply()
    assert k.values["delay_us"] == 100 and k.values["target_intr_rate"] == 1000000


def test_missing_switch_file_is_not_selected(fake_kernel):
    k = fake_kernel()
    os.unlink(os.path.join(k.proc, "irq/27", k.switch_name))
    t = tuner(k, SEED)
    assert t.apply()[1] == 3
    assert 27 not in [i for i, *_ in t.verify_switches()]


def test_missing_interrupts_file(fake_kernel):
    k = fake_kernel()
    os.unlink(os.path.join(k.proc, "interrupts"))
    t = tuner(k, SEED)
    assert t.apply() == (3, 0)
    assert t.apply_new() == 0


@pytest.mark.parametrize("shape", ALL_SHAPES)
@pytest.mark.parametrize("err", [errno.ENOENT, errno.EINVAL])
def test_irq_vanishing_mid_apply(fake_kernel, caplog, shape, err):
    """Another CPU frees IRQ 27 between the /proc/interrupts read and the
    write to its switch: open() fails (ENOENT) or, on a file opened just
    before, the kernel finds no descriptor (EINVAL)."""
    k = fake_kernel(shape)

    def vanish(rel):
        if rel.startswith("irq/27/") and 27 in k.irqs:
            k.remove_irq(27)
            if err == errno.EINVAL:
                k.fail[rel] = errno.EINVAL
    k.on_write.append(vanish)
    t = tuner(k, SEED)
    with caplog.at_level(logging.WARNING, logger="irqtune"):
        assert t.apply() == (3, 3)
    assert caplog.records == []
    assert k.switches([25, 26, 28]) == {25: True, 26: True, 28: True}
    assert "27" not in t.originals["irqs"]
    t.restore_all()
    assert k.switches([25, 26, 28]) == {25: False, 26: False, 28: False}


def test_refused_switch_is_an_error(fake_kernel, caplog):
    k = fake_kernel()
    k.fail["irq/25/allow_sw_moderation"] = errno.EIO
    t = tuner(k, SEED)
    with caplog.at_level(logging.ERROR, logger="irqtune"):
        t.apply()
    path = os.path.join(k.proc, "irq/25/allow_sw_moderation")
    assert [r.getMessage() for r in caplog.records] == [
        "gsim: IRQ 25 (virtio0-input.0): cannot allow moderation: %s: writing '1' failed: "
        "Input/output error (EIO)" % path]
    assert (25, 0) in [(i, c) for i, _, _, c, _ in t.verify_switches()]


def test_v4_ineligible_irq_not_written(fake_kernel):
    k = fake_kernel(gsim.SHAPE_V4)
    t = tuner(k, {}, irqs="name:^(i8042|virtio0-input)")
    t.apply()
    assert [w[0] for w in k.writes] == ["irq/25/soft_moderation", "irq/27/soft_moderation"]


def test_new_irqs_are_moderated_and_restored(fake_kernel):
    k = fake_kernel()
    t = tuner(k, SEED, irqs="nic:eth*")
    t.apply()
    assert k.switches([31]) == {31: True}
    # eth0 gets more channels, and a NIC eth2 is hot-added
    k.add_irq(29, "PCI-MSIX-0000:00:03.0", "5-edge", "virtio0-input.2", msi_of="eth0")
    assert t.apply_new() == 1
    assert k.switch(29) is True
    # eth1 is unplugged: its IRQ goes, and a later IRQ with its number is new
    k.remove_irq(31)
    assert t.apply_new() == 0 and "31" not in t.originals["irqs"]
    # eth0 re-probed: same numbers and names, switches back to the default
    for irq in ETH0_QUEUES:
        k._set_switch(irq, False)
    assert t.apply_new() == 4 and all(k.switches(ETH0_QUEUES).values())
    t.restore_all()
    assert k.switch(29) is False and not any(k.switches(ETH0_QUEUES).values())


def test_reused_irq_number_is_not_restored_from_stale_original(fake_kernel):
    k = fake_kernel()
    k._set_switch(25, True)
    t = tuner(k, SEED)
    t.apply()
    # IRQ 25 freed and its number given to another device, with the switch on
    k.remove_irq(25)
    k.add_irq(25, "PCI-MSIX-0000:00:09.0", "0-edge", "other-dev")
    k._set_switch(25, True)
    t.restore_all()
    assert k.switch(25) is True


def test_originals_survive_a_restart(fake_kernel, tmp_path):
    k = fake_kernel()
    set_originals(k)
    before = (k.knobs(), k.switches(k.irqs))
    state = Ledger("gsim-test", str(tmp_path / "state"))
    tuner(k, SEED, state=state).apply()
    saved = json.load(open(state.path))
    assert saved["knobs"]["delay_us"] == 7 and saved["irqs"]["25"] == \
        {"name": "virtio0-input.0", "allow": 0}
    # kill -9; the next daemon applies again, then the profile is switched off
    t2 = tuner(k, SEED, state=Ledger("gsim-test", str(tmp_path / "state")))
    assert t2.apply() == (0, 0)
    t2.restore_all()
    assert (k.knobs(), k.switches(k.irqs)) == before
    assert not os.path.exists(state.path)


def test_state_of_another_shape_is_ignored(fake_kernel, tmp_path):
    state = Ledger("gsim-test", str(tmp_path / "state"))
    state.save({"shape": gsim.SHAPE_V1, "knobs": {"delay_us": 400}, "irqs": {}})
    k = fake_kernel()
    t = tuner(k, SEED, state=state)
    t.apply()
    t.restore_all()
    assert k.values["delay_us"] == 0


def test_unreadable_knob_is_not_changed(fake_kernel):
    """v1 postings list some knobs only: what cannot be read cannot be
    restored, so it is not written."""
    k = fake_kernel(gsim.SHAPE_V1)
    path = os.path.join(k.proc, "irq/soft_moderation")
    text = open(path).read().replace("hardirq_percent", "hardirq_pct")
    with open(path, "w") as f:
        f.write(text)
    t = tuner(k, SEED)
    assert "hardirq_percent" in t.unsupported
    t.apply()
    assert not any("hardirq" in w[1] for w in k.writes)


def test_kernel_refusing_an_irq_leaves_it_alone(fake_kernel, caplog):
    """The fixed GSIM answers EOPNOTSUPP for an interrupt it cannot moderate
    (unmaskable MSI, threaded handler, timer): not a failure, not retried,
    not reported by verify."""
    k = fake_kernel()
    k.fail["irq/25/allow_sw_moderation"] = errno.EOPNOTSUPP
    t = tuner(k, SEED)
    with caplog.at_level(logging.INFO, logger="irqtune"):
        assert t.apply() == (3, 3)
    assert "IRQ 25" in caplog.text and "EOPNOTSUPP" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert 25 not in [i for i, *_ in t.verify_switches()]
    n = len(k.writes)
    assert t.apply_new() == 0 and len(k.writes) == n
    t.restore_all()
    assert k.switches(ETH0_QUEUES) == {i: False for i in ETH0_QUEUES}
