# SPDX-License-Identifier: GPL-2.0-or-later
"""The repository's plugins loaded into the installed TuneD package, as
TuneD imports them (tuned.plugins.plugin_<name>, irqtune_common beside)."""

import importlib.util
import logging
import os
import sys

PLUGIN_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "tuned-plugins")
FUNCTION_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "tuned-functions")


def _load(short):
    import tuned.plugins as tuned_plugins
    full = "tuned.plugins." + short
    spec = importlib.util.spec_from_file_location(full, os.path.join(PLUGIN_DIR, short + ".py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[full] = module
    spec.loader.exec_module(module)
    setattr(tuned_plugins, short, module)
    return module


def load_plugin_module(name):
    """tuned.plugins.plugin_<name> from this tree (with irqtune_tunedlog,
    irqtune_common and irqtune_netdev)."""
    _load("irqtune_tunedlog")
    _load("irqtune_common")
    _load("irqtune_netdev")
    return _load("plugin_" + name)


def plugin_base(name):
    """tuned.plugins.irqtune_common, as plugin_<name> was loaded with it."""
    load_plugin_module(name)
    return sys.modules["tuned.plugins.irqtune_common"]


def load_profile_functions():
    """tuned.profiles.functions.function_irqtune_* from this tree, where
    TuneD's function repository imports them from (the installed TuneD
    package's own functions stay as they are)."""
    import tuned.profiles.functions as tuned_functions
    for name in sorted(os.listdir(FUNCTION_DIR)):
        if not (name.startswith("function_") and name.endswith(".py")):
            continue
        short = name[:-3]
        full = "tuned.profiles.functions." + short
        spec = importlib.util.spec_from_file_location(full, os.path.join(FUNCTION_DIR, name))
        module = importlib.util.module_from_spec(spec)
        sys.modules[full] = module
        spec.loader.exec_module(module)
        setattr(tuned_functions, short, module)


class Cfg(dict):
    """TuneD's global configuration as plugins query it."""

    def get(self, key, default=None):
        return dict.get(self, key, default)


def create_instance(plugin, name, options, devices=None):
    """plugin.create_instance() with the argument list of the installed
    TuneD: 2.23 inserted `priority` after the name (RHEL 9.5+, RHEL 10,
    Fedora run such versions; Debian 12 has 2.20)."""
    import inspect
    params = list(inspect.signature(plugin.create_instance).parameters)
    head = (name, 0) if "priority" in params else (name,)
    return plugin.create_instance(*head, devices, None, None, None, options)


def tuned_errors(caplog):
    """The ERROR lines TuneD's loggers logged (caplog), as TuneD's log shows them."""
    return [r.getMessage() for r in caplog.records
            if r.name.startswith("tuned") and r.levelno >= logging.ERROR]
