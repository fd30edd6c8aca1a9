# SPDX-License-Identifier: GPL-2.0-or-later
"""One registry (irqtune.frontends.plugins) names each plugin's options and
build; a TuneD plugin is its documentation and that one lookup."""

import ast
import os

import pytest

from irqtune.frontends.plugins import PLUGINS
from irqtune.shared.tuner import Env
from support.tuned_loader import load_plugin_module

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


@pytest.mark.parametrize("name", sorted(PLUGINS))
def test_a_plugin_is_its_manual_and_one_lookup(name):
    """No plugin builds, parses or overrides anything: the class body is
    the docstring and _feature = PLUGINS[name]."""
    with open(os.path.join(REPO, "tuned-plugins", "plugin_%s.py" % name)) as f:
        tree = ast.parse(f.read())
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    doc, lookup = cls.body
    assert isinstance(doc.value, ast.Constant) and doc.value.value.strip().startswith(
        "`%s`::" % name)
    assert ast.unparse(lookup) == "_feature = PLUGINS['%s']" % name


def test_zerocopy_rx_is_composed_with_the_napi_values_of_its_reserved_queues(tmp_path,
                                                                             monkeypatch):
    from irqtune.features.napi import tuner as napi
    monkeypatch.setattr(napi, "detect_napi_capabilities", lambda kfs: None)
    tuner, errors = PLUGINS["zerocopy_rx"].build(
        {"queues": "2", "napi_defer_hard_irqs": "7"}, Env("zc", state_dir=str(tmp_path)))
    assert errors == [] and tuner.config.queues == 2
    monkeypatch.setattr(napi.NapiTuner, "_plan", lambda self: ({}, {}, {}))
    assert tuner._napi_factory("eth0", [2, 3]).config.defer_hard_irqs == 7
    assert [o.name for o in PLUGINS["zerocopy_rx"].options if o.name.startswith("napi_")] == [
        "napi_defer_hard_irqs", "napi_gro_flush_timeout", "napi_irq_suspend_timeout",
        "napi_threaded"]


class Instance:
    devices_udev_regex = None
    devices_expression = "*"

    def __init__(self, options):
        self.options = options


@pytest.mark.parametrize("options, overlay, matched", [
    ({}, None, {"eth0"}),                                       # devices=*: physical NICs
    ({"nics": "veth*"}, None, {"veth1"}),                       # named: virtual ones too
    ({"nics": " "}, None, set()),                               # empty: no device
    ({"nics": "eth0"}, "zerocopy_nics=veth1, lo\n", {"veth1"}),  # the variables file wins
], ids=["unset", "named", "empty", "variables file"])
def test_nics_replaces_devices(tmp_path, monkeypatch, options, overlay, matched):
    """zerocopy_rx's nics, also from its variables file, chooses the devices
    in the net-device base; lo never."""
    pytest.importorskip("tuned.plugins")
    from tuned.hardware.device_matcher import DeviceMatcher
    from tuned.profiles.variables import Variables
    module = load_plugin_module("zerocopy_rx")
    netdev = module.netdev
    monkeypatch.setattr(netdev, "is_virtual_netdev", lambda name: name != "eth0")
    plugin = object.__new__(module.ZerocopyRxPlugin)
    plugin._variables, plugin._device_matcher = Variables(), DeviceMatcher()
    if overlay is not None:
        (tmp_path / "vars.conf").write_text(overlay)
        options = dict(options, variables_file=str(tmp_path / "vars.conf"))
    assert plugin._get_matching_devices(Instance(options), {"eth0", "veth1", "lo"}) == matched
