# SPDX-License-Identifier: GPL-2.0-or-later
"""The variables files of irqtune's TuneD profiles, checked on the controller.

Which variables a profile has, and their shipped defaults, come from the
profile's own ``profiles/<name>/<name>-variables.conf`` in the irqtune
source tree; how each value is checked comes from the irqtune library of
that tree (irqtune/), so a value accepted here is one the plugins accept,
and a refusal names the variable, the value and the accepted range in the
plugins' words.  Plain Python: no Ansible import, testable on its own.
"""

import configparser
import importlib
import os
import re
import sys

HEADER = ("# Written by Ansible (role irqtune.tuning.irqtune) from host and group\n"
          "# variables; local changes are overwritten.  See tuned-profiles-irqtune(7).\n")
VARIABLES_DIR = "/etc/tuned"
# A profile name as tuned-adm takes it (one word; stacks are lists).
PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
# TuneD device expressions: names, shell wildcards, "!" to exclude.
DEVICE_WORD = re.compile(r"^!?[\w.*?\[\]:@-]+$")
# A TuneD function call such as ${f:calc_isolated_cores:1}, evaluated by TuneD.
TUNED_FUNCTION = re.compile(r"^\$\{f:[\w-]+(:[^{}\n]*)?\}$")
_ASSIGNMENT = re.compile(r"^\s*(#\s*)?([a-z_][a-z0-9_]*)=(.*)$")


class VariableError(ValueError):
    """A bad value, in the library's words (option, value, accepted)."""

    def __init__(self, profile, option, value, accepted):
        self.profile = profile
        self.option = option
        self.value = value
        self.accepted = accepted
        super().__init__("%s: %s: invalid value '%s' (accepted: %s)"
                         % (profile, option, value, accepted))


def variables_path(profile):
    return os.path.join(VARIABLES_DIR, "%s-variables.conf" % profile)


def shipped_variables(source_dir):
    """{profile: {variable: default or None}} from the shipped variables files.

    A commented-out assignment (``#name=value``) documents a variable whose
    default lives in the profile's tuned.conf: None, nothing to write.  An
    active one is a default the profile needs from its file.
    """
    profiles = {}
    root = os.path.join(source_dir, "profiles")
    for profile in sorted(os.listdir(root)):
        path = os.path.join(root, profile, "%s-variables.conf" % profile)
        if not os.path.isfile(path):
            continue
        variables = {}
        with open(path, encoding="utf-8") as stream:
            for line in stream:
                match = _ASSIGNMENT.match(line.rstrip("\n"))
                if not match or (match.group(1) and match.group(2) in variables):
                    continue
                variables[match.group(2)] = None if match.group(1) else match.group(3).strip()
        profiles[profile] = variables
    return profiles


def load_library(source_dir):
    """The irqtune library of source_dir (first on sys.path), else an installed one."""
    if os.path.isfile(os.path.join(source_dir, "irqtune", "__init__.py")):
        path = os.path.abspath(source_dir)
        if path in sys.path:
            sys.path.remove(path)
        sys.path.insert(0, path)
    return importlib.import_module("irqtune")


# -- what each variable feeds ---------------------------------------------------
# A variable is checked by the parser of every plugin option it feeds, as
# the irqtune library declares it (irqtune.frontends.plugins): the profile's
# tuned.conf says which ones - ${variable} as an option's whole value, or
# in a list joined by ',' - and an overlay's variables file feeds the
# options of its plugin's unit under the plugin's prefix.  TuneD's own
# options and the variables TuneD functions read are listed here.

_REF = re.compile(r"\$\{(\w+)\}")
_REF_LIST = re.compile(r"^\$\{\w+\}(\s*,\s*\$\{\w+\})*$")
# ${f:irqtune_default:DEFAULT:${name}}: the variables file's value of name
_PASS_THROUGH = re.compile(r"^\$\{f:irqtune_default:[^:{}]*:\$\{(\w+)\}\}$|^\$\{(\w+)\}$")
# TuneD's own options the shipped profiles set from variables.
TUNED_OPTION_KINDS = {"devices": "devices", "net.core.busy_read": "sysctl_usecs",
                      "net.core.busy_poll": "sysctl_usecs"}
# Variables only TuneD functions and the bootloader plugin read.
VARIABLE_KINDS = {"isolated_cores": "cpulist_or_function", "isolate_managed_irq": "yes_no"}


def _tuned_kinds(values, option_error):
    """Checkers of what TuneD itself reads: (option, text), OptionError."""

    def devices(option, text):
        words = [w for w in re.split(r"\s*,\s*", text.strip()) if w]
        if not all(DEVICE_WORD.match(w) for w in words):
            raise option_error(option, text, "a TuneD device list: names or shell "
                               "wildcards separated by ',', '!' to exclude")

    def cpulist_or_function(option, text):
        if not TUNED_FUNCTION.match(text.strip()):
            try:
                values.parse_index_list(option, text)
            except option_error:
                raise option_error(option, text, "a CPU list such as 2-7,10 or a TuneD "
                                   "function such as ${f:calc_isolated_cores:1}") from None

    return {
        "devices": devices,
        # net.core.busy_read/busy_poll: the kernel's minimum is 0, maximum INT_MAX.
        "sysctl_usecs": lambda option, text: values.parse_int(option, text, 0, values.S32_MAX),
        "yes_no": lambda option, text: values.parse_choice(option, text, {"y": "Y", "n": "N"}),
        "cpulist_or_function": cpulist_or_function,
    }


def read_units(path):
    """[(section, {option: text})] of a tuned.conf, in order."""
    parser = configparser.ConfigParser(interpolation=None, strict=False, delimiters=("=",))
    parser.optionxform = str
    parser.read(path, encoding="utf-8")
    return [(name, dict(parser.items(name))) for name in parser.sections()]


def feeds(profile_dir, profile, plugins, prefixes):
    """{variable: [(plugin or None, option, auto allowed)]} of a profile:
    the options each variable's value reaches; an option it is the whole
    value of comes first."""
    units = read_units(os.path.join(profile_dir, "tuned.conf"))
    alias = {}
    for section, options in units:
        if section == "variables":
            for name, text in options.items():
                match = _PASS_THROUGH.match(text.strip())
                if match and name not in alias:
                    alias[name] = match.group(1) or match.group(2)
    whole, listed = [], []
    for section, options in units:
        plugin = options.get("type", section)
        if section in ("main", "variables"):
            continue
        for option, text in options.items():
            if _REF_LIST.match(text.strip()):
                place = whole if text.strip().startswith("${") and \
                    len(_REF.findall(text)) == 1 else listed
                for name in _REF.findall(text):
                    place.append((alias.get(name, name), plugin, option, options))
        path = options.get("variables_file", "").strip()
        if plugin in prefixes and path == variables_path(profile):
            for declared in plugins[plugin]:
                whole.append((prefixes[plugin] + declared.name, plugin, declared.name, options))
    found = {}
    for name, plugin, option, unit in whole + listed:
        declared = {o.name: o for o in plugins.get(plugin, ())}.get(option)
        allow_auto = bool(declared and declared.follows and unit.get(declared.follows, "").strip())
        found.setdefault(name, []).append((plugin if declared else None, option, allow_auto))
    return found


def to_text(option, value):
    """The file's spelling of a YAML value: lists joined by ',', booleans
    as the variable's kind spells them, nothing as empty."""
    if value is None:
        return ""
    if isinstance(value, bool):
        if VARIABLE_KINDS.get(option) == "yes_no":
            return "Y" if value else "N"
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(to_text(option, item) for item in value)
    return str(value).strip()


class ProfileVariables:
    """Checks and renders the variables files of one host's profile stack."""

    def __init__(self, source_dir):
        self.source_dir = source_dir
        self.shipped = shipped_variables(source_dir)
        load_library(source_dir)
        self.option_error = importlib.import_module("irqtune.kernel.errors").OptionError
        registry = importlib.import_module("irqtune.frontends.plugins").PLUGINS
        plugins = {name: feature.options for name, feature in registry.items()}
        prefixes = {name: feature.overlay for name, feature in registry.items()
                    if feature.overlay}
        kinds = _tuned_kinds(importlib.import_module("irqtune.kernel.values"), self.option_error)
        self.checks = {}        # {profile: {variable: [checker]}}
        for profile in self.shipped:
            self.checks[profile] = {name: [kinds[VARIABLE_KINDS[name]]]
                                    for name in self.shipped[profile] if name in VARIABLE_KINDS}
            fed = feeds(os.path.join(source_dir, "profiles", profile), profile,
                        plugins, prefixes)
            for name, targets in fed.items():
                self.checks[profile].setdefault(name, [])
                for plugin, option, allow_auto in targets:
                    if plugin is not None:
                        option = {o.name: o for o in plugins[plugin]}[option]
                        if option.parse is not None:
                            self.checks[profile][name].append(
                                lambda _, text, o=option, a=allow_auto: o.value(text, a))
                    elif option in TUNED_OPTION_KINDS:
                        self.checks[profile][name].append(kinds[TUNED_OPTION_KINDS[option]])

    def check_value(self, profile, option, value):
        """The text to write, or VariableError."""
        text = to_text(option, value)
        if isinstance(value, dict) or any(ord(c) < 0x20 or c == "\x7f" for c in text):
            raise VariableError(profile, option, value, "one line of text")
        if text == "":
            return text     # empty: the plugin leaves that setting alone
        for check in self.checks.get(profile, {}).get(option, ()):
            try:
                check(option, text)
            except self.option_error as err:
                raise VariableError(profile, option, value, err.accepted) from None
        return text

    def render(self, profiles, variables):
        """([{profile, path, content}], [error text]) for a stack of profiles.

        profiles: names in stack order (any TuneD profile; only irqtune's
        profiles with a variables file get one).  variables: {profile:
        {variable: value}}.  Every error of every profile is collected, so
        one run shows them all; no file is returned when there is any.
        """
        files, errors = [], []
        if isinstance(profiles, str):
            profiles = profiles.split()
        if not profiles:
            errors.append("irqtune_profile: no profile given (accepted: a profile name "
                          "or a list of names to stack)")
        for name in profiles:
            if not isinstance(name, str) or not PROFILE_NAME.match(name):
                errors.append("irqtune_profile: invalid profile name '%s' (accepted: "
                              "one word of letters, digits, '_', '.', '+', '-')" % name)
        for profile, values in sorted((variables or {}).items()):
            if values and profile not in self.shipped:
                errors.append("%s: variables given, but it is not one of irqtune's "
                              "profiles with a variables file (%s)"
                              % (profile, ", ".join(sorted(self.shipped))))
            elif values and profile not in profiles:
                errors.append("%s: variables given, but the profile is not in "
                              "irqtune_profile %s" % (profile, list(profiles)))
        for profile in profiles:
            if profile not in self.shipped:
                continue
            content, problems = self._render_one(profile, (variables or {}).get(profile) or {})
            errors.extend(problems)
            files.append({"profile": profile, "path": variables_path(profile),
                          "content": content})
        return ([] if errors else files), errors

    def _render_one(self, profile, values):
        known = self.shipped[profile]
        errors, lines = [], []
        if not isinstance(values, dict):
            return "", ["%s: variables must be a mapping of variable names to values, "
                        "not %r" % (profile, values)]
        for option in sorted(set(values) - set(known)):
            errors.append("%s: unknown variable '%s' (accepted: %s)"
                          % (profile, option, ", ".join(known)))
        for option, default in known.items():
            if option in values:
                try:
                    lines.append("%s=%s" % (option, self.check_value(profile, option,
                                                                      values[option])))
                except VariableError as err:
                    errors.append(str(err))
            elif default is not None:
                lines.append("%s=%s" % (option, default))
        return HEADER + "".join(line + "\n" for line in lines), errors
