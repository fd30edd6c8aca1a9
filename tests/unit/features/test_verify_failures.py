# SPDX-License-Identifier: GPL-2.0-or-later
"""verify fails when it cannot tell.

TuneD counts a plugin whose verify logs no failure as verified, and an
empty list of Checks as nothing to check (irqtune/shared/tuner.py), so a value
verify cannot read must become a failing Check - never a skipped one -
for every tuner that verifies: napi, nic_housekeeping (channels and queue
IRQ affinity), gsim and zerocopy_rx.  Only something that is gone (a
device removed, an IRQ freed between listing and reading) has nothing to
check.

And a queue IRQ that irqbalance spread over every CPU (its affinity
widened to include isolated CPUs) fails verify as surely as one moved off
the housekeeping CPUs entirely.
"""

import errno
import os

import pytest
from support.fakes.netdev import FakeNetdev
from support.fakes.channels import FakeDriver, housekeeping_tuner as hk_tuner, write
from support.fakes.gsim import SEED, gsim_tuner
from support.fakes.netdev import FULL, OLD_KERNEL
from support.fakes.ethtool import ZeroCopyHost as Host

from irqtune.features import channels as ch
from irqtune.kernel.errors import NetlinkRequestError
from irqtune.kernel.kfs import KernelFs
from irqtune.features.napi import NapiConfig, NapiTuner


def failed(checks):
    return [c for c in checks if not c.ok]


# -- napi -----------------------------------------------------------------------------

def napi_tuner(caps=FULL, kfs=None):
    return NapiTuner(NapiConfig(defer_hard_irqs=100, gro_flush_timeout=20000), caps,
                     kfs=kfs or KernelFs(), ifindex={"eth0": 7}.get, ifname={7: "eth0"}.get)


def test_napi_verify_fails_when_the_napis_cannot_be_read(monkeypatch):
    """napi-get's dump refused (here ENOMEM): no NAPI was judged."""
    netdev = FakeNetdev().install(monkeypatch)
    netdev.add_device(7, 2)
    t = napi_tuner()
    t.apply("eth0")
    netdev.fail["napis"] = errno.ENOMEM
    checks = t.verify("eth0")
    assert checks and failed(checks) == checks
    assert "Cannot allocate memory (ENOMEM)" in checks[0].note


def test_napi_verify_of_a_device_gone_meanwhile_has_nothing_to_check(monkeypatch):
    """ENODEV: the device went between the name lookup and the dump."""
    netdev = FakeNetdev().install(monkeypatch)
    netdev.add_device(7, 2)
    t = napi_tuner()
    t.apply("eth0")
    netdev.remove_device(7)
    assert t.verify("eth0") == []


def test_napi_verify_fails_on_a_value_the_kernel_does_not_report(monkeypatch):
    netdev = FakeNetdev().install(monkeypatch)
    netdev.add_device(7, 2)
    t = napi_tuner()
    t.apply("eth0")
    del netdev.napi(258)["gro-flush-timeout"]
    assert [(c.what, c.current) for c in failed(t.verify("eth0"))] == \
        [("NAPI 258 gro_flush_timeout", None)]


@pytest.mark.parametrize("content", [None, "", "n/a\n"])
def test_napi_verify_fails_on_an_unreadable_sysfs_file(tmp_path, content):
    dev = tmp_path / "class/net/eth0"
    dev.mkdir(parents=True)
    (dev / "napi_defer_hard_irqs").write_text("0\n")
    (dev / "gro_flush_timeout").write_text("0\n")
    t = napi_tuner(OLD_KERNEL, KernelFs(sys=str(tmp_path)))
    t.apply("eth0")
    if content is None:
        os.unlink(dev / "gro_flush_timeout")
    else:
        (dev / "gro_flush_timeout").write_text(content)
    assert [(c.what, c.current) for c in failed(t.verify("eth0"))] == \
        [("gro_flush_timeout", None)]


# -- nic_housekeeping -------------------------------------------------------------------

def housekeeping(roots, driver=None, **options):
    options.setdefault("irq_affinity", "housekeeping")
    return hk_tuner(roots, driver or FakeDriver(roots[0]), state=False, **options)


def test_channels_verify_fails_when_the_channels_cannot_be_read(roots):
    driver = FakeDriver(roots[0])
    t = housekeeping(roots, driver, channels="housekeeping")
    t.apply("eth0")

    def refused(ifindex):
        raise NetlinkRequestError("reading channels", errno.EOPNOTSUPP)
    driver.channels = refused
    bad = failed(t.verify("eth0"))
    assert [(c.what, c.current) for c in bad] == [("channels", None)]
    assert "EOPNOTSUPP" in bad[0].note


@pytest.mark.parametrize("code", [errno.EACCES, errno.EIO])
def test_affinity_verify_fails_when_an_affinity_cannot_be_read(roots, monkeypatch, code):
    """EACCES: an SELinux denial of tuned_t; EIO: anything else the kernel
    answers.  Only ENOENT (the IRQ freed since the listing) is skipped."""
    t = housekeeping(roots)
    t.apply("eth0")
    real = ch.affinity.read_affinity

    def read_affinity(irq, kfs):
        if irq == 27:
            raise OSError(code, os.strerror(code))
        return real(irq, kfs)
    monkeypatch.setattr(ch.affinity, "read_affinity", read_affinity)
    bad = failed(t.verify("eth0"))
    assert [(c.what, c.current) for c in bad] == [("IRQ 27 (virtio1-input.1) affinity", None)]
    assert os.strerror(code) in bad[0].note


def test_affinity_verify_skips_an_irq_freed_since_the_listing(roots, monkeypatch):
    t = housekeeping(roots)
    t.apply("eth0")
    real = ch.affinity.read_affinity

    def read_affinity(irq, kfs):
        if irq == 27:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))
        return real(irq, kfs)
    monkeypatch.setattr(ch.affinity, "read_affinity", read_affinity)
    checks = t.verify("eth0")
    assert len(checks) == 3 and all(c.ok for c in checks)


def test_affinity_verify_fails_on_an_affinity_it_cannot_parse(roots):
    t = housekeeping(roots)
    t.apply("eth0")
    write(roots[0], 27, "ff")       # a mask where a CPU list belongs
    assert [(c.what, c.current) for c in failed(t.verify("eth0"))] == \
        [("IRQ 27 (virtio1-input.1) affinity", None)]


def managed_27(monkeypatch):
    """IRQ 27 refuses affinity writes: a managed vector (EPERM, Linux 6.12+)."""
    real_write = ch.affinity.write_affinity

    def write_affinity(irq, cpus, kfs):
        if irq == 27:
            raise OSError(errno.EPERM, os.strerror(errno.EPERM))
        real_write(irq, cpus, kfs)
    monkeypatch.setattr(ch.affinity, "write_affinity", write_affinity)


def test_managed_irq_without_effective_affinity_fails_verify(roots, monkeypatch):
    """effective_affinity_list exists only with CONFIG_GENERIC_IRQ_EFFECTIVE_AFF_MASK:
    where the kernel places a managed IRQ cannot be read, so it cannot pass."""
    managed_27(monkeypatch)
    t = housekeeping(roots)
    t.apply("eth0")
    assert [(c.what, c.current) for c in failed(t.verify("eth0"))] == \
        [("IRQ 27 (virtio1-input.1) effective affinity", "")]


def test_managed_irq_whose_effective_affinity_cannot_be_read_fails_verify(roots, monkeypatch):
    managed_27(monkeypatch)
    t = housekeeping(roots)
    t.apply("eth0")

    def unreadable(irq, kfs):
        raise OSError(errno.EIO, os.strerror(errno.EIO))
    monkeypatch.setattr(ch.affinity, "read_effective_affinity", unreadable)
    bad = failed(t.verify("eth0"))
    assert [c.what for c in bad] == ["IRQ 27 (virtio1-input.1) effective affinity"]
    assert os.strerror(errno.EIO) in bad[0].note


# -- nic_housekeeping: an affinity widened to isolated CPUs --------------------------------

@pytest.mark.parametrize("widened", ["0-3", "0-2", "1,3"])
def test_affinity_widened_to_isolated_cpus_fails_verify(roots, widened):
    """irqbalance (or a driver reset) spreads the vector over every CPU: it
    still fires on the housekeeping CPUs 0-1, and on the isolated 2-3."""
    t = housekeeping(roots)
    t.apply("eth0")
    write(roots[0], 26, widened)
    write(roots[0], 28, "1")        # narrowed within housekeeping: fine
    bad = failed(t.verify("eth0"))
    assert [(c.what, c.current, c.expected) for c in bad] == \
        [("IRQ 26 (virtio1-output.0) affinity", widened, "0-1")]
    assert "irqbalance" in bad[0].note


def test_managed_irq_effective_affinity_widened_fails_verify(roots, monkeypatch):
    managed_27(monkeypatch)
    t = housekeeping(roots)
    t.apply("eth0")
    eff = os.path.join(roots[0], "irq/27/effective_affinity_list")
    for cpus, ok in (("1", True), ("0-3", False), ("1-2", False), ("3", False)):
        with open(eff, "w") as f:
            f.write(cpus + "\n")
        assert all(c.ok for c in t.verify("eth0")) is ok, cpus


# -- gsim ------------------------------------------------------------------------------

def test_gsim_verify_fails_on_a_knob_it_cannot_read(fake_kernel):
    k = fake_kernel()
    t = gsim_tuner(k, SEED)
    t.apply()
    with open(os.path.join(k.proc, "irq/sw_moderation/target_intr_rate"), "w") as f:
        f.write("")
    bad = failed(t.verify())
    assert [(c.what.split()[0], c.current) for c in bad] == [("target_intr_rate", None)]


@pytest.mark.parametrize("text", ["", "2\n", "maybe irq 27\n"])
def test_gsim_verify_fails_on_a_switch_it_cannot_read(fake_kernel, text):
    """A switch file of a selected IRQ that is there but says nothing this
    version understands (empty, a state beyond 0/1): not passed over as a
    vanished IRQ."""
    k = fake_kernel()
    t = gsim_tuner(k, SEED)
    t.apply()
    with open(os.path.join(k.proc, "irq/27", k.switch_name), "w") as f:
        f.write(text)
    bad = failed(t.verify())
    assert [(c.device, c.current) for c in bad] == [("irq27 (virtio0-input.1)", None)]


def test_gsim_verify_skips_a_switch_whose_irq_is_gone(fake_kernel):
    k = fake_kernel()
    t = gsim_tuner(k, SEED)
    t.apply()
    os.unlink(os.path.join(k.proc, "irq/27", k.switch_name))
    checks = t.verify()
    assert all(c.ok for c in checks) and "irq27 (virtio0-input.1)" not in \
        [c.device for c in checks]


# -- zerocopy_rx -------------------------------------------------------------------------

@pytest.mark.parametrize("method,what", [
    ("channels", "channels"), ("rings", "rings"), ("features", "rx-ntuple-filter"),
    ("rss", "RSS indirection table")])
def test_zerocopy_verify_fails_on_what_it_cannot_read(tmp_path, method, what):
    host = Host(tmp_path)
    tuner = host.tuner(queues="1", flow_rules="tcp4:5201")
    tuner.apply("eth0")
    assert all(c.ok for c in tuner.verify("eth0"))

    def refused(*args):
        raise NetlinkRequestError("reading " + method, errno.EIO)
    setattr(host.nic, method, refused)
    bad = failed(tuner.verify("eth0"))
    assert (what, None) in [(c.what, c.current) for c in bad], bad


def test_zerocopy_verify_fails_when_the_flow_rules_cannot_be_read(tmp_path):
    host = Host(tmp_path)
    tuner = host.tuner(queues="1", flow_rules="tcp4:5201")
    tuner.apply("eth0")

    def denied(fd, request, ifreq):
        raise OSError(errno.EPERM, os.strerror(errno.EPERM))
    host.table.ioctl = denied
    assert [(c.what, c.current) for c in failed(tuner.verify("eth0"))] == \
        [("flow rule tcp4 port 5201 -> queue 2", "missing")]
