# SPDX-License-Identifier: GPL-2.0-or-later
import pytest

from irqtune.errors import OptionError
from irqtune.values import (U64_MAX, format_index_list, parse_choice, parse_duration_ns,
                            parse_index_list, parse_int)


@pytest.mark.parametrize("text,ns", [
    ("0", 0), ("20000", 20000), ("20us", 20000), ("20 us", 20000), ("20ms", 20000000),
    ("1s", 10**9), ("7ns", 7), (" 5us ", 5000), (str(U64_MAX), U64_MAX),
])
def test_durations(text, ns):
    assert parse_duration_ns("gro_flush_timeout", text) == ns


@pytest.mark.parametrize("text", ["-5", "abc", "1.5us", "20 sec", "", str(U64_MAX + 1),
                                  "18446744073709551616ns", "18446744074s"])
def test_bad_durations_name_option_value_and_range(text):
    with pytest.raises(OptionError) as err:
        parse_duration_ns("irq_suspend_timeout", text)
    msg = str(err.value)
    assert msg.startswith("irq_suspend_timeout: invalid value '%s'" % text)
    assert "ns, us, ms or s" in msg and str(U64_MAX) in msg


@pytest.mark.parametrize("text", ["-5", "abc", "3000000000", "2147483648", "1e3"])
def test_bad_ints(text):
    with pytest.raises(OptionError, match="from 0 to 2147483647"):
        parse_int("defer_hard_irqs", text, 0, 2**31 - 1)


def test_int_bounds():
    assert parse_int("x", "2147483647", 0, 2**31 - 1) == 2**31 - 1
    assert parse_int("x", " 0 ", 0, 1) == 0


def test_choices():
    choices = {"disabled": 0, "enabled": 1}
    assert parse_choice("threaded", "Enabled", choices) == 1
    with pytest.raises(OptionError, match="one of disabled, enabled"):
        parse_choice("threaded", "fast", choices)


def test_index_lists_round_trip():
    assert parse_index_list("queues", "0-3,6, 8-8") == [0, 1, 2, 3, 6, 8]
    assert format_index_list([6, 0, 1, 2, 3, 8]) == "0-3,6,8"
    for bad in ("3-1", "a", "1,,x", "", "-1"):
        with pytest.raises(OptionError):
            parse_index_list("queues", bad)
