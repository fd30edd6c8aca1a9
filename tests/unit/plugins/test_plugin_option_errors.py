# SPDX-License-Identifier: GPL-2.0-or-later
"""What the plugins log for a bad option: one line per value, under the
option's name in the unit, with the profile variable it came from, and a
consequence that matches what happens (issue 35: a bad queues= said "the
option is not applied" while the whole [napi] instance tuned nothing)."""

import logging

import pytest

from support.tuned_loader import load_plugin_module, tuned_errors


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


def test_option_origin():
    pytest.importorskip("tuned.plugins")
    common = load_plugin_module("napi").common
    assert common.option_origin("5", "5") == ""
    assert common.option_origin(None, "") == ""
    assert common.option_origin("${a}", "x") == ", from variable a"
    assert common.option_origin("${a},${b}", "x,${b}") == \
        ", variable b not defined (in the profile or its variables file)"
    assert common.option_origin("${f:strip:${a}}", "x") == ", from variable a"
