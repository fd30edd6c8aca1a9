# SPDX-License-Identifier: GPL-2.0-or-later
"""What TuneD's active profile asks of irqtune's units, read by TuneD itself.

`irqtune doctor` and `irqtune metrics` compare the values NAPIs hold with
what the active profile's [napi] units set.  The profile is loaded by
TuneD's own profile loader (tuned.profiles: includes, [variables] and their
files, ${f:...} functions) and devices are matched by TuneD's own
DeviceMatcher, so nothing here resolves a profile a second way.

Why the loader and not the daemon over D-Bus: TuneD 2.20 (Debian 12, RHEL
9 before 9.5) has no D-Bus method that lists instances or their devices
(get_instances / instance_get_devices came later), and the doctor and the
metrics also run while no daemon does.  What the daemon applied is the
active profile named in /etc/tuned/active_profile, which it writes itself.
"""

import contextlib
import logging
import logging.handlers
import os
from dataclasses import dataclass

from ..features.napi import NapiConfig, parse_queues
from ..kernel.errors import IrqtuneError, OptionError
from ..kernel.kfs import KFS, KernelFs
from ..kernel.netdevs import default_selects_physical, is_virtual_netdev
from ..shared.systemd import parse_services

ETC = "/etc/tuned"
# Where profiles are looked up, in TuneD's order (a profile in a later
# directory wins); None: TuneD's own setting (its profile_dirs, or the
# fixed directories of TuneD < 2.23).
PROFILE_DIRS = None


@dataclass(frozen=True)
class NapiUnit:
    """One [napi] unit of the active profile."""

    name: str
    devices: str
    queues: object      # [rx queue] or None (all)
    config: NapiConfig

    def covers(self, ifname, kfs=KFS):
        return device_matches(self.devices, ifname, kfs)

    def expected(self):
        """{netlink attribute: value} the unit sets; "auto" values follow a
        measurement the profile does not hold, so they are left out."""
        return self.config.fixed()


def _tuned():
    """TuneD's modules, imported here, when a profile is read: the library
    imports without TuneD.  tuned.logs makes its logger class (which adds a
    console handler) the class of every logger created afterwards; only
    TuneD's own loggers keep it, irqtune's stay plain."""
    try:
        from tuned import consts, profiles
        from tuned.hardware.device_matcher import DeviceMatcher
        from tuned.utils.global_config import GlobalConfig
    except ImportError as err:
        raise IrqtuneError("TuneD's Python package is not installed (%s): the active "
                           "profile cannot be read" % err) from None
    tuned_class = logging.getLoggerClass()
    if tuned_class is not logging.Logger and logging.Logger.manager.loggerClass is None:
        def logger_class_of(name):
            if name == "tuned" or name.startswith("tuned."):
                return tuned_class(name)
            return logging.Logger(name)
        logging.Logger.manager.loggerClass = logger_class_of
    return consts, profiles, DeviceMatcher, GlobalConfig


@contextlib.contextmanager
def _tuned_log_collected():
    """TuneD's loader logs to its console handler; its warnings and errors
    are collected instead (the records), and said as skipped units."""
    logger = logging.getLogger("tuned")
    saved = list(logger.handlers), logger.propagate
    collected = logging.handlers.BufferingHandler(float("inf"))     # never flushed
    collected.setLevel(logging.WARNING)
    for handler in saved[0]:
        logger.removeHandler(handler)
    logger.addHandler(collected)
    logger.propagate = False
    try:
        yield collected.buffer
    finally:
        logger.removeHandler(collected)
        for handler in saved[0]:
            logger.addHandler(handler)
        logger.propagate = saved[1]


def load(names):
    """(TuneD's merged profile, its Variables) for the profile names."""
    consts, profiles, _matcher, GlobalConfig = _tuned()
    config = GlobalConfig()
    dirs = PROFILE_DIRS
    if dirs is None:
        dirs = (config.get_list(consts.CFG_PROFILE_DIRS, consts.CFG_DEF_PROFILE_DIRS)
                if hasattr(consts, "CFG_PROFILE_DIRS") else consts.LOAD_DIRECTORIES)
    variables = profiles.variables.Variables()
    loader = profiles.Loader(profiles.Locator(list(dirs)), profiles.Factory(),
                             profiles.Merger(), config, variables)
    return loader.load(list(names)), variables


def units_of_type(kind, etc=ETC):
    """(profile names or None, [(section, {option: expanded value})], [skipped])
    for the enabled units of one plugin type in the active profile; the
    options include devices= as TuneD expanded it."""
    names = (KernelFs.read_optional(os.path.join(etc, "active_profile")) or "").split()
    if not names:
        return None, [], []
    with _tuned_log_collected() as said:
        try:
            profile, variables = load(names)
        except Exception as err:    # noqa: BLE001 - TuneD's loader raises its own types
            return " ".join(names), [], ["TuneD cannot load the profile: %s" % err]
        units = []
        for section, unit in profile.units.items():
            if not unit.enabled or unit.type != kind:
                continue
            values = {k: variables.expand(v) for k, v in unit.options.items()}
            values["devices"] = unit.devices
            units.append((section, values))
    skipped = ["TuneD: %s" % record.getMessage() for record in said]
    return " ".join(names), units, skipped


def napi_units(etc=ETC):
    """(profile name or None, [NapiUnit], [why a unit was skipped])."""
    profile, sections, skipped = units_of_type("napi", etc)
    units = []
    for section, values in sections:
        config, errors = NapiConfig.from_options(values, allow_auto=True)
        try:
            queues = parse_queues(values.get("queues"))
        except OptionError as err:
            errors.append(err)
            queues = None
        skipped.extend("[%s] %s" % (section, e) for e in errors)
        units.append(NapiUnit(section, values.get("devices") or "*", queues, config))
    return profile, units, skipped


def optin_units(etc=ETC):
    """(profile name or None, [(section, (service unit, ...))]) of the
    active profile's busy_poll_optin units."""
    profile, sections, _skipped = units_of_type("busy_poll_optin", etc)
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
    """Whether a net device plugin's instance with this devices= expression
    takes ifname: TuneD's DeviceMatcher, then the irqtune plugins' rule
    that the default * reaches physical NICs only."""
    _consts, _profiles, DeviceMatcher, _config = _tuned()
    if not DeviceMatcher().match(expression or "*", ifname):
        return False
    if not default_selects_physical(expression):
        return True
    # Physical only with its sysfs entry seen: the doctor runs in the
    # target's network namespace, whose devices this sysfs may not show.
    return os.path.lexists(kfs.net_path(ifname)) and not is_virtual_netdev(ifname, kfs)
