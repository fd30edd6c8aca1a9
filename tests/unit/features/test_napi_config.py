# SPDX-License-Identifier: GPL-2.0-or-later
import logging

import pytest

from irqtune.kernel.caps import NapiCapabilities
from irqtune.shared.tuner import Check
from irqtune.features.napi import NapiConfig, NapiTuner
from irqtune.kernel.kfs import KernelFs
from support.fakes.netdev import FULL, OLD_KERNEL

NO_FAMILY = NapiCapabilities()


def test_options_parse_and_bad_ones_are_left_out():
    config, errors = NapiConfig.from_options({
        "defer_hard_irqs": "abc", "gro_flush_timeout": "20us",
        "irq_suspend_timeout": "20ms", "threaded": "", "queues": "0"})
    assert config.attrs() == {"gro-flush-timeout": 20000, "irq-suspend-timeout": 20000000}
    assert [e.option for e in errors] == ["defer_hard_irqs"]


def test_threaded_spellings():
    for text, value in (("busy-poll", 2), ("enabled", 1), ("off", 0), ("1", 1)):
        assert NapiConfig.from_options({"threaded": text})[0].threaded == value


def tuner(caps, queues=None, **values):
    return NapiTuner(NapiConfig(**values), caps, queues=queues)


def test_plan_uses_napi_set_when_the_kernel_has_it():
    t = tuner(FULL, defer_hard_irqs=100, gro_flush_timeout=20000, irq_suspend_timeout=1)
    assert set(t.per_napi) == {"defer-hard-irqs", "gro-flush-timeout", "irq-suspend-timeout"}
    assert not t.per_device and not t.unsupported


def test_plan_falls_back_to_sysfs_and_says_suspension_needs_613(caplog):
    caplog.set_level(logging.WARNING)
    t = tuner(OLD_KERNEL, defer_hard_irqs=100, gro_flush_timeout=20000,
              irq_suspend_timeout=20000000)
    assert t.per_device == {"defer-hard-irqs": 100, "gro-flush-timeout": 20000}
    assert "6.13" in t.unsupported["irq-suspend-timeout"]
    assert "IRQ suspension needs Linux >= 6.13" in caplog.text
    assert "device-wide sysfs" in caplog.text


def test_plan_without_family():
    t = tuner(NO_FAMILY, defer_hard_irqs=1)
    assert t.per_device == {"defer-hard-irqs": 1}


def test_queue_scope_cannot_fall_back_to_device_wide_files():
    t = tuner(OLD_KERNEL, queues=[0], defer_hard_irqs=1)
    assert not t.per_device
    assert "queues= needs per-NAPI control" in t.unsupported["defer-hard-irqs"]


def test_threaded_busy_poll_needs_619():
    t = tuner(FULL, threaded=2)
    assert "6.19" in t.unsupported["threaded"]
    caps = NapiCapabilities(netdev_family=True, napi_get=True, napi_set=True,
                            settable=frozenset({"threaded"}), threaded_busy_poll=True)
    assert tuner(caps, threaded=2).per_napi == {"threaded": 2}


@pytest.mark.parametrize("values,warns", [
    ({"irq_suspend_timeout": 20000000}, True),                      # seed's suspend0
    ({"irq_suspend_timeout": 1, "defer_hard_irqs": 100}, True),
    ({"irq_suspend_timeout": 1, "defer_hard_irqs": 100, "gro_flush_timeout": 0}, True),
    ({"irq_suspend_timeout": 1, "defer_hard_irqs": 100, "gro_flush_timeout": 1}, False),
    ({"defer_hard_irqs": 100}, False),
])
def test_suspension_without_deferral_warns(caplog, values, warns):
    caplog.set_level(logging.WARNING)
    tuner(FULL, **values)
    assert ("suspension has no effect without deferral" in caplog.text) == warns


def test_sysfs_fallback_applies_verifies_and_restores(tmp_path):
    # "lo" exists in every namespace, so the tuner can resolve its ifindex;
    # its sysfs files are stand-ins under tmp_path.
    dev = tmp_path / "class/net/lo"
    dev.mkdir(parents=True)
    (dev / "napi_defer_hard_irqs").write_text("2\n")
    (dev / "gro_flush_timeout").write_text("0\n")
    t = NapiTuner(NapiConfig(defer_hard_irqs=100, gro_flush_timeout=20000), OLD_KERNEL,
                  kfs=KernelFs(sys=str(tmp_path)))
    t.apply("lo")
    assert (dev / "napi_defer_hard_irqs").read_text() == "100\n"
    assert [(c.what, c.current, c.expected, c.ok) for c in t.verify("lo")] == [
        ("defer_hard_irqs", 100, 100, True), ("gro_flush_timeout", 20000, 20000, True)]
    (dev / "gro_flush_timeout").write_text("5\n")
    assert Check("gro_flush_timeout", 5, 20000, False) in t.verify("lo")
    t.restore_all()
    assert (dev / "napi_defer_hard_irqs").read_text() == "2\n"
    assert (dev / "gro_flush_timeout").read_text() == "0\n"


def test_sysfs_write_error_is_one_message(tmp_path, caplog):
    (tmp_path / "class/net/lo").mkdir(parents=True)
    t = NapiTuner(NapiConfig(defer_hard_irqs=1), OLD_KERNEL, kfs=KernelFs(sys=str(tmp_path)))
    t.apply("lo")
    assert caplog.text.count("cannot set defer_hard_irqs") == 1


def test_queues_beyond_any_nic_are_refused_not_expanded():
    """"0-4294967295" would be expanded into four billion indexes."""
    import pytest
    from irqtune.kernel.errors import OptionError
    from irqtune.features.napi import parse_queues
    assert parse_queues("0-3,65535")[-1] == 65535
    with pytest.raises(OptionError) as err:
        parse_queues("0-4294967295")
    assert err.value.option == "queues" and err.value.value == "0-4294967295"
