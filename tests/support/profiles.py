# SPDX-License-Identifier: GPL-2.0-or-later
"""The repository's profiles (profiles/) loaded through TuneD's own profile
loader, as tuned.daemon loads them, over the parents of the TuneD package
imported, each with a variables file of the test's; and what is wrong in a
loaded profile: TuneD's ERRORs, unexpanded ${...} of enabled units, values
the irqtune plugins would refuse (what each plugin runs them through)."""

import logging
import os
import re
import shutil

import pytest

from irqtune.features import gsim
from irqtune.features.channels.config import HousekeepingConfig
from irqtune.features.napi import NapiConfig, parse_queues
from irqtune.features.service_optin.config import OptInValues, parse_bool, parse_services
from irqtune.features.zerocopy.config import ZeroCopyConfig
from irqtune.shared.measure import follow
from irqtune.shared.overlay import read_overlay_file

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PROFILES = sorted(os.listdir(os.path.join(REPO, "profiles")))
RT = "realtime-virtual-host-irqtune"


def etc_file(profile):
    return "/etc/tuned/%s-variables.conf" % profile


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
        config, found = NapiConfig.from_options(options, allow_auto=True)
        errors += found + follow.from_options(config, options, 5)[1]
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
