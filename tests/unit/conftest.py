# SPDX-License-Identifier: GPL-2.0-or-later
"""Fixtures the unit tests of several folders use; a folder's own are in
its conftest.py.  Helpers that are not fixtures (fakes, builders,
constants) that several test modules use live in tests/support; no test
module imports another.

The tests are laid out by what they test (docs/architecture.md):

  kernel/     irqtune/kernel: netlink families, procfs/sysfs, files, values, caps
  shared/     irqtune/shared: ledger, tuner contract, options, systemd, measure
  features/   irqtune/features: one tuner per mechanism
  frontends/  irqtune/frontends and the irqtune command
  plugins/    tuned-plugins/, tuned-functions/ and profiles/ through TuneD
  bench/      bench/irqtune_bench

Here, because they are about more than one folder:
  test_layers.py            the import contracts of every layer and of the bench,
                            the modules each layer holds (docs), logger names
  test_import_rule.py       the suites' import rule, over tests/
  test_shown_names.py       names.shown and every place that echoes a name
  test_undecodable_names.py /proc bytes read by shared, the doctor, metrics
  test_hostguard_identity.py, test_lab_*.py  tests/support itself (hostguard, rtlab)
and the fixture folders they share with a layer's tests (doctor_, lab_,
measure_, metrics_ and profile_fixtures)."""

import logging
import os

import pytest

from irqtune.features import gsim
from irqtune.shared import epoll
from support.fakes.gsim import FakeKernel
from support.tuned_loader import load_plugin_module, load_profile_functions


@pytest.fixture(autouse=True)
def library_logger_as_it_was():
    """The library's logger ("irqtune") as each test found it.  A plugin a
    test makes forwards it into TuneD's log for the rest of the process
    (irqtune_tunedlog.forward_library_log); a later test that loads the
    plugins again gets a second forwarder, of the new module's handler
    class, and sees each line twice (test_shown_names before
    test_gsim_plugin did, in either layout)."""
    lib = logging.getLogger("irqtune")
    handlers, level, propagate = list(lib.handlers), lib.level, lib.propagate
    yield
    lib.handlers[:] = handlers
    lib.setLevel(level)
    lib.propagate = propagate


@pytest.fixture
def inspect_own_epoll():
    """inspect(ep, *opened): this process's epoll instance ep as the doctor
    reads it (epoll.inspect_process on our own pid).  ep and what the test
    opened for it (objects with close(), or fd numbers) are closed
    afterwards; the test is skipped where the kernel cannot duplicate fds
    (pidfd_getfd, Linux 5.6)."""
    def inspect(ep, *opened):
        try:
            found = [i for i in epoll.inspect_process(os.getpid()).instances
                     if i.fd == ep.fileno()]
        except epoll.UnsupportedError as err:
            pytest.skip(str(err))
        finally:
            for f in (ep,) + opened:
                if isinstance(f, int):
                    os.close(f)
                else:
                    f.close()
        inst, = found
        return inst
    return inspect


@pytest.fixture
def fake_kernel(tmp_path, monkeypatch):
    """make(shape, **kw) -> FakeKernel, with the library writing through it."""
    made = []

    def make(shape=gsim.SHAPE_LATEST, **kwargs):
        kernel = FakeKernel(tmp_path / ("k%d" % len(made)), shape, **kwargs)
        monkeypatch.setattr(gsim.interface, "_write_text", kernel.write)
        made.append(kernel)
        return kernel
    return make


class Instance:
    """What TunerPlugin._instance_init reads and sets on TuneD's instance."""

    def __init__(self, name, options):
        self.name = name
        self.options = options


@pytest.fixture
def napi_init(monkeypatch, tmp_path):
    """init(options, variables) -> instance, through NapiPlugin._instance_init
    with TuneD's Variables; no kernel is asked (the capability probe is
    stubbed) and the originals' ledger lives in tmp_path."""
    pytest.importorskip("tuned.plugins")
    module = load_plugin_module("napi")
    from tuned.profiles.variables import Variables
    from irqtune.kernel.caps import KernelFeatures, NapiCapabilities
    caps = NapiCapabilities(True, True, True, frozenset(
        ("defer-hard-irqs", "gro-flush-timeout", "irq-suspend-timeout")),
        kernel=KernelFeatures(busy_poll=True))
    from irqtune.features.napi import tuner
    monkeypatch.setattr(tuner, "detect_napi_capabilities", lambda kfs: caps)

    def init(options, variables=()):
        plugin = object.__new__(module.NapiPlugin)
        plugin._seams = {"state_dir": str(tmp_path)}
        plugin._variables = Variables()
        for name, value in variables:
            plugin._variables.add_variable(name, value)
        instance = Instance("napi", options)
        plugin._instance_init(instance)
        instance.plugin = plugin
        return instance
    return init


@pytest.fixture
def tuned_profiles():
    pytest.importorskip("tuned.profiles")
    load_profile_functions()
