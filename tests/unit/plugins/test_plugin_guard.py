# SPDX-License-Identifier: GPL-2.0-or-later
"""No exception from a plugin entry point reaches TuneD: one log line names
what failed and what to do."""

import logging
import threading

import pytest

from support.tuned_loader import load_plugin_module, plugin_base

from irqtune.kernel.errors import NetlinkRequestError
from irqtune.shared.tuner import DeviceTuner


class DumpFails(DeviceTuner):
    """A tuner whose NAPI dump the kernel refuses (as an EIO would come back)."""

    def apply(self, *ifnames):
        raise NetlinkRequestError("dumping NAPIs", 5)

    def verify(self, ifname):
        raise RuntimeError("boom")


class Instance:
    name = "napi"
    assigned_devices = {"eth0"}
    processed_devices = {"eth0"}
    _option_errors = []
    _watcher = None

    def __init__(self):
        self._lock = threading.RLock()
        self._tuner = DumpFails()
        self._devices_seen = set()


def tuned_errors(caplog):
    return [r.getMessage() for r in caplog.records
            if r.name.startswith("tuned") and r.levelno >= logging.ERROR]


@pytest.fixture
def napi_plugin():
    pytest.importorskip("tuned.plugins")
    module = load_plugin_module("napi")
    return object.__new__(module.NapiPlugin)


def test_failed_napi_dump_during_apply_is_one_line(napi_plugin, caplog):
    caplog.set_level(logging.DEBUG)
    assert napi_plugin._instance_apply_static(Instance()) is None
    errors = tuned_errors(caplog)
    assert len(errors) == 1, errors
    assert "instance napi: applying failed: dumping NAPIs: Input/output error (EIO)" \
        in errors[0]
    assert "apply the profile again" in errors[0]


def test_unexpected_error_in_verify_fails_verify_without_raising(napi_plugin, caplog):
    caplog.set_level(logging.DEBUG)
    assert napi_plugin._instance_verify_static(Instance(), False, {"eth0"}) is False
    errors = tuned_errors(caplog)
    assert any("verifying failed: RuntimeError: boom (a bug in irqtune" in e
               for e in errors), errors


def test_every_entry_point_of_every_plugin_is_guarded():
    pytest.importorskip("tuned.plugins")
    common = plugin_base("napi")
    for name in ("napi", "nic_housekeeping", "gsim", "busy_poll_optin"):
        module = load_plugin_module(name)
        plugin = [c for c in vars(module).values() if isinstance(c, type)
                  and c.__module__ == module.__name__][0]
        for entry in common.ENTRY_POINTS:
            func = getattr(plugin, entry, None)
            if func is not None and entry in vars(plugin):
                assert getattr(func, "_irqtune_guarded", False), (name, entry)
    # the shared bases' own entry points, the move handler among them
    assert "_move_device" in common.ENTRY_POINTS
    netdev = __import__("tuned.plugins.irqtune_netdev", fromlist=["x"])
    for base in (common.TunerPlugin, common.InstancePlugin, netdev.NetDevicePlugin):
        for entry in common.ENTRY_POINTS:
            if entry in vars(base):
                assert getattr(vars(base)[entry], "_irqtune_guarded", False), (base, entry)


class Originals(DeviceTuner):
    """A tuner with per-device originals, as NapiTuner keeps them."""

    state = None

    def __init__(self, originals):
        super().__init__()
        self.originals = originals
        self.saved = 0

    def _save_state(self, before_change=True):
        self.saved += 1


def test_a_renamed_nic_keeps_its_originals_under_the_new_name(napi_plugin, monkeypatch, caplog):
    """TuneD 2.25+ move event: only the new name is reported; the device is
    found by ifindex, its originals and TuneD's device sets take the new name."""
    caplog.set_level(logging.DEBUG)
    instance = Instance()
    instance.assigned_devices, instance.processed_devices = set(), {"eth0"}
    instance._tuner = Originals({"eth0": {"ifindex": 7, "napi": {"0": {"defer-hard-irqs": 3}}},
                                 "eth1": {"ifindex": 8, "napi": {}}})
    napi_plugin._instances = {"napi": instance}
    napi_plugin._assigned_devices = {"eth0", "eth1"}
    import socket
    monkeypatch.setattr(socket, "if_nametoindex", lambda name: {"lan0": 7}[name])
    napi_plugin._move_device("lan0")
    assert set(instance._tuner.originals) == {"lan0", "eth1"}
    assert instance._tuner.originals["lan0"]["napi"] == {"0": {"defer-hard-irqs": 3}}
    assert instance._tuner.saved == 1
    assert instance.processed_devices == {"lan0"}
    assert napi_plugin._assigned_devices == {"lan0", "eth1"}
    assert any("eth0 is now called lan0" in r.getMessage() for r in caplog.records)
    # a name nobody tuned changes nothing; an error is one line, never raised
    monkeypatch.setattr(socket, "if_nametoindex", lambda name: 99)
    napi_plugin._move_device("wlan0")
    assert set(instance._tuner.originals) == {"lan0", "eth1"}

    def gone(name):
        raise OSError(19, "No such device")
    monkeypatch.setattr(socket, "if_nametoindex", gone)
    napi_plugin._move_device("gone0")
    assert any("gone0: following the rename failed: No such device (ENODEV)" in
               r.getMessage() for r in caplog.records), caplog.text


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyError("eth0"), ValueError("x")])
def test_any_error_in_the_move_handler_is_one_line_never_raised(napi_plugin, monkeypatch,
                                                                 caplog, error):
    """_move_device is an entry point like the others: not only an OSError
    from the name lookup, any exception of the tuner stays out of TuneD."""
    caplog.set_level(logging.DEBUG)
    instance = Instance()

    class Breaks(Originals):
        def follow_rename(self, new_name, ifindex):
            raise error
    instance._tuner = Breaks({"eth0": {"ifindex": 7}})
    napi_plugin._instances = {"napi": instance}
    napi_plugin._assigned_devices = {"eth0"}
    import socket
    monkeypatch.setattr(socket, "if_nametoindex", lambda name: 7)
    assert napi_plugin._move_device("lan0") is None
    errors = tuned_errors(caplog)
    assert len(errors) == 1, errors
    assert "lan0: following the rename failed: %s" % type(error).__name__ in errors[0]
    assert "re-apply the profile" in errors[0]


class Retunes(DeviceTuner):
    """A tuner that records apply_new and keeps originals like NapiTuner."""

    def __init__(self, originals, renamed=None):
        super().__init__()
        self.originals = originals
        self.renamed = renamed or {}
        self.retuned = []

    def apply_new(self, ifname):
        self.retuned.append(ifname)
        return 0


@pytest.mark.parametrize("originals,renamed", [
    ({"eth0": {"ifindex": 7}}, None),                   # the tuner has not noticed yet
    ({"lan0": {"ifindex": 7}}, {"eth0": "lan0"}),       # it followed the rename already
])
def test_a_link_event_of_a_device_renamed_without_a_move_event_retunes_it(
        napi_plugin, monkeypatch, originals, renamed):
    """TuneD < 2.25 keeps calling the device eth0 after `ip link set eth0
    name lan0`; the link event names lan0.  The device must be tuned again
    under the name TuneD knows (the tuner maps it to lan0), not skipped as
    a device of no instance."""
    netdev = __import__("tuned.plugins.irqtune_netdev", fromlist=["x"])
    monkeypatch.setattr(netdev, "ifname_of", lambda ifindex: {7: "lan0", 9: "other0"}[ifindex])
    instance = Instance()
    instance.processed_devices = {"eth0", "eth1"}
    instance._tuner = Retunes(dict(originals, eth1={"ifindex": 8}), renamed)
    napi_plugin._retune_link(instance, 7)
    napi_plugin._retune_link(instance, 9)               # a device of no instance
    assert instance._tuner.retuned == ["eth0"]


class Minimal(DeviceTuner):
    """Only what the contract requires of a device tuner: the rest is the
    contract's defaults (irqtune.shared.tuner.Tuner, DeviceTuner)."""

    def apply(self, *ifnames):
        return len(ifnames)

    def verify(self, ifname):
        return []


def test_the_plugin_needs_nothing_beyond_the_contract(napi_plugin, monkeypatch, caplog):
    """The plugin takes every default from the contract: a tuner that does
    not say it needs watching is not watched (the plugin once assumed it
    did), and apply, verify, a rename and an unapply that keeps the values
    go through with the defaults alone."""
    caplog.set_level(logging.DEBUG)
    started = []
    monkeypatch.setitem(napi_plugin._start_watching.__func__.__globals__, "LinkWatcher",
                        lambda *args, **kwargs: started.append(args))
    instance = Instance()
    instance._tuner = Minimal()
    napi_plugin._instances = {"napi": instance}
    napi_plugin._instance_apply_static(instance)
    assert started == [] and instance._watcher is None
    assert napi_plugin._instance_verify_static(instance, False, {"eth0"}) is True
    import socket
    monkeypatch.setattr(socket, "if_nametoindex", lambda name: 7)
    assert napi_plugin._move_device("lan0") is None
    assert instance.processed_devices == {"eth0"}
    napi_plugin._instance_unapply_static(instance, 0)
    assert tuned_errors(caplog) == []
    assert any(r.getMessage() == "instance napi: values left in place for the next start"
               for r in caplog.records), caplog.text


def test_known_as_names_the_device_by_the_ifindex_of_its_originals():
    tuner = DeviceTuner()
    tuner.originals = {"lan0": {"ifindex": 7}, "eth1": {"ifindex": 8}}
    tuner.renamed = {"eth0": "lan0"}
    assert tuner.known_as(7, {"eth0", "eth1"}) == "eth0"     # followed already
    assert tuner.known_as(8, {"eth0", "eth1"}) == "eth1"
    assert tuner.known_as(9, {"eth0", "eth1"}) is None
    assert tuner.known_as(7, {"eth1"}) is None               # not one of TuneD's


class Unmatched(Instance):
    """An instance whose selector matches no device (TuneD's sets empty)."""

    devices_udev_regex = None
    devices_expression = "ens1f0"

    def __init__(self, seen=()):
        super().__init__()
        self.assigned_devices = set()
        self.processed_devices = set()
        self._devices_seen = set(seen)


def test_an_instance_that_never_matched_a_device_fails_verify(napi_plugin, caplog):
    """issue 39 item 10: a typo in devices= is a failure, not an unplug
    (TuneD itself counts an instance without devices as passed)."""
    caplog.set_level(logging.DEBUG)
    assert napi_plugin.instance_verify_tuning(Unmatched(), False) is False
    errors = tuned_errors(caplog)
    assert len(errors) == 1 and "napi: devices=ens1f0 matches no network device; devices " \
        "here: " in errors[0], errors
    assert "unplugged" not in " ".join(r.getMessage() for r in caplog.records)


def test_an_instance_whose_devices_were_unplugged_is_reported_not_failed(napi_plugin, caplog):
    caplog.set_level(logging.DEBUG)
    assert napi_plugin.instance_verify_tuning(Unmatched(seen={"vu0"}), False) is None
    assert tuned_errors(caplog) == []
    assert any("devices=ens1f0 matches no device now; it tuned vu0 before (unplugged?)"
               in r.getMessage() for r in caplog.records)
