# SPDX-License-Identifier: GPL-2.0-or-later
"""What the server's files accept of the values the bench writes into
them (issue 47 item 9), checked before anything there is changed:

  the NIC         latency-suspend's variables file (suspend_nics=, which
                  TuneD reads as a device expression: , * ? [ ! and $ are
                  syntax there) and ethtool's arguments: a kernel interface
                  name (1-15 bytes, no / : or white space, not . or ..)
                  narrowed to A-Z a-z 0-9 _ . - and not starting with -
  the service     the variables file (optin_services=) and the drop-in's
                  directory: a systemd service unit name - systemd's
                  characters A-Z a-z 0-9 : _ . \\ - and @ before an
                  instance, at most 255 of them, .service or no suffix
                  (not another unit type's)
  the shim        the drop-in's Environment="LD_PRELOAD=...": an absolute
                  path of A-Z a-z 0-9 . _ + @ / - (no white space, quote,
                  backslash, % specifier, : list separator, $ or control
                  character), at most 4095 bytes
  a mode's values the variables file: whole numbers in the ranges
                  irqtune's options take (defer_hard_irqs 0 to 2^31-1,
                  the timeouts 0 to 1 s in ns), or auto for the timeouts

irqtune's library checks unit names the same way (parse_services in
irqtune/shared/systemd.py), but irqtune-bench is packaged without it
(it runs on the administrator's machine and the client as well), so the
bench cannot import it.  A refusal is BadArgument: one line naming the
value's origin, the value (escaped, cut) and what is accepted."""

import re

from .guard import BadArgument, shown
from .modes import AUTO_VALUE

IFNAME = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.-]{0,14}")
UNIT = re.compile(r"[A-Za-z0-9:_.\\-]+(?:@[A-Za-z0-9:_.\\-]*)?")
UNIT_MAX = 255                  # systemd's UNIT_NAME_MAX, less its NUL
OTHER_UNIT_TYPES = ("socket", "target", "mount", "automount", "swap", "timer", "path", "slice", "scope", "device")
SHIM_PATH = re.compile(r"/[A-Za-z0-9._+@/-]{0,4094}")
S32_MAX = 2 ** 31 - 1           # defer_hard_irqs: the kernel's s32
TIMEOUT_MAX_NS = 10 ** 9        # irqtune.kernel.values.MAX_TIMEOUT_NS

IFNAME_ACCEPTED = "an interface name: 1 to 15 of A-Z a-z 0-9 _ . - (not starting with -, not . or ..)"
UNIT_ACCEPTED = ("a systemd unit name of a service: A-Z a-z 0-9 : _ . \\ - and @ before an instance, "
                 "with .service or no suffix, not starting with - or ., at most %d characters" % UNIT_MAX)
PATH_ACCEPTED = "an absolute path of A-Z a-z 0-9 . _ + @ / - (no white space, quotes, %, \\, : or $), at most 4095"


def refuse(origin, value, accepted):
    raise BadArgument("%s %s: accepted %s" % (origin, shown(str(value)), accepted))


def interface(origin, name):
    """name if a NIC's name the variables file and ethtool take as it is."""
    if type(name) is not str or not IFNAME.fullmatch(name) or name in (".", ".."):
        refuse(origin, name, IFNAME_ACCEPTED)
    return name


def service_base(name):
    """A service's unit name without its .service suffix (its drop-ins'
    directory is BASE.service.d)."""
    return name[:-len(".service")] if name.endswith(".service") else name


def service(origin, name):
    """name if a service the bench may name in its files."""
    base = service_base(name) if type(name) is str else None
    if base is None or not UNIT.fullmatch(base) or base.startswith((".", "-")) or ".." in base \
            or base.rsplit(".", 1)[-1] in OTHER_UNIT_TYPES or len(base) + len(".service") > UNIT_MAX:
        refuse(origin, name, UNIT_ACCEPTED)
    return name


def shim_path(origin, path):
    if type(path) is not str or not SHIM_PATH.fullmatch(path):
        refuse(origin, path, PATH_ACCEPTED)
    return path


def mode_values(origin, m):
    """A mode's values ({defer_hard_irqs, gro_flush_timeout_ns,
    irq_suspend_timeout_ns}) as the variables file takes them."""
    if not isinstance(m, dict):
        refuse(origin, m, "an object of defer_hard_irqs, gro_flush_timeout_ns and irq_suspend_timeout_ns")
    for key, high, auto in (("defer_hard_irqs", S32_MAX, False), ("gro_flush_timeout_ns", TIMEOUT_MAX_NS, True),
                            ("irq_suspend_timeout_ns", TIMEOUT_MAX_NS, True)):
        value = m.get(key)
        if auto and value == AUTO_VALUE:
            continue
        if type(value) is not int or not 0 <= value <= high:
            refuse("%s %s" % (origin, key), value, "a whole number from 0 to %d%s" % (high, " or auto" if auto else ""))


def arguments(s):
    """The run options that reach the server's files (cli.ssh_settings)."""
    if s.nic is not None:
        interface("--nic", s.nic)
    if s.shim is not None:
        shim_path("--shim", s.shim)
