# SPDX-License-Identifier: GPL-2.0-or-later
import pytest

from irqtune.kernel.errors import OptionError
from irqtune.kernel.names import shown
from irqtune.kernel.values import (format_index_list, parse_choice, parse_duration_ns,
                                   parse_index_list, parse_int, parse_number)

U64_MAX = 2**64 - 1


@pytest.mark.parametrize("text,ns", [
    ("0", 0), ("20000", 20000), ("20us", 20000), ("20 us", 20000), ("20\tms", 20000000),
    ("1s", 10**9), ("7ns", 7), (" 5us ", 5000), ("1000000000", 10**9), ("1000ms", 10**9),
])
def test_durations(text, ns):
    assert parse_duration_ns("gro_flush_timeout", text) == ns


ACCEPTED_DURATION = ("a duration: a number of nanoseconds, or a number with unit ns, us, ms "
                     "or s, at most 1s")


@pytest.mark.parametrize("text", [
    "-5", "abc", "1.5us", "20 sec", "", "20 m s", "20us us",
    # issue 35: beyond any sane bound (2**64-1 ns is 584 years)
    str(U64_MAX), "1000000001", "2s", "1001ms", "18446744073709551616ns", "9" * 5000,
    # issue 35: digits Python's int() takes, nobody writes in a profile
    "1_000", "1_000us", "\u0662\u0660us", "\uff12\uff10us", "+20us"])
def test_bad_durations_name_option_value_and_range(text):
    with pytest.raises(OptionError) as err:
        parse_duration_ns("irq_suspend_timeout", text)
    assert str(err.value) == "irq_suspend_timeout: invalid value '%s' (accepted: %s)" % (
        shown(text), ACCEPTED_DURATION)


def test_duration_bound_is_a_parameter():
    assert parse_duration_ns("x", "2s", maximum=U64_MAX) == 2 * 10**9
    with pytest.raises(OptionError, match="at most 1500ns"):
        parse_duration_ns("x", "2us", maximum=1500)


@pytest.mark.parametrize("text", ["-5", "abc", "3000000000", "2147483648", "1e3", "1_000",
                                  "\u0661\u0660", "+5", " 1 0", "0x10", "9" * 5000])
def test_bad_ints(text):
    with pytest.raises(OptionError) as err:
        parse_int("defer_hard_irqs", text, 0, 2**31 - 1)
    assert str(err.value) == ("defer_hard_irqs: invalid value '%s' (accepted: an integer "
                              "from 0 to 2147483647)" % shown(text))


def test_int_bounds():
    assert parse_int("x", "2147483647", 0, 2**31 - 1) == 2**31 - 1
    assert parse_int("x", " 0 ", 0, 1) == 0
    assert parse_int("x", "-3", -5, 5) == -3


@pytest.mark.parametrize("text,value", [
    ("0.1", 0.1), ("2.", 2.0), (".5", 0.5), ("3600", 3600.0), (" 1.5 ", 1.5)])
def test_decimals(text, value):
    """The command line's seconds (status --interval, doctor --seconds):
    parse_int's rules with a fraction, a float whatever is written."""
    number = parse_number("--interval", text, 0.1, 3600, "0.1 to 3600", decimal=True)
    assert number == value and type(number) is float


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "1e3", "0x10", "1_0.5", "+1", ".", "-.",
                                  "1..2", "\u0661.5", "0.05", "3600.5", "-1", ""])
def test_bad_decimals(text):
    with pytest.raises(OptionError, match=r"^--interval: invalid value .* \(accepted: 0.1 to "
                                          r"3600\)$"):
        parse_number("--interval", text, 0.1, 3600, "0.1 to 3600", decimal=True)


def test_a_number_without_upper_bound():
    assert parse_number("--count", "9" * 20, 1, None, "1 or more") == int("9" * 20)
    with pytest.raises(OptionError, match="accepted: 1 or more"):
        parse_number("--count", "0", 1, None, "1 or more")


def test_choices():
    choices = {"disabled": 0, "enabled": 1}
    assert parse_choice("threaded", "Enabled", choices) == 1
    with pytest.raises(OptionError, match="one of disabled, enabled"):
        parse_choice("threaded", "fast", choices)


def test_index_lists_round_trip():
    assert parse_index_list("queues", "0-3,6, 8-8") == [0, 1, 2, 3, 6, 8]
    assert parse_index_list("queues", " 2 - 4 ,1-3,3") == [1, 2, 3, 4]
    assert format_index_list([6, 0, 1, 2, 3, 8]) == "0-3,6,8"
    for bad in ("3-1", "a", "1,,x", "", "-1"):
        with pytest.raises(OptionError):
            parse_index_list("queues", bad)


@pytest.mark.parametrize("text", [
    "0-99999999", "65536", "0-" + "9" * 5000,      # issue 35: refused by the bound alone
    "0-1 5",                                        # not 0-15
    "\u0660-\u0663", "1_0"])
def test_index_list_refused_with_its_bound(text):
    with pytest.raises(OptionError) as err:
        parse_index_list("queues", text, 65535)
    assert str(err.value) == ("queues: invalid value '%s' (accepted: a list of numbers and "
                              "ranges such as 0-3,6, each at most 65535)" % shown(text))


def test_index_list_cost_is_bounded_by_the_maximum():
    """Ranges are merged before they are expanded: 9000 copies of the
    whole range (63 KB, below MAX_LIST_CHARS) cost one."""
    assert parse_index_list("x", ",".join(["0-8191"] * 9000)) == list(range(8192))
    with pytest.raises(OptionError, match="each at most 8191"):
        parse_index_list("x", "0-8192")


@pytest.mark.parametrize("text", ["0," * 40000, " " * 70000 + "0"], ids=["80KB", "blanks"])
def test_index_list_text_bounded_before_it_is_split(text):
    """issue 39 item 7: 80 KB of "0," was split into 40,000 items first."""
    from irqtune.kernel.values import MAX_LIST_CHARS
    with pytest.raises(OptionError) as err:
        parse_index_list("queues", text, 65535)
    assert "at most %d characters" % MAX_LIST_CHARS in str(err.value)
