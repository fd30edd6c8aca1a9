# SPDX-License-Identifier: GPL-2.0-or-later
"""Each plugin option, declared once.

A feature declares its options as a tuple of Option; the TuneD plugins'
option lists and hints, the configs' parsing, the Ansible role's checks,
the man page and docs/options.md are derived from these declarations
(irqtune.frontends.plugins names each plugin's Feature: options and build).
"""

from dataclasses import dataclass, replace

from ..kernel.errors import OptionError

AUTO = "auto"


@dataclass(frozen=True)
class Option:
    """name; parse: (option, text) -> value, raising OptionError (None: the
    text is taken as it is, TuneD or the plugin reads it); accepted: the
    values accepted, as TuneD's hint shows them; doc: what it does, one
    line; default: TuneD's default text (None: unset leaves the setting
    alone); follows: the option naming what an "auto" value follows, None
    when the option cannot be auto."""

    name: str
    parse: object
    accepted: str
    doc: str
    default: str = None
    follows: str = None

    @property
    def hint(self):
        """The accepted values, as `tuned-adm list plugins -v` shows them."""
        return "%s%s%s" % (self.accepted, "; or auto" if self.follows else "",
                           "" if self.default is None else " (default %s)" % self.default)

    def value(self, text, allow_auto=False):
        """The parsed text; AUTO where the option may be auto and auto is
        allowed here (something measures for it)."""
        if allow_auto and self.follows and str(text).strip().lower() == AUTO:
            return AUTO
        try:
            return self.parse(self.name, text)
        except OptionError as err:
            if not (allow_auto and self.follows):
                raise
            raise OptionError(self.name, text, "%s; or auto (measured from the services in %s)"
                              % (err.accepted, self.follows)) from None


@dataclass(frozen=True)
class Feature:
    """What a plugin is made of: its options (Option) and build(options,
    env) -> (tuner or None, [OptionError]) (irqtune.shared.tuner); overlay:
    the prefix of its variables_file's lines, None without one;
    without_tuner: what an instance whose options left no tuner does, for
    the lines of its option errors."""

    options: tuple
    build: object
    overlay: str = None
    without_tuner: str = "the instance tunes nothing"


def parse_options(declared, options, allow_auto=False):
    """({name: value}, [OptionError]) of the declared options given a
    value in options ({name: text}); a bad value is reported and left
    out, an empty one is not set."""
    values, errors = {}, []
    for option in declared:
        text = options.get(option.name)
        if option.parse is None or text is None or str(text).strip() == "":
            continue
        try:
            values[option.name] = option.value(text, allow_auto)
        except OptionError as err:
            errors.append(err)
    return values, errors


def renamed(declared, prefix):
    """The declarations under prefix + name, without auto (the napi values
    of zerocopy_rx: nothing measures for them there)."""
    return tuple(replace(o, name=prefix + o.name, follows=None) for o in declared)
