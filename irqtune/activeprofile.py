# SPDX-License-Identifier: GPL-2.0-or-later
"""What TuneD's active profile asks of each NAPI, read from its files.

`irqtune doctor` and `irqtune metrics` compare the values NAPIs hold with
the values the active profile's [napi] units set, without asking the
daemon (which may not run, and whose verify writes to its log).  The
profile is resolved the way TuneD resolves it, as far as these units need:

- the active profile names come from /etc/tuned/active_profile (several
  names separated by spaces are merged in order, as TuneD does);
- a profile is looked up in /etc/tuned/profiles, /etc/tuned,
  /usr/lib/tuned/profiles, /usr/lib/tuned (the user's copies first);
- ``include=`` in [main] loads the parents first, the child overrides them
  option by option;
- [variables] with its own ``include=`` file (``name=value`` lines), and
  ``${name}`` expanded; a value holding a TuneD function (``${f:...}``) is
  not evaluated here and the unit is skipped as unknown - except irqtune's
  own ``name=${f:irqtune_default:DEFAULT:${name}}`` (a default for a line
  the variables file lacks), which is evaluated where TuneD evaluates it;
- a unit is a [napi] (or [busy_poll_optin]) section or any section with
  ``type=napi``; ``enabled=false`` drops it.

Device expressions follow TuneD's: comma-separated, shell wildcards, ``!``
excludes.  A wildcard only reaches physical NICs (TuneD's net plugins list
only those), a name given in full reaches any device.
"""

import configparser
import fnmatch
import os
import re
from dataclasses import dataclass

from .kfs import KFS
from .napi import NapiConfig, parse_queues
from .errors import OptionError

ETC = "/etc/tuned"
PROFILE_DIRS = ("/etc/tuned/profiles", "/etc/tuned", "/usr/lib/tuned/profiles", "/usr/lib/tuned")
_VAR = re.compile(r"\$\{([A-Za-z0-9_]+)\}")
_FUNC = re.compile(r"\$\{[a-z]+:")
_DEFAULT = re.compile(r"^\$\{f:irqtune_default:(.*):\$\{(\w+)\}\}$")


@dataclass(frozen=True)
class NapiUnit:
    """One [napi] unit of the active profile."""

    profile: str
    name: str
    devices: str
    queues: object      # [rx queue] or None (all)
    config: NapiConfig

    def covers(self, ifname, kfs=KFS):
        return device_matches(self.devices, ifname, kfs)

    def expected(self):
        """{netlink attribute: value} the unit sets."""
        return self.config.attrs()


def active_profile_names(etc=ETC):
    try:
        with open(os.path.join(etc, "active_profile")) as f:
            return f.read().split()
    except OSError:
        return []


def _find_profile(name, dirs):
    for d in dirs:
        path = os.path.join(d, name, "tuned.conf")
        if os.path.isfile(path):
            return path
    return None


def _read_ini(path):
    parser = configparser.ConfigParser(interpolation=None, strict=False,
                                       delimiters=("=",), comment_prefixes=("#", ";"),
                                       inline_comment_prefixes=None)
    parser.optionxform = str
    with open(path) as f:
        parser.read_string(f.read(), path)
    return {s: dict(parser[s]) for s in parser.sections()}


def _read_variables_file(path):
    values = {}
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("#") and "=" in line:
                    key, _, value = line.partition("=")
                    values[key.strip()] = value.strip()
    except OSError:
        pass
    return values


def load_profile(name, dirs=PROFILE_DIRS, _seen=None):
    """{section: {option: raw value}} of a profile with its parents merged."""
    seen = set() if _seen is None else _seen
    if name in seen:
        return {}
    seen.add(name)
    path = _find_profile(name, dirs)
    if path is None:
        return {}
    own = _read_ini(path)
    merged = {}
    for parent in re.split(r"[\s,]+", own.get("main", {}).get("include", "").strip()):
        if parent:
            _merge(merged, load_profile(parent, dirs, seen))
    _merge(merged, own)
    return merged


def _merge(into, sections):
    for section, options in sections.items():
        if section == "variables":
            # a child's variables extend the parents'; include= files are read in order
            target = into.setdefault("variables", {})
            for key, value in options.items():
                if key == "include":
                    target.update(_read_variables_file(value))
                else:
                    target[key] = _with_default(key, value, target)
            continue
        into.setdefault(section, {}).update(options)


def _with_default(key, value, variables):
    """name=${f:irqtune_default:DEFAULT:${name}} (tuned-functions/) as
    TuneD evaluates it at that line: the value so far, else DEFAULT."""
    match = _DEFAULT.match(value.strip())
    if not match or match.group(2) != key:
        return value
    so_far = variables.get(key)
    if so_far is None or so_far.strip() == "${%s}" % key:    # realtime's isolated_cores=${isolated_cores}
        return match.group(1).replace("\\:", ":")
    return so_far


def expand(value, variables, depth=0):
    """value with ${name} replaced; None when it needs a TuneD function."""
    if value is None:
        return None
    if _FUNC.search(value) or depth > 10:
        return None
    new = _VAR.sub(lambda m: variables.get(m.group(1), ""), value)
    return new if new == value else expand(new, variables, depth + 1)


def units_of_type(kind, etc=ETC, dirs=None):
    """(profile names or None, [(section, {option: expanded value})], [skipped])
    for the enabled units of one plugin type in the active profile."""
    names = active_profile_names(etc)
    if not names:
        return None, [], []
    merged = {}
    for name in names:
        _merge(merged, load_profile(name, dirs or PROFILE_DIRS))
    variables = merged.get("variables", {})
    variables = {k: expand(v, variables) or "" for k, v in variables.items()}
    units, skipped = [], []
    for section, options in merged.items():
        if section in ("main", "variables") or options.get("type", section) != kind:
            continue
        values = {k: expand(v, variables) for k, v in options.items()}
        if (values.get("enabled") or "true").lower() in ("false", "0", "no", "off"):
            continue
        if any(v is None for v in values.values()):
            skipped.append("[%s]: a value uses a TuneD function; not compared" % section)
            continue
        units.append((section, values))
    return " ".join(names), units, skipped


def napi_units(etc=ETC, dirs=None):
    """(profile name or None, [NapiUnit], [why a unit was skipped])."""
    profile, sections, skipped = units_of_type("napi", etc, dirs)
    units = []
    for section, values in sections:
        config, errors = NapiConfig.from_options(values)
        try:
            queues = parse_queues(values.get("queues"))
        except OptionError as err:
            errors.append(err)
            queues = None
        skipped.extend("[%s] %s" % (section, e) for e in errors)
        units.append(NapiUnit(profile, section, values.get("devices") or "*", queues, config))
    return profile, units, skipped


def optin_units(etc=ETC, dirs=None):
    """(profile name or None, [(section, (service unit, ...))]) of the
    active profile's busy_poll_optin units."""
    from .service_optin.config import parse_services
    profile, sections, _skipped = units_of_type("busy_poll_optin", etc, dirs)
    units = []
    for section, values in sections:
        try:
            services = parse_services(values.get("services"))
        except OptionError:
            continue
        if services:
            units.append((section, tuple(services)))
    return profile, units


def device_matches(expression, ifname, kfs=KFS):
    """TuneD's device expression against one device name."""
    included = False
    for item in (i.strip() for i in expression.split(",")):
        if not item:
            continue
        exclude = item.startswith("!")
        pattern = item[1:] if exclude else item
        wildcard = any(c in pattern for c in "*?[")
        if not fnmatch.fnmatchcase(ifname, pattern):
            continue
        if wildcard and not exclude and not os.path.exists(kfs.net_path(ifname, "device")):
            continue        # wildcards reach physical NICs only
        if exclude:
            return False
        included = True
    return included
