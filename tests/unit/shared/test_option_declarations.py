# SPDX-License-Identifier: GPL-2.0-or-later
"""Each option is declared once, in the library (irqtune.frontends.plugins):
the plugins' option lists and hints, the man page, docs/options.md and the
Ansible role's checks are derived from the declarations."""

import importlib.util
import os
from dataclasses import replace

import pytest

from ansible_collections.irqtune.tuning.plugins.plugin_utils import profile_variables
from irqtune.kernel.errors import OptionError
from irqtune.shared.options import Option
from irqtune.frontends.plugins import PLUGINS
from irqtune.kernel.values import parse_int
from support.tuned_loader import load_plugin_module

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
NEW = Option("poll_budget", lambda o, v: parse_int(o, v, 1, 64), "1-64",
             "a budget no kernel has", default="8")


def plugin_man():
    spec = importlib.util.spec_from_file_location(
        "plugin_man", os.path.join(REPO, "docs", "man", "plugin-man.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def declared(monkeypatch):
    """napi with one option more, declared as a feature would."""
    monkeypatch.setitem(PLUGINS, "napi", replace(PLUGINS["napi"],
                                                 options=PLUGINS["napi"].options + (NEW,)))


@pytest.mark.parametrize("name", sorted(PLUGINS))
def test_plugins_take_their_options_from_the_library(name):
    cls = next(c for c in vars(load_plugin_module(name)).values()
               if isinstance(c, type) and c.__module__.endswith("plugin_" + name))
    assert cls._get_config_options() == {o.name: o.default for o in PLUGINS[name].options}
    assert cls.get_config_options_hints() == {o.name: o.hint for o in PLUGINS[name].options}


def test_a_declaration_reaches_the_plugin(declared):
    plugin = load_plugin_module("napi").NapiPlugin
    assert plugin._get_config_options()["poll_budget"] == "8"
    assert plugin.get_config_options_hints()["poll_budget"] == "1-64 (default 8)"


def test_a_declaration_reaches_the_man_page_and_the_docs(declared):
    man = plugin_man()
    section = "\n".join(man.plugin_section(os.path.join(REPO, "tuned-plugins", "plugin_napi.py")))
    assert section.endswith("\\fBpoll_budget\\fR\n1-64 (default 8)\n.br\na budget no kernel has")
    assert "| `poll_budget` | 1-64 | `8` | - | a budget no kernel has |" in \
        man.markdown(man.plugin_files())


def test_a_declaration_reaches_the_ansible_checks(declared, tmp_path):
    profile = tmp_path / "profiles" / "demo"
    profile.mkdir(parents=True)
    (profile / "tuned.conf").write_text("[napi]\npoll_budget=${budget}\n")
    (profile / "demo-variables.conf").write_text("#budget=\n")
    checker = profile_variables.ProfileVariables(str(tmp_path))
    _, errors = checker.render(["demo"], {"demo": {"budget": 65}})
    assert errors == ["demo: budget: invalid value '65' (accepted: an integer from 1 to 64)"]


def test_auto_only_where_the_unit_names_what_it_follows(tmp_path):
    """gro_flush_timeout may be auto where the unit sets auto_services."""
    profile = tmp_path / "profiles" / "demo"
    profile.mkdir(parents=True)
    (profile / "tuned.conf").write_text("[napi]\ngro_flush_timeout=${a}\nauto_services=x\n"
                                        "[fixed]\ntype=napi\ngro_flush_timeout=${b}\n")
    (profile / "demo-variables.conf").write_text("#a=\n#b=\n")
    checker = profile_variables.ProfileVariables(str(tmp_path))
    _, errors = checker.render(["demo"], {"demo": {"a": "auto", "b": "auto"}})
    assert len(errors) == 1 and errors[0].startswith("demo: b: invalid value 'auto'")


def test_options_md_is_generated():
    with open(os.path.join(REPO, "docs", "options.md")) as f:
        committed = f.read()
    man = plugin_man()
    assert committed == man.markdown(man.plugin_files()), \
        "run docs/man/plugin-man.py --markdown > docs/options.md"


def test_renamed_values_name_their_option():
    from irqtune.features.napi import VALUES, NapiConfig
    from irqtune.shared.options import renamed
    config, errors = NapiConfig.from_options({"napi_defer_hard_irqs": "5",
                                              "napi_gro_flush_timeout": "auto"},
                                             declared=renamed(VALUES, "napi_"))
    assert config.defer_hard_irqs == 5 and config.measured_attrs == frozenset()
    assert [(e.option, e.value) for e in errors] == [("napi_gro_flush_timeout", "auto")]
    assert isinstance(errors[0], OptionError)
