# SPDX-License-Identifier: GPL-2.0-or-later
"""The variables files of irqtune's TuneD profiles, checked on the controller.

Which variables a profile has, and their shipped defaults, come from the
profile's own ``profiles/<name>/<name>-variables.conf`` in the irqtune
source tree; how each value is checked comes from the irqtune library of
that tree (irqtune/), so a value accepted here is one the plugins accept,
and a refusal names the variable, the value and the accepted range in the
plugins' words.  Plain Python: no Ansible import, testable on its own.
"""

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


# -- one checker per kind of value ---------------------------------------------
# Each takes (option, text) and raises the library's OptionError.

def _checkers():
    values = importlib.import_module("irqtune.values")
    errors = importlib.import_module("irqtune.errors")
    napi = importlib.import_module("irqtune.napi")
    channels = importlib.import_module("irqtune.channels")
    gsim = importlib.import_module("irqtune.gsim")
    optin = importlib.import_module("irqtune.service_optin")
    auto = importlib.import_module("irqtune.measure.auto")
    option_error = errors.OptionError

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

    def gsim_knob(option, text):
        knob = option[len("gsim_"):]
        _, found = gsim.GsimConfig.from_options({knob: text})
        for err in found:
            raise option_error(option, text, err.accepted)

    def napi_value(name, auto=False):
        # auto: the value may be "auto" (latency-suspend's [napi] measures
        # its services for it; the realtime profile names none)
        return lambda option, text: napi.NapiConfig.parser(name, auto)(option, text)

    return {
        "devices": devices,
        "queues": lambda option, text: napi.parse_queues(text),
        "defer_hard_irqs": napi_value("defer_hard_irqs"),
        "gro_flush_timeout": napi_value("gro_flush_timeout", auto=True),
        "irq_suspend_timeout": napi_value("irq_suspend_timeout", auto=True),
        "fixed_gro_flush_timeout": napi_value("gro_flush_timeout"),
        "auto_services": lambda option, text: auto.parse_services(text, option),
        "auto_interval": lambda option, text: values.parse_int(
            option, text, auto.INTERVAL_MIN, auto.INTERVAL_MAX),
        # net.core.busy_read/busy_poll: the kernel's minimum is 0, maximum INT_MAX.
        "sysctl_usecs": lambda option, text: values.parse_int(option, text, 0, values.S32_MAX),
        "services": lambda option, text: optin.parse_services(text, option),
        "bool": lambda option, text: optin.parse_bool(text, option),
        "optin_usecs": lambda option, text: optin.OptInValues(usecs=text),
        "yes_no": lambda option, text: values.parse_choice(option, text, {"y": "Y", "n": "N"}),
        "cpulist_or_function": cpulist_or_function,
        "channels": channels.parse_channels,
        "gsim_knob": gsim_knob,
        "gsim_irqs": lambda option, text: gsim.IrqSelection.parse(text, option),
    }


# What kind of value each variable holds; a variable of a shipped file that
# is missing here is checked only as one line of text (see check_value).
KINDS = {
    "suspend_nics": "devices",
    "suspend_queues": "queues",
    "defer_hard_irqs": "defer_hard_irqs",
    "gro_flush_timeout": "gro_flush_timeout",
    "irq_suspend_timeout": "irq_suspend_timeout",
    "busy_read": "sysctl_usecs",
    "busy_poll": "sysctl_usecs",
    "optin_services": "services",
    "optin_restart": "bool",
    "optin_busy_poll_usecs": "optin_usecs",
    "auto_services": "auto_services",
    "auto_interval": "auto_interval",
    "gsim_delay_us": "gsim_knob",
    "gsim_target_intr_rate": "gsim_knob",
    "gsim_hardirq_percent": "gsim_knob",
    "gsim_update_ms": "gsim_knob",
    "gsim_irqs": "gsim_irqs",
    "isolated_cores": "cpulist_or_function",
    "isolate_managed_irq": "yes_no",
    "housekeeping_nics": "devices",
    "housekeeping_channels": "channels",
    "napi_defer_hard_irqs": "defer_hard_irqs",
    "napi_gro_flush_timeout": "fixed_gro_flush_timeout",
}


def to_text(option, value):
    """The file's spelling of a YAML value: lists joined by ',', booleans
    as the variable's kind spells them, nothing as empty."""
    if value is None:
        return ""
    if isinstance(value, bool):
        if KINDS.get(option) == "yes_no":
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
        self.option_error = importlib.import_module("irqtune.errors").OptionError
        self.checkers = _checkers()

    def check_value(self, profile, option, value):
        """The text to write, or VariableError."""
        text = to_text(option, value)
        if isinstance(value, dict) or any(ord(c) < 0x20 or c == "\x7f" for c in text):
            raise VariableError(profile, option, value, "one line of text")
        if text == "":
            return text     # empty: the plugin leaves that setting alone
        checker = self.checkers.get(KINDS.get(option))
        if checker is not None:
            try:
                checker(option, text)
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
