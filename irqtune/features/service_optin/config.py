# SPDX-License-Identifier: GPL-2.0-or-later
"""The opt-in's configuration: EPIOCSPARAMS values, service names, the
preload library's path."""

import os
import re
from dataclasses import dataclass

from ...kernel.errors import OptionError, UnsupportedError
from ...kernel.values import parse_int
from ...shared.epoll import LIBRARY_NAME
from ...shared.options import Option, parse_options
from ...shared.systemd import parse_services, reroot

# Where packages install the library: RPM arch libdir, the Makefile's
# default, Debian multiarch.  The first that exists wins.
LIBRARY_CANDIDATES = (
    "/usr/lib64/irqtune/" + LIBRARY_NAME,
    "/usr/lib/irqtune/" + LIBRARY_NAME,
    "/usr/lib/x86_64-linux-gnu/irqtune/" + LIBRARY_NAME,
    "/usr/lib/aarch64-linux-gnu/irqtune/" + LIBRARY_NAME,
)

DEFAULT_USECS = 0
DEFAULT_BUDGET = 64
DEFAULT_PREFER = 1
# 1 s: an epoll_wait that busy polls that long per call spins a CPU for
# nothing; the kernel would take up to S32_MAX (35 minutes), which is a
# typo, not a setting (docs/tuning.md).
MAX_USECS = 1000000
MAX_BUDGET = 65535
BUDGET_WITHOUT_CAP = 64


# Option -> (OptInValues attribute, maximum, accepted text, default).
VALUE_OPTIONS = {
    "busy_poll_usecs": ("usecs", MAX_USECS, None, DEFAULT_USECS),
    "busy_poll_budget": ("budget", MAX_BUDGET, None, DEFAULT_BUDGET),
    "prefer_busy_poll": ("prefer", 1, "0 or 1", DEFAULT_PREFER),
}


@dataclass(frozen=True)
class OptInValues:
    """EPIOCSPARAMS values for the preload, checked by from_options."""

    usecs: int = DEFAULT_USECS
    budget: int = DEFAULT_BUDGET
    prefer: int = DEFAULT_PREFER

    @classmethod
    def from_options(cls, options):
        """(OptInValues or None, [OptionError]) from {option: text}: every
        bad value is reported, not only the first; empty or missing
        options take the defaults."""
        given, errors = parse_options(OPTIONS, {o: options.get(o) for o in VALUE_OPTIONS})
        return (None if errors else cls(**{VALUE_OPTIONS[o][0]: v for o, v in given.items()})), \
            errors

    def environment(self):
        return [("IRQTUNE_BUSY_POLL_USECS", str(self.usecs)),
                ("IRQTUNE_BUSY_POLL_BUDGET", str(self.budget)),
                ("IRQTUNE_PREFER_BUSY_POLL", str(self.prefer))]


def _parse_uint(option, value, maximum, accepted=None):
    try:
        return parse_int(option, value, 0, maximum)
    except OptionError:
        raise OptionError(option, value, accepted or "0..%d" % maximum) from None


def parse_bool(value, option="restart"):
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on", "y"):
        return True
    if text in ("0", "false", "no", "off", "n", ""):
        return False
    raise OptionError(option, value, "true or false")


def find_library(root="/", candidates=LIBRARY_CANDIDATES):
    """The installed preload library (path as the service will see it)."""
    for path in candidates:
        if os.path.isfile(reroot(root, path)):
            return path
    raise UnsupportedError("%s is not installed (looked in %s); install the "
                           "irqtune preload package" % (LIBRARY_NAME, ", ".join(candidates)))


def check_library_path(path, option="library"):
    """A path ld.so can preload from a systemd Environment= line."""
    if not path or not os.path.isabs(path) or re.search(r"[\s:%\"'\\$]", path):
        raise OptionError(option, path, "an absolute path without spaces, "
                          "colons, quotes, backslashes, '$' or '%'")
    return path


def _value_option(name, doc):
    _, maximum, accepted, default = VALUE_OPTIONS[name]
    return Option(name, lambda o, v: _parse_uint(o, v, maximum, accepted),
                  "%s (default %d)" % (accepted or "0..%d" % maximum, default), doc)


OPTIONS = (
    Option("services", lambda o, v: parse_services(v, o), "systemd services, separated by "
           "commas", "the services to opt in"),
    _value_option("busy_poll_usecs", "EPIOCSPARAMS busy_poll_usecs"),
    _value_option("busy_poll_budget", "EPIOCSPARAMS busy_poll_budget (above %d needs "
                  "CAP_NET_ADMIN)" % BUDGET_WITHOUT_CAP),
    _value_option("prefer_busy_poll", "EPIOCSPARAMS prefer_busy_poll"),
    Option("restart", lambda o, v: parse_bool(v, o), "true or false (default false)",
           "restart running services so that the change takes effect"),
    Option("library", lambda o, v: check_library_path(v, o), "an absolute path (default: found "
           "in the arch libdir)", "the path of libirqtune-busypoll.so"),
)
