# SPDX-License-Identifier: GPL-2.0-or-later
"""What the plugins log for a bad option: one line per value, under the
option's name in the unit, with the profile variable it came from, and a
consequence that matches what happens (issue 35: a bad queues= said "the
option is not applied" while the whole [napi] instance tuned nothing)."""

import logging

import pytest

from support.tuned_loader import load_plugin_module, plugin_base, tuned_errors


def test_bad_queues_says_the_instance_tunes_nothing(napi_init, caplog):
    caplog.set_level(logging.DEBUG)
    instance = napi_init({"queues": "${suspend_queues}", "defer_hard_irqs": "${defer_hard_irqs}",
                          "irq_suspend_timeout": "584y"},
                         [("suspend_queues", "0-99999999"), ("defer_hard_irqs", "1_000")])
    assert instance._tuner is None
    assert tuned_errors(caplog) == [
        "instance napi: defer_hard_irqs: invalid value '1_000' (accepted: an integer from 0 "
        "to 2147483647), from variable defer_hard_irqs; the instance tunes nothing",
        "instance napi: irq_suspend_timeout: invalid value '584y' (accepted: a duration: a "
        "number of nanoseconds, or a number with unit ns, us, ms or s, at most 1s; or auto "
        "(measured from the services in auto_services)); the instance tunes nothing",
        "instance napi: queues: invalid value '0-99999999' (accepted: a list of numbers and "
        "ranges such as 0-3,6, each at most 65535), from variable suspend_queues; the "
        "instance tunes nothing"]


def test_bad_value_with_a_good_scope_is_left_out(napi_init, caplog):
    caplog.set_level(logging.DEBUG)
    instance = napi_init({"defer_hard_irqs": "100", "gro_flush_timeout": "18446744073709551615",
                          "queues": "0-3"})
    assert instance._tuner is not None
    assert instance._tuner.config.defer_hard_irqs == 100
    assert instance._tuner.config.gro_flush_timeout is None
    assert tuned_errors(caplog) == [
        "instance napi: gro_flush_timeout: invalid value '18446744073709551615' (accepted: a "
        "duration: a number of nanoseconds, or a number with unit ns, us, ms or s, at most "
        "1s; or auto (measured from the services in auto_services)); the option is not "
        "applied"]


def test_the_build_sets_the_re_check_interval_the_watcher_keeps(napi_init, monkeypatch):
    """recheck_interval is the napi build's; the plugin base only hands it
    to the link watcher (nic_housekeeping's tuner checks less often)."""
    watchers = []

    class Watcher:
        def __init__(self, on_change, on_tick, interval):
            watchers.append(interval)

        def start(self):
            pass
    for options, interval in (({}, 5.0), ({"recheck_interval": "30"}, 30)):
        instance = napi_init(dict(options, defer_hard_irqs="100"))
        monkeypatch.setitem(instance.plugin._start_watching.__func__.__globals__, "LinkWatcher",
                            Watcher)
        instance.plugin._start_watching(instance)
        assert instance._tuner.recheck_interval == interval
    assert watchers == [5.0, 30]
    from irqtune.features.channels import HousekeepingTuner
    assert HousekeepingTuner.recheck_interval == 10.0


def test_the_summary_line_says_what_the_tuner_did(napi_init, caplog):
    caplog.set_level(logging.DEBUG)
    instance = napi_init({"defer_hard_irqs": "100"})
    instance._tuner.apply = lambda *devices: 8
    instance.plugin._apply_devices(instance, ["eth0"])
    assert "instance napi: eth0: set 8 NAPIs" in [r.getMessage() for r in caplog.records]


def test_option_origin():
    pytest.importorskip("tuned.plugins")
    common = plugin_base("napi")
    assert common.option_origin("5", "5") == ""
    assert common.option_origin(None, "") == ""
    assert common.option_origin("${a}", "x") == ", from variable a"
    assert common.option_origin("${a},${b}", "x,${b}") == \
        ", variable b not defined (in the profile or its variables file)"
    assert common.option_origin("${f:strip:${a}}", "x") == ", from variable a"
