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
import shutil

import pytest

from support.tuned_loader import load_profile_functions

from irqtune.features import gsim
from irqtune.features.channels.config import HousekeepingConfig
from irqtune.services.measure import auto
from irqtune.features.napi import NapiConfig, parse_queues
from irqtune.services.overlay import read_overlay_file
from irqtune.features.service_optin.config import OptInValues, parse_bool, parse_services
from irqtune.features.zerocopy.config import ZeroCopyConfig
from irqtune.kernel.names import shown

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(os.path.dirname(__file__), "profile_fixtures")
PROFILES = sorted(os.listdir(os.path.join(REPO, "profiles")))
RT = "realtime-virtual-host-irqtune"


def etc_file(profile):
    return "/etc/tuned/%s-variables.conf" % profile


@pytest.fixture
def tuned_profiles():
    pytest.importorskip("tuned.profiles")
    load_profile_functions()


def parent_dir():
    """The TuneD package's own profile directory (/usr/lib/tuned or, 2.23+,
    /usr/lib/tuned/profiles) under the root the package was imported from."""
    import tuned
    import tuned.consts as consts
    package = os.path.dirname(os.path.abspath(tuned.__file__))
    root = package.split("/usr/lib/python3", 1)[0] if "/usr/lib/python3" in package else ""
    # 2.20: LOAD_DIRECTORIES; 2.23+: SYSTEM_PROFILES_DIR
    for directory in [getattr(consts, "SYSTEM_PROFILES_DIR", None)] + \
            list(getattr(consts, "LOAD_DIRECTORIES", [])):
        if directory and directory.startswith("/usr/") and os.path.isdir(root + directory):
            return root + directory
    pytest.skip("no profile directory of the TuneD package under %r" % (root or "/"))


def copy_profiles(tmp_path, variables):
    """profiles/ under tmp_path with each /etc/tuned/<profile>-variables.conf
    (the [variables] include, the overlays' variables_file) pointing at a
    file there holding variables[profile]."""
    top = tmp_path / "profiles"
    for name in PROFILES:
        shutil.copytree(os.path.join(REPO, "profiles", name), top / name)
        conf = top / name / "tuned.conf"
        path = tmp_path / ("%s-variables.conf" % name)
        path.write_text(variables[name])
        text, found = re.subn(r"^(include|variables_file)=%s$" % re.escape(etc_file(name)),
                              r"\1=" + str(path), conf.read_text(), flags=re.M)
        assert found == 1, "%s: where is its variables file?" % name
        conf.write_text(text)
    return str(top)


def load(tmp_path, names, variables):
    """(profile, Variables) as tuned.daemon loads it."""
    import tuned.profiles as profiles
    from tuned.profiles.variables import Variables
    v = Variables()
    loader = profiles.Loader(
        profiles.Locator([parent_dir(), copy_profiles(tmp_path, variables)]),
        profiles.Factory(), profiles.Merger(), None, v)
    if any(n == RT for n in names.split()) and \
            not os.path.exists(os.path.join(parent_dir(), "realtime-virtual-host", "tuned.conf")):
        pytest.skip("the TuneD package has no realtime-virtual-host profile")
    return loader.load(names), v


def old_layout(profile):
    with open(os.path.join(FIXTURES, "%s-variables.conf" % profile)) as f:
        return f.read()


def shipped(profile):
    with open(os.path.join(REPO, "profiles", profile, "%s-variables.conf" % profile)) as f:
        return f.read()


def parse_errors(unit, options):
    """What the irqtune plugin of unit.type would refuse in options."""
    errors = []

    def attempt(parse, *args):
        try:
            parse(*args)
        except Exception as err:    # noqa: BLE001 - reported below
            errors.append(err)
    kind = unit.type
    if kind == "napi":
        config, found = NapiConfig.from_options(options, auto=True)
        errors += found + auto.from_options(config, options, 5)[1]
        attempt(parse_queues, options.get("queues"))
    elif kind == "nic_housekeeping":
        errors += HousekeepingConfig.from_options(options)[1]
    elif kind in ("gsim", "zerocopy_rx"):
        prefix = "gsim_" if kind == "gsim" else "zerocopy_"
        options = dict(options)
        options.update(read_overlay_file(options.pop("variables_file", None), prefix,
                                         set(options)))
        if kind == "gsim":
            errors += gsim.GsimConfig.from_options(options)[1]
            attempt(gsim.IrqSelection.parse, options.get("irqs"))
        else:
            errors += ZeroCopyConfig.from_options(options)[1]
    elif kind == "busy_poll_optin":
        errors += OptInValues.from_options(options)[1]
        attempt(parse_services, options.get("services"))
        attempt(parse_bool, options.get("restart") or "")
    return errors


def check_loaded(profile, v, caplog):
    """[problem] of a loaded profile: TuneD's ERRORs, unexpanded ${...} in
    enabled units, values the irqtune plugins would refuse."""
    problems = ["TuneD logged: " + r.getMessage() for r in caplog.records
                if r.name.startswith("tuned") and r.levelno >= logging.ERROR]
    for name, unit in profile.units.items():
        if not unit.enabled:
            continue
        options = {}
        for option, value in unit.options.items():
            text = v.expand(value) if isinstance(value, str) else value
            if isinstance(text, str) and "${" in text:
                problems.append("[%s] %s=%s: not expanded" % (name, option, text))
            options[option] = text
        if unit.devices and "${" in str(unit.devices):
            problems.append("[%s] devices=%s: not expanded" % (name, unit.devices))
        problems += ["[%s] %s" % (name, err) for err in parse_errors(unit, options)]
    return problems


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
