# SPDX-License-Identifier: GPL-2.0-or-later
"""The role's validation: each profile variable is checked with the irqtune
library's own parser, and a bad value is named with its range."""

import os

import pytest

from ansible_collections.irqtune.tuning.plugins.plugin_utils import profile_variables as pv
from irqtune.features.napi import NapiConfig

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

LS, GSIM, RT = "latency-suspend", "gsim", "realtime-virtual-host-irqtune"


@pytest.fixture(scope="module")
def checker():
    return pv.ProfileVariables(REPO)


def errors_of(checker, profile, **values):
    files, errors = checker.render([profile], {profile: values})
    assert files == [] or not errors
    return errors


@pytest.mark.parametrize("profile, option, value, accepted", [
    (LS, "defer_hard_irqs", -5, "an integer from 0 to 2147483647"),
    (LS, "defer_hard_irqs", 3000000000, "an integer from 0 to 2147483647"),
    (LS, "defer_hard_irqs", "abc", "an integer from 0 to 2147483647"),
    (LS, "gro_flush_timeout", "fast", "a duration: a number of nanoseconds, or a number "
     "with unit ns, us, ms or s, at most 1s; or auto (measured from the services in "
     "auto_services)"),
    (LS, "irq_suspend_timeout", "20 minutes", "a duration: a number of nanoseconds, or a "
     "number with unit ns, us, ms or s, at most 1s; or auto (measured from the services in "
     "auto_services)"),
    (LS, "irq_suspend_timeout", "18446744073709551615", "a duration: a number of "
     "nanoseconds, or a number with unit ns, us, ms or s, at most 1s; or auto (measured "
     "from the services in auto_services)"),
    (LS, "auto_services", "memcached.socket", "systemd service units (name or "
     "name.service) or absolute paths of pid files, separated by commas"),
    (LS, "auto_services", "run/memcached.pid", "systemd service units (name or "
     "name.service) or absolute paths of pid files, separated by commas"),
    (LS, "auto_interval", 5, "an integer from 10 to 86400"),
    (LS, "suspend_queues", "3-1", "a list of numbers and ranges such as 0-3,6, each at "
     "most 65535"),
    (LS, "suspend_nics", "eth0;reboot", "a TuneD device list: names or shell wildcards "
     "separated by ',', '!' to exclude"),
    (LS, "busy_read", -1, "an integer from 0 to 2147483647"),
    (LS, "busy_poll", "50us", "an integer from 0 to 2147483647"),
    (LS, "optin_services", "memcached.socket", "service unit names (name or name.service)"),
    (LS, "optin_restart", "sometimes", "true or false"),
    (LS, "optin_busy_poll_usecs", "2147483648", "0..1000000"),
    (GSIM, "gsim_delay_us", 501, "an integer from 0 to 500"),
    (GSIM, "gsim_target_intr_rate", 50000001, "an integer from 0 to 50000000"),
    (GSIM, "gsim_hardirq_percent", 101, "an integer from 0 to 100"),
    (GSIM, "gsim_update_ms", 0, "an integer from 1 to 100"),
    (GSIM, "gsim_irqs", "nic:eth0;bogus", "selectors separated by ';': 'nic:' with NIC "
     "names (wildcards allowed), 'name:' with a regular expression, or 'all'"),
    (RT, "isolated_cores", "2-x", "a CPU list such as 2-7,10 or a TuneD function such "
     "as ${f:calc_isolated_cores:1}"),
    (RT, "isolate_managed_irq", "maybe", "one of y, n"),
    (RT, "housekeeping_channels", 0, "housekeeping, or a channel count from 1 to 65535"),
    (RT, "napi_defer_hard_irqs", -1, "an integer from 0 to 2147483647"),
    # the realtime profile names no services to measure: no auto there
    (RT, "napi_gro_flush_timeout", "auto", "a duration: a number of nanoseconds, or a "
     "number with unit ns, us, ms or s, at most 1s"),
    (RT, "gsim_delay_us", 1000, "an integer from 0 to 500"),
])
def test_bad_value_names_option_value_and_range(checker, profile, option, value, accepted):
    errors = errors_of(checker, profile, **{option: value})
    assert errors == ["%s: %s: invalid value '%s' (accepted: %s)"
                      % (profile, option, value, accepted)]


def test_ranges_are_the_library_messages(checker):
    """The accepted text is what the napi plugin would log for the same value."""
    _, library = NapiConfig.from_options({"defer_hard_irqs": "-5"})
    errors = errors_of(checker, LS, defer_hard_irqs=-5)
    assert errors[0].endswith("(accepted: %s)" % library[0].accepted)


@pytest.mark.parametrize("value", ["eth0\ndefer_hard_irqs=0", "eth0\rbusy_poll=50", {"a": 1}])
def test_one_line_only(checker, value):
    """A value cannot smuggle a second assignment into the file."""
    errors = errors_of(checker, LS, suspend_nics=value)
    assert len(errors) == 1 and "(accepted: one line of text)" in errors[0]


def test_every_error_of_every_profile_at_once(checker):
    files, errors = checker.render([LS, GSIM], {
        LS: {"defer_hard_irqs": -5, "gro_flush_timeout": "20us", "busy_poll": "x"},
        GSIM: {"gsim_delay_us": 501}})
    assert files == []
    assert [e.split(":")[:2] for e in errors] == [
        [LS, " defer_hard_irqs"], [LS, " busy_poll"], [GSIM, " gsim_delay_us"]]


def test_unknown_variable_lists_the_known_ones(checker):
    errors = errors_of(checker, LS, defer_hard_irq=100)
    assert errors == ["latency-suspend: unknown variable 'defer_hard_irq' (accepted: "
                      "suspend_nics, suspend_queues, defer_hard_irqs, gro_flush_timeout, "
                      "irq_suspend_timeout, auto_services, auto_interval, busy_read, "
                      "busy_poll, optin_services, optin_restart, optin_busy_poll_usecs)"]


def test_profile_names_and_stack(checker):
    _, errors = checker.render([LS, "gsim;reboot"], {})
    assert errors == ["irqtune_profile: invalid profile name 'gsim;reboot' (accepted: "
                      "one word of letters, digits, '_', '.', '+', '-')"]
    _, errors = checker.render([], {})
    assert errors[0].startswith("irqtune_profile: no profile given")
    _, errors = checker.render([LS], {GSIM: {"gsim_delay_us": 100}})
    assert errors == ["gsim: variables given, but the profile is not in "
                      "irqtune_profile ['latency-suspend']"]
    _, errors = checker.render(["balanced"], {"balanced": {"x": 1}})
    assert errors[0].startswith("balanced: variables given, but it is not one of "
                                "irqtune's profiles")


def test_good_values_render_the_file(checker):
    files, errors = checker.render("throughput-performance gsim latency-suspend", {
        LS: {"suspend_nics": ["eth0", "ens*"], "suspend_queues": "0-3",
             "defer_hard_irqs": 100, "gro_flush_timeout": "20us",
             "irq_suspend_timeout": "20ms", "busy_read": 0,
             "optin_services": ["memcached", "nginx.service"], "optin_restart": True},
        GSIM: {"gsim_irqs": r"nic:*; name:^nvme\d+q\d+$", "gsim_update_ms": ""}})
    assert errors == []
    assert [f["path"] for f in files] == ["/etc/tuned/gsim-variables.conf",
                                         "/etc/tuned/latency-suspend-variables.conf"]
    assert files[1]["content"] == pv.HEADER + (
        "suspend_nics=eth0,ens*\nsuspend_queues=0-3\ndefer_hard_irqs=100\n"
        "gro_flush_timeout=20us\nirq_suspend_timeout=20ms\nbusy_read=0\n"
        "optin_services=memcached,nginx.service\noptin_restart=true\n")
    assert files[0]["content"] == pv.HEADER + \
        "gsim_update_ms=\ngsim_irqs=nic:*; name:^nvme\\d+q\\d+$\n"


def test_auto_values_render_the_file(checker):
    """gro_flush_timeout=auto and irq_suspend_timeout=auto, with the
    services the napi plugin measures for them, as the plugin takes them."""
    files, errors = checker.render([LS], {LS: {
        "gro_flush_timeout": "auto", "irq_suspend_timeout": "AUTO",
        "auto_services": ["memcached", "/run/nginx.pid"], "auto_interval": 60}})
    assert errors == []
    assert files[0]["content"] == pv.HEADER + (
        "gro_flush_timeout=auto\nirq_suspend_timeout=AUTO\n"
        "auto_services=memcached,/run/nginx.pid\nauto_interval=60\n")
    config, library = NapiConfig.from_options({"gro_flush_timeout": "auto",
                                               "irq_suspend_timeout": "AUTO"}, allow_auto=True)
    assert library == [] and config.measured_attrs == {"gro-flush-timeout", "irq-suspend-timeout"}


def test_stack_without_variables_writes_defaults_only(checker):
    files, errors = checker.render([LS], {})
    assert errors == [] and files[0]["content"] == pv.HEADER


def test_shipped_defaults_are_kept(checker):
    """realtime-virtual-host-irqtune reads every variable from its file."""
    files, errors = checker.render([RT], {RT: {"isolated_cores": [2, 3],
                                               "isolate_managed_irq": False}})
    assert errors == []
    lines = files[0]["content"][len(pv.HEADER):].splitlines()
    assert lines == ["isolated_cores=2,3", "isolate_managed_irq=N", "housekeeping_nics=*",
                     "housekeeping_channels=housekeeping", "napi_defer_hard_irqs=100",
                     "napi_gro_flush_timeout=20us", "gsim_irqs=", "gsim_delay_us=",
                     "gsim_target_intr_rate=", "gsim_hardirq_percent="]


def test_tuned_function_default_accepted(checker):
    _, errors = checker.render([RT], {RT: {"isolated_cores": "${f:calc_isolated_cores:2}"}})
    assert errors == []


@pytest.mark.parametrize("profile", [LS, GSIM, RT, "zerocopy-rx-host"])
def test_every_shipped_variable_has_a_checker(checker, profile):
    """A variable of a shipped file feeds an option whose parser checks it
    (the profile's tuned.conf says which), or TuneD's own reader."""
    assert set(checker.shipped[profile]) - {"zerocopy_nics"} <= \
        {name for name, checks in checker.checks[profile].items() if checks}


def test_shipped_variables_read_from_the_profiles(tmp_path):
    profile = tmp_path / "profiles" / "demo"
    profile.mkdir(parents=True)
    (profile / "demo-variables.conf").write_text(
        "# comment\n#a=1\nb = no\nb_default=x y\n#b_default=other\n\n")
    (tmp_path / "profiles" / "plain").mkdir()
    assert pv.shipped_variables(str(tmp_path)) == {"demo": {"a": None, "b_default": "x y"}}
    assert os.path.basename(pv.variables_path("demo")) == "demo-variables.conf"
