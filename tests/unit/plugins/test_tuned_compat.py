# SPDX-License-Identifier: GPL-2.0-or-later
"""Every plugin through the call shapes of TuneD 2.20, 2.21, 2.22 and 2.25.

What changed between those versions (docs/compatibility.md and
/work/shared/reference/tuned-plugin-api.md):

- 2.20: `instance_unapply_tuning(instance, full_rollback=False)` passes a
  bool to `_instance_unapply_static`.
- 2.21: `consts.ROLLBACK_NONE/SOFT/FULL` = 0/1/2 instead; NONE
  (`rollback=not_on_exit`) returns before `_instance_unapply_static`.
- 2.22: decorated handlers get `set(value[, device], sim, remove)`.
- 2.23: `create_instance(name, priority, ...)`, instances sorted by
  priority, `instance.priority`, `_instance_init_dynamic`.
- 2.25: the instance is passed to every decorated handler.

The plugins use no decorated handlers (checked below), so the handler
shapes cannot reach them; what they must absorb is the instance creation
and the unapply argument of each version.  Each version's entry points
are re-created on top of the installed TuneD (Debian's 2.20 in CI, the
distribution's in an RPM %check) and every plugin is driven through a
daemon's sequence - create, assign devices, initialise, apply, verify,
then the unapply and destroy of a profile switch, an administrator's
stop, a stop at shutdown and a stop with rollback=not_on_exit - with the
effect checked on fixtures (gsim: fake procfs; busy_poll_optin: fixture
root and fake systemctl; napi, nic_housekeeping: recording tuners in
place of the kernel).

With IRQTUNE_TUNED_SOURCES=DIR[:DIR...] (checkouts of upstream TuneD,
e.g. tags v2.21.0, v2.25.0), the same sequences also run against those
trees' real base classes, in a subprocess each.
"""

import collections
import inspect
import json
import logging
import os
import pathlib
import subprocess
import sys

import pytest

from support.tuned_loader import load_plugin_module, plugin_base
from irqtune.shared.tuner import Check, DeviceTuner

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
PLUGINS = ("napi", "nic_housekeeping", "gsim", "busy_poll_optin")
VERSIONS = ("2.20", "2.21", "2.22", "2.25")

# Daemon events and what each version passes to instance_unapply_tuning
# (TuneD's daemon.py: profile switch -> full; stopped while the system runs
# -> full where systemd says so; shutdown -> soft; not_on_exit -> none).
EVENTS = {
    "profile switch": {"2.20": True, "new": 2},
    "administrator stop": {"2.20": True, "new": 2},
    "shutdown": {"2.20": False, "new": 1},
    "not_on_exit": {"new": 0},
}
# What must be left afterwards: runtime values come back on every unapply
# that reaches the plugin; busy_poll_optin's drop-ins survive a shutdown.
EXPECTED = {
    "napi": {"profile switch": "restored", "administrator stop": "restored",
             "shutdown": "restored", "not_on_exit": "kept"},
    "busy_poll_optin": {"profile switch": "restored", "administrator stop": "restored",
                        "shutdown": "kept", "not_on_exit": "kept"},
}
EXPECTED["nic_housekeeping"] = EXPECTED["gsim"] = EXPECTED["napi"]


def vtuple(version):
    return tuple(int(x) for x in version.split(".")[:2])


def unapply_argument(version, event):
    table = EVENTS[event]
    return table["2.20"] if vtuple(version) < (2, 21) else table["new"]


# -- loading the plugins into a TuneD package -------------------------------

def plugin_class(module):
    import tuned.plugins.base as base
    found = [v for v in vars(module).values()
             if isinstance(v, type) and issubclass(v, base.Plugin)]
    # what TuneD's loader takes: the first Plugin subclass in the namespace
    assert found and found[0].__module__ == module.__name__, found
    return found[0]


# -- one TuneD version's entry points ---------------------------------------

def emulate(cls, version):
    """cls with create_instance and instance_unapply_tuning as `version` has
    them, whatever TuneD is installed."""
    new_layout = vtuple(version) >= (2, 23)
    rollback_consts = vtuple(version) >= (2, 21)

    def create_instance(self, name, *args):
        if new_layout:
            priority, args = args[0], args[1:]
        else:
            priority = 0
        devices_expression, devices_udev_regex, script_pre, script_post, options = args
        effective = self._get_effective_options(options)
        factory_args = [self, name, devices_expression, devices_udev_regex,
                        script_pre, script_post, effective]
        from tuned.plugins.instance import Instance
        if "priority" in inspect.signature(Instance.__init__).parameters:
            factory_args.insert(2, priority)
        instance = self._instance_factory.create(*factory_args)
        instance._priority = priority
        self._instances[name] = instance
        if new_layout:
            self._instances = collections.OrderedDict(
                sorted(self._instances.items(), key=lambda x: x[1]._priority))
        return instance

    def instance_unapply_tuning(self, instance, rollback=(1 if rollback_consts else False)):
        if rollback_consts:
            assert not isinstance(rollback, bool)
            if rollback == 0:
                return
        else:
            assert isinstance(rollback, bool)
        assert not instance.has_dynamic_tuning
        if instance.has_static_tuning:
            self._instance_pre_static(instance, False)
            self._instance_unapply_static(instance, rollback)
            self._instance_post_static(instance, False)

    def instance_apply_tuning(self, instance):
        cls.instance_apply_tuning(self, instance)
        if new_layout and instance.has_dynamic_tuning:
            self._instance_init_dynamic(instance)

    ns = {"create_instance": create_instance,
          "instance_unapply_tuning": instance_unapply_tuning,
          "instance_apply_tuning": instance_apply_tuning,
          "__module__": cls.__module__}    # Plugin.name derives from the module
    return type(cls.__name__, (cls,), ns)


# -- fixtures each plugin acts on --------------------------------------------

class FakeDevice:
    def __init__(self, name):
        self.sys_name = name
        self.properties = {"INTERFACE": name, "SUBSYSTEM": "net"}


class FakeInventory:
    """TuneD's hardware inventory for two net devices; no udev."""

    def __init__(self, names):
        self.devices = {n: FakeDevice(n) for n in names}
        self.subscribers = []

    def get_devices(self, subsystem):
        return list(self.devices.values())

    def get_device(self, subsystem, name):
        return self.devices.get(name)

    def subscribe(self, plugin, subsystem, callback):
        self.subscribers.append(plugin)

    def unsubscribe(self, plugin):
        self.subscribers.remove(plugin)


class RecordingTuner(DeviceTuner):
    """In place of NapiTuner/HousekeepingTuner: the adapter's calls only."""

    instances = []
    needs_watching = True       # as theirs, with NAPIs and queue IRQs to tune

    def __init__(self, *args, **kwargs):
        super().__init__()
        self.applied, self.restored, self.forgotten = [], 0, []
        self.unsupported, self.per_napi, self.affinity = {}, True, "0-1"
        RecordingTuner.instances.append(self)

    def apply(self, *devices):
        self.applied.extend(devices)
        return "channels set" if len(devices) == 1 else len(devices)

    def apply_new_napis(self, device):
        return 0

    apply_new = apply_new_napis

    def verify(self, device):
        if hasattr(self, "_check"):
            return [self._check(True, "channels", 2, 2, None)]
        return [Check("NAPI 1 defer_hard_irqs", 100, 100, True)]

    def forget(self, device):
        self.forgotten.append(device)

    def restore_all(self):
        self.restored += 1


class IdleWatcher:
    def __init__(self, *args, **kwargs):
        pass

    def start(self):
        pass

    def stop(self):
        pass


class _Cfg(dict):
    def get(self, key, default=None):
        return dict.get(self, key, default)

    def get_bool(self, key, default=None):
        return dict.get(self, key, default)

    def get_list(self, key, default=None):
        return dict.get(self, key, default)


def prepare(name, module, workdir, patch):
    """Options, class attributes and the observer for one plugin."""
    if name in ("napi", "nic_housekeeping"):
        RecordingTuner.instances = []
        if name == "napi":
            from irqtune.features.napi import tuner as napi
            patch(napi, "NapiTuner", RecordingTuner)
            patch(napi, "detect_napi_capabilities", lambda kfs: None)
            options = {"defer_hard_irqs": "100", "gro_flush_timeout": "20us"}
        else:
            from irqtune.features.channels import tuner as channels
            check = collections.namedtuple("Check", "ok what current expected note")
            patch(RecordingTuner, "_check", check, raising=False)
            patch(channels, "HousekeepingTuner", RecordingTuner)
            options = {"channels": "2", "irq_affinity": "housekeeping",
                       "housekeeping_cpus": "0-1"}
        patch(sys.modules["tuned.plugins.irqtune_common"], "LinkWatcher", IdleWatcher)

        def observe():
            tuner = RecordingTuner.instances[-1]
            assert sorted(tuner.applied) == ["fk0", "fk1"], tuner.applied
            return "restored" if tuner.restored else "kept"
        return options, {}, observe, ("fk0", "fk1")

    if name == "gsim":
        from irqtune.features import gsim
        from support.fakes.gsim import FakeKernel, set_originals
        kernel = FakeKernel(os.path.join(workdir, "k"), gsim.SHAPE_LATEST)
        set_originals(kernel)
        patch(gsim.interface, "_write_text", kernel.write)
        before = kernel.knobs()
        from irqtune.kernel.kfs import KernelFs
        attrs = {"_seams": {"kfs": KernelFs(kernel.proc, kernel.sys), "napi_irqs": None,
                            "state_dir": os.path.join(workdir, "state")}, "_watch": False}
        options = {"delay_us": "100", "target_intr_rate": "1000000",
                   "hardirq_percent": "70"}

        def observe():
            return "restored" if kernel.knobs() == before else "kept"
        return options, attrs, observe, ()

    if name == "busy_poll_optin":
        from support.fakes.optin import dropin as dropin_path, make_root
        from support.fakes.systemd import FakeSystemd
        root = make_root(pathlib.Path(workdir))
        from irqtune.kernel.kfs import KernelFs
        attrs = {"_seams": {"root": root, "bus": FakeSystemd(),
                            "state_dir": os.path.join(workdir, "state"),
                            "kfs": KernelFs(proc=os.path.join(workdir, "proc"))}}
        dropin = dropin_path(root, "memcached.service")

        def observe():
            return "kept" if os.path.exists(dropin) else "restored"
        return {"services": "memcached"}, attrs, observe, ()
    raise AssertionError(name)


def drive(name, version, event, workdir, patch, emulated=True):
    """A daemon's sequence for one plugin; returns what the test checks."""
    from tuned.hardware.device_matcher import DeviceMatcher
    from tuned.hardware.device_matcher_udev import DeviceMatcherUdev
    from tuned.plugins.instance import Factory as InstanceFactory
    from tuned.profiles.variables import Variables
    from tuned.storage import Factory as StorageFactory, PickleProvider

    module = load_plugin_module(name)
    cls = plugin_class(module)
    options, attrs, observe, devices = prepare(name, module, workdir, patch)
    if emulated:
        cls = emulate(cls, version)
    if attrs:
        cls = type(cls.__name__, (cls,), dict(attrs, __module__=cls.__module__))
    inventory = FakeInventory(devices)
    provider = PickleProvider(path=os.path.join(workdir, "save.pickle"))
    plugin = cls(None, StorageFactory(provider), inventory, DeviceMatcher(),
                 DeviceMatcherUdev(), InstanceFactory(), _Cfg(), Variables())
    assert plugin._commands == {}, "decorated handlers: cover their call shapes here"
    args = [name, ",".join(devices) if devices else None, None, None, None, options]
    if "priority" in inspect.signature(plugin.create_instance).parameters or \
            (emulated and vtuple(version) >= (2, 23)):
        args.insert(1, 0)
    instance = plugin.create_instance(*args)
    plugin.init_devices()
    plugin.assign_free_devices(instance)
    plugin.initialize_instance(instance)
    assert not instance.has_dynamic_tuning
    plugin.instance_apply_tuning(instance)
    applied = observe()
    verified = plugin.instance_verify_tuning(instance, False)
    plugin.instance_unapply_tuning(instance, unapply_argument(version, event))
    plugin.destroy_instance(instance)
    if devices:
        assert inventory.subscribers == [plugin]      # until cleanup()
        plugin.cleanup()
        assert inventory.subscribers == []
    return {"applied": applied, "verified": verified, "after": observe()}


# -- in-process: the installed TuneD with each version's entry points --------

@pytest.fixture(autouse=True)
def library_log():
    lib = logging.getLogger("irqtune")
    saved = (list(lib.handlers), lib.propagate, lib.level)
    yield
    lib.handlers[:], lib.propagate = saved[0], saved[1]
    lib.setLevel(saved[2])


@pytest.fixture(autouse=True)
def tuned_installed():
    pytest.importorskip("tuned.plugins.base")


CASES = [(p, v, e) for p in PLUGINS for v in VERSIONS for e in EVENTS
         if v != "2.20" or e != "not_on_exit"]


@pytest.mark.parametrize("name,version,event", CASES)
def test_daemon_sequence(name, version, event, tmp_path, monkeypatch, caplog):
    with caplog.at_level(logging.INFO):
        result = drive(name, version, event, str(tmp_path), monkeypatch.setattr)
    assert result["applied"] == "kept", "apply changed nothing"
    assert result["verified"] is True
    assert "verify: passed" in caplog.text
    assert "Traceback" not in caplog.text and "verify: failed" not in caplog.text
    assert result["after"] == EXPECTED[name][event], result


@pytest.mark.parametrize("name", PLUGINS)
def test_no_decorated_handlers(name):
    """The 2.22 (remove) and 2.25 (instance) handler signatures cannot reach
    a plugin that registers no @command_set/get/custom handler."""
    cls = plugin_class(load_plugin_module(name))
    for attr in dir(cls):
        fn = getattr(cls, attr, None)
        assert not getattr(fn, "_command", None), (name, attr)
    for method in ("_instance_apply_static", "_instance_verify_static",
                   "_instance_unapply_static"):
        assert getattr(cls, method) is not getattr(
            __import__("tuned.plugins.base", fromlist=["Plugin"]).Plugin, method), method


@pytest.mark.parametrize("name", PLUGINS)
@pytest.mark.parametrize("rollback,restores", [(False, True), (True, True), (None, True),
                                               (0, False), (1, True), (2, True)])
def test_unapply_static_argument(name, rollback, restores):
    """Every value any version passes, called directly: bool before int."""
    common = plugin_base(name)
    if name == "busy_poll_optin":
        assert common.wants_restore(rollback, full_only=True) == (
            rollback is True or (rollback == 2 and not isinstance(rollback, bool)))
    else:
        assert common.wants_restore(rollback) is restores


# -- optional: real upstream TuneD trees ------------------------------------

SOURCES = [d for d in os.environ.get("IRQTUNE_TUNED_SOURCES", "").split(":") if d]


def tree_version(tree):
    with open(os.path.join(tree, "tuned", "version.py")) as f:
        text = f.read()
    major = int(text.split("TUNED_VERSION_MAJOR = ")[1].split()[0])
    minor = int(text.split("TUNED_VERSION_MINOR = ")[1].split()[0])
    return "%d.%d" % (major, minor)


# Run with the tree first on PYTHONPATH, then the repository, this suite
# and tests/ (the package `support`).
RUNNER = """
import json, os, sys, tempfile
tree = sys.argv[1]
import tuned.plugins.base
assert tuned.plugins.base.__file__.startswith(tree), tuned.plugins.base.__file__
import test_tuned_compat as t
out = {}
for name, version, event in json.loads(sys.argv[2]):
    with tempfile.TemporaryDirectory() as work:
        out["%s|%s" % (name, event)] = t.drive(name, version, event, work,
            lambda obj, attr, value, raising=True: setattr(obj, attr, value), emulated=False)
print(json.dumps(out))
"""


@pytest.mark.skipif(not SOURCES, reason="IRQTUNE_TUNED_SOURCES not set")
@pytest.mark.parametrize("tree", SOURCES)
def test_upstream_tree(tree):
    version = tree_version(tree)
    cases = [(p, version, e) for p in PLUGINS for e in EVENTS
             if vtuple(version) >= (2, 21) or e != "not_on_exit"]
    path = os.pathsep.join([tree, REPO, HERE, os.path.join(REPO, "tests")])
    out = subprocess.run([sys.executable, "-c", RUNNER, tree, json.dumps(cases)],
                         env=dict(os.environ, PYTHONPATH=path), cwd="/",
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-4000:]
    results = json.loads(out.stdout.splitlines()[-1])
    for name, _, event in cases:
        result = results["%s|%s" % (name, event)]
        assert result["applied"] == "kept" and result["verified"] is True, (name, result)
        assert result["after"] == EXPECTED[name][event], (tree, name, event, result)


def test_the_tuned_under_test_is_the_one_asked_for():
    """`make check` runs this suite twice: under the host's TuneD and under
    Debian unstable's, unpacked (IRQTUNE_TUNED_VERSION names it).  Without
    this, a PYTHONPATH that missed would test the host's TuneD twice."""
    from tuned import version
    wanted = os.environ.get("IRQTUNE_TUNED_VERSION")
    if not wanted:
        pytest.skip("IRQTUNE_TUNED_VERSION not set (make check sets it for its second run)")
    assert version.TUNED_VERSION_STR == wanted
