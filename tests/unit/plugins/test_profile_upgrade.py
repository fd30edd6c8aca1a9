# SPDX-License-Identifier: GPL-2.0-or-later
"""Every profile of profiles/ loads through TuneD's own profile loader with
the variables file an upgraded host may still have: the first committed
version of each (profile_fixtures/, %config(noreplace) keeps it over
upgrades), an empty one, and the shipped one.  Every ${...} of an enabled
unit must expand, TuneD must log no ERROR, and the irqtune units' options
must pass the library's parsers (what each plugin runs them through).

The parents (network-latency, realtime-virtual-host, ...) come from the
TuneD package the test imports, so the run under Debian unstable's TuneD
(make check) loads its own parents too.  Also here: isolated_cores beyond
any CPU (issue 35) stops the profile with one line, not a MemoryError.
"""

import contextlib
import logging
import os
import re
import resource

import pytest

from support.profiles import PROFILES, RT, check_loaded, load

from irqtune.kernel.names import shown

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
FIXTURES = os.path.join(os.path.dirname(__file__), "..", "profile_fixtures")


def old_layout(profile):
    with open(os.path.join(FIXTURES, "%s-variables.conf" % profile)) as f:
        return f.read()


def shipped(profile):
    with open(os.path.join(REPO, "profiles", profile, "%s-variables.conf" % profile)) as f:
        return f.read()


LAYOUTS = {"oldest": old_layout, "empty": lambda profile: "", "shipped": shipped}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("name", PROFILES)
def test_profile_loads_with_every_variables_file_layout(tmp_path, caplog, tuned_profiles,
                                                        name, layout):
    caplog.set_level(logging.DEBUG)
    variables = {p: LAYOUTS[layout](p) for p in PROFILES}
    profile, v = load(tmp_path, name, variables)
    assert check_loaded(profile, v, caplog) == []


def test_rt_profile_defaults_are_the_shipped_values(tmp_path, caplog, tuned_profiles):
    """An empty file gives what the shipped file sets (GSIM off)."""
    _, empty = load(tmp_path / "a", RT, {p: "" for p in PROFILES})
    _, full = load(tmp_path / "b", RT, {p: shipped(p) for p in PROFILES})
    for name in ("isolated_cores", "isolate_managed_irq", "housekeeping_nics",
                 "housekeeping_channels", "napi_defer_hard_irqs", "napi_gro_flush_timeout",
                 "gsim_irqs", "gsim_delay_us", "housekeeping_cores"):
        assert empty.expand("${%s}" % name) == full.expand("${%s}" % name), name
    assert empty.expand("${gsim_delay_us}") == "" and empty.expand("${napi_defer_hard_irqs}") == "100"


def test_rt_profile_file_values_win_over_the_defaults(tmp_path, caplog, tuned_profiles):
    text = old_layout(RT) + "napi_defer_hard_irqs=7\ngsim_irqs=nic:eth0; name:^nvme\\d+q\\d+$\n" \
        "gsim_delay_us=50\nisolated_cores=1\n"
    profile, v = load(tmp_path, RT, dict({p: "" for p in PROFILES}, **{RT: text}))
    assert check_loaded(profile, v, caplog) == []
    assert v.expand(profile.units["napi"].options["defer_hard_irqs"]) == "7"
    assert v.expand(profile.units["gsim"].options["irqs"]) == "nic:eth0; name:^nvme\\d+q\\d+$"
    assert v.expand(profile.units["gsim"].options["delay_us"]) == "50"
    assert v.expand("${isolated_cores}") == "1"


@contextlib.contextmanager
def address_space_cap(extra=1 << 30):
    """A regression must end in MemoryError within a gigabyte, not take
    the shared machine's memory (the unfixed profile asks for 34 GB)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        used = int(f.read().split()[0]) * resource.getpagesize()
    cap = used + extra if hard == resource.RLIM_INFINITY else min(used + extra, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@pytest.mark.parametrize("value", ["0-4294967295", "0-8192", "2-x", "0, ^1", "0x" + "f" * 2049,
                                   "\u0663", "3-1"], ids=lambda value: value[:16])
def test_rt_profile_refuses_isolated_cores_beyond_any_cpu(tmp_path, caplog, tuned_profiles,
                                                          value):
    from tuned.profiles.exceptions import InvalidProfileException
    caplog.set_level(logging.DEBUG)
    variables = dict({p: "" for p in PROFILES}, **{RT: "isolated_cores=%s\n" % value})
    with address_space_cap(), pytest.raises(InvalidProfileException) as err:
        load(tmp_path, RT, variables)
    # what tuned-adm prints: "Cannot load profile(s) '...': <this>"
    assert str(err.value) == ("isolated_cores: invalid value '%s' (accepted: a CPU list such "
                              "as 2-7,10 in TuneD's syntax (numbers and ranges, ^N or !N to "
                              "leave CPUs out, 0x masks), CPUs 0 to 8191)" % shown(value))
    errors = [r.getMessage() for r in caplog.records
              if r.name.startswith("tuned") and r.levelno >= logging.ERROR]
    assert errors == [str(err.value) + "; the profile is not loaded"]


@pytest.mark.parametrize("value", ["0", "0-0", "^1,0-1", "!1, 0 - 1", "0x1", "0x,1", ""])
def test_rt_profile_takes_tuned_cpulists(tmp_path, caplog, tuned_profiles, value):
    """TuneD's cpulist syntax passes (CPU 0 only: the parents insist that
    isolated CPUs are online; test_cpus has the rest)."""
    variables = dict({p: "" for p in PROFILES}, **{RT: "isolated_cores=%s\n" % value})
    _, v = load(tmp_path, RT, variables)
    assert v.expand("${isolated_cores}") == value.strip()


def test_irqtune_default_function(tuned_profiles):
    from tuned.profiles.variables import Variables
    v = Variables()
    v.add_variable("set", "a:b")
    v.add_variable("empty", "")
    assert v.expand("${f:irqtune_default:x\\:y:${unset}}") == "x:y"
    assert v.expand("${f:irqtune_default:x:${set}}") == "a:b"
    assert v.expand("${f:irqtune_default:x:${empty}}") == ""
    assert re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*",
                        v.expand("${f:irqtune_default:${f:calc_isolated_cores:1}:${unset}}"))
