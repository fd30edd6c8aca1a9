# SPDX-License-Identifier: GPL-2.0-or-later
"""HousekeepingTuner with a fake channels backend and fixture procfs/sysfs.

The fake backend (support/fakes/channels.py) behaves like a driver: it keeps counts, checks maxima, can
refuse with a chosen errno, and - like virtio-net - re-spreads its queue
IRQs over all CPUs when the channel count changes, which is what makes the
order "read IRQ originals, then change channels" observable.
"""

import errno
import logging
import os

import pytest

from irqtune.features import channels as ch
from irqtune.kernel.errors import OptionError, UnsupportedError
from irqtune.shared.ledger import Ledger
from irqtune.kernel.kfs import KernelFs
from support.fakes.channels import ORIGINAL_AFFINITY, FakeDriver, affinity, write
from support.fakes.channels import housekeeping_tuner as tuner
from support.fakes.interrupts import QUEUE_IRQS


# -- options and planning ---------------------------------------------------

@pytest.mark.parametrize("text,value", [
    ("housekeeping", "housekeeping"), (" Housekeeping ", "housekeeping"), ("3", 3)])
def test_parse_channels(text, value):
    assert ch.parse_channels("channels", text) == value


@pytest.mark.parametrize("text", ["0", "-1", "all", "65536", "2.5"])
def test_parse_channels_rejects(text):
    with pytest.raises(OptionError) as err:
        ch.parse_channels("channels", text)
    assert "housekeeping, or a channel count from 1 to 65535" in str(err.value)
    assert err.value.option == "channels" and err.value.value == text


def test_parse_irq_affinity():
    assert ch.parse_irq_affinity("irq_affinity", "housekeeping") == "housekeeping"
    assert ch.parse_irq_affinity("irq_affinity", "0-1,4") == (0, 1, 4)
    with pytest.raises(OptionError) as err:
        ch.parse_irq_affinity("irq_affinity", "cpu0")
    assert "housekeeping, or a CPU list" in str(err.value)


def test_config_keeps_good_options_and_reports_bad_ones():
    config, errors = ch.HousekeepingConfig.from_options(
        {"channels": "many", "irq_affinity": "housekeeping", "housekeeping_cpus": "0-1"})
    assert config.channels is None
    assert config.irq_affinity == "housekeeping"
    assert config.housekeeping_cpus == (0, 1)
    assert [e.option for e in errors] == ["channels"]


@pytest.mark.parametrize("current,wanted,hk,target", [
    ({"combined-max": 8, "combined-count": 8}, "housekeeping", 2, {"combined": 2}),
    ({"combined-max": 1, "combined-count": 1}, "housekeeping", 2, {"combined": 1}),
    ({"combined-max": 8, "combined-count": 8}, 16, 2, {"combined": 16}),
    ({"rx-max": 4, "rx-count": 4, "tx-max": 2, "tx-count": 2}, "housekeeping", 3,
     {"rx": 3, "tx": 2}),
    ({"rx-max": 4, "rx-count": 4}, 2, 1, {"rx": 2}),
    # dedicated rx/tx mode of a driver that also has combined channels
    ({"combined-max": 8, "combined-count": 0, "rx-max": 8, "rx-count": 4,
      "tx-max": 8, "tx-count": 4}, "housekeeping", 2, {"rx": 2, "tx": 2}),
    ({"combined-max": 8, "combined-count": 4, "other-max": 1, "other-count": 1},
     "housekeeping", 2, {"combined": 2}),
])
def test_plan_channels(current, wanted, hk, target):
    assert ch.plan_channels(current, wanted, hk) == target


def test_plan_without_channels_is_unsupported():
    with pytest.raises(UnsupportedError):
        ch.plan_channels({"other-max": 1, "other-count": 1}, "housekeeping", 2)


# -- apply / verify / restore -------------------------------------------------

def test_apply_sets_housekeeping_channels_and_affinity_and_restore_is_exact(roots):
    proc = roots[0]
    driver = FakeDriver(proc)
    t = tuner(roots, driver, channels="housekeeping", irq_affinity="housekeeping")
    assert t.housekeeping.cpus == (0, 1) and t.housekeeping.source == "isolation"
    t.apply("eth0")
    assert driver.count["combined"] == 2
    assert [affinity(proc, i) for i in QUEUE_IRQS] == ["0-1"] * 4
    assert affinity(proc, 24) == "0-3"        # the config vector is left alone
    checks = t.verify("eth0")
    assert all(c.ok for c in checks), checks
    assert [c.what for c in checks][:1] == ["channels combined"]
    assert len(checks) == 5
    t.restore_all()
    assert driver.count["combined"] == 4
    # originals were read before the driver re-spread its IRQs
    assert {i: affinity(proc, i) for i in ORIGINAL_AFFINITY} == ORIGINAL_AFFINITY
    assert not os.path.exists(t.ledger.path)


def test_numeric_channels_and_explicit_cpus(roots):
    proc = roots[0]
    driver = FakeDriver(proc)
    t = tuner(roots, driver, channels="3", irq_affinity="1", housekeeping_cpus="0-2")
    t.apply("eth0")
    assert driver.count["combined"] == 3
    assert affinity(proc, 27) == "1"


def test_verify_reports_changes_behind_the_tuners_back(roots):
    proc = roots[0]
    driver = FakeDriver(proc)
    t = tuner(roots, driver, channels="housekeeping", irq_affinity="housekeeping")
    t.apply("eth0")
    driver.count["combined"] = 4
    write(proc, 27, "3")            # irqbalance moved one onto an isolated CPU
    write(proc, 28, "0")            # and one within the housekeeping CPUs
    bad = {c.what: c for c in t.verify("eth0") if not c.ok}
    assert set(bad) == {"channels combined", "IRQ 27 (virtio1-input.1) affinity"}
    assert (bad["channels combined"].current, bad["channels combined"].expected) == (4, 2)
    irq = bad["IRQ 27 (virtio1-input.1) affinity"]
    assert (irq.current, irq.expected) == ("3", "0-1")
    assert "irqbalance" in irq.note


def test_apply_new_tunes_only_new_irqs(roots):
    proc, _, tmp = roots
    driver = FakeDriver(proc)
    t = tuner(roots, driver, irq_affinity="housekeeping")
    t.apply("eth0")
    write(proc, 25, "3")            # a known IRQ changed: verify's business
    (tmp / "proc/irq/29").mkdir()
    write(proc, 29, "2")
    with open(os.path.join(proc, "interrupts"), "a") as f:
        f.write(" 29:  0  0  0  0  PCI-MSIX-0000:00:03.0   5-edge      virtio1-input.2\n")
    (tmp / "sys/devices/pci0000:00/0000:00:03.0/msi_irqs/29").write_text("msix\n")
    t.apply_new("eth0")
    assert affinity(proc, 29) == "0-1"
    assert affinity(proc, 25) == "3"
    t.restore_all()
    assert affinity(proc, 29) == "2"
    assert affinity(proc, 25) == "0"


@pytest.mark.parametrize("code,words", [
    (errno.EBUSY, "busy (EBUSY"), (errno.EOPNOTSUPP, "EOPNOTSUPP")])
def test_refused_channel_change_is_reported_once_and_in_verify(roots, caplog, code, words):
    proc = roots[0]
    driver = FakeDriver(proc, refuse=(code, None))
    t = tuner(roots, driver, channels="housekeeping", irq_affinity="housekeeping")
    with caplog.at_level(logging.WARNING, logger="irqtune"):
        t.apply("eth0")
        t.apply("eth0")             # a second apply (hotplug) does not repeat it
    lines = [r for r in caplog.records if "channels" in r.getMessage() and words in r.getMessage()]
    assert len(lines) == 1, caplog.text
    # affinity still applied: a refusal is not fatal
    assert affinity(proc, 25) == "0-1"
    bad = [c for c in t.verify("eth0") if not c.ok]
    assert len(bad) == 1 and bad[0].what == "channels combined" and words in bad[0].note
    t.restore_all()                 # nothing to put back on the channels
    assert driver.count["combined"] == 4


def test_count_above_maximum_is_the_drivers_to_refuse(roots, caplog):
    driver = FakeDriver(roots[0])
    t = tuner(roots, driver, channels="9")
    t.apply("eth0")
    assert driver.count["combined"] == 4
    assert "exceeds maximum" in caplog.text
    bad = [c for c in t.verify("eth0") if not c.ok]
    assert bad[0].expected == 9 and "exceeds maximum" in bad[0].note


# write_irq_affinity() refuses a managed IRQ with EPERM since Linux 6.12
# (7.2.13's kernel/irq/proc.c), with EIO before.
@pytest.mark.parametrize("refusal", [errno.EPERM, errno.EIO])
def test_managed_irq_is_reported_once_and_judged_by_effective_affinity(roots, monkeypatch, caplog,
                                                                        refusal):
    proc = roots[0]
    real_write = ch.affinity.write_affinity

    def managed_27(irq, cpus, kfs):
        if irq == 27:
            raise OSError(refusal, os.strerror(refusal))
        real_write(irq, cpus, kfs)

    monkeypatch.setattr(ch.affinity, "write_affinity", managed_27)
    t = tuner(roots, FakeDriver(proc), irq_affinity="housekeeping")
    with caplog.at_level(logging.WARNING, logger="irqtune"):
        t.apply("eth0")
        t.apply("eth0")
    assert caplog.text.count("managed IRQ") == 1
    eff = os.path.join(proc, "irq/27/effective_affinity_list")
    with open(eff, "w") as f:
        f.write("2\n")
    bad = [c for c in t.verify("eth0") if not c.ok]
    assert [c.what for c in bad] == ["IRQ 27 (virtio1-input.1) effective affinity"]
    assert "isolcpus=managed_irq" in bad[0].note
    with open(eff, "w") as f:
        f.write("1\n")              # isolcpus=managed_irq placed it on CPU 1
    assert all(c.ok for c in t.verify("eth0"))
    # The kernel moved the managed vector meanwhile (CPU hotplug): restore
    # meets the refusal again and must not call it a failure of ours.
    with open(os.path.join(proc, "irq/27/smp_affinity_list"), "w") as f:
        f.write("1\n")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="irqtune"):
        t.restore_all()
    assert "cannot restore" not in caplog.text, caplog.text


def test_originals_survive_a_restart_through_the_state_file(roots):
    proc = roots[0]
    driver = FakeDriver(proc)
    t = tuner(roots, driver, channels="housekeeping", irq_affinity="housekeeping")
    t.apply("eth0")
    # the daemon dies; a new one starts from the tuned values
    t2 = tuner(roots, driver, channels="housekeeping", irq_affinity="housekeeping")
    t2.apply("eth0")
    t2.restore_all()
    assert driver.count["combined"] == 4
    assert {i: affinity(proc, i) for i in ORIGINAL_AFFINITY} == ORIGINAL_AFFINITY


def test_recreated_device_drops_stale_originals(roots):
    proc = roots[0]
    driver = FakeDriver(proc)
    t = tuner(roots, driver, channels="housekeeping", irq_affinity="housekeeping")
    t.apply("eth0")
    # driver reload: same name, new ifindex, driver defaults
    driver.count["combined"] = 4
    t2 = tuner(roots, driver, ifindex=8, channels="housekeeping", irq_affinity="housekeeping")
    assert t2.originals == {}
    t2.apply("eth0")
    assert t2.originals["eth0"]["channels"] == {"combined": 4}
    assert t2.originals["eth0"]["irqs"]["virtio1-input.0"] == {"irq": 25, "affinity": "0-1"}


def test_rx_tx_driver(roots):
    driver = FakeDriver(roots[0], combined=(0, 0), rx=(4, 4), tx=(4, 3))
    t = tuner(roots, driver, channels="housekeeping")
    t.apply("eth0")
    assert (driver.count["rx"], driver.count["tx"]) == (2, 2)
    assert driver.sets == [{"rx": 2, "tx": 2}]
    t.restore_all()
    assert (driver.count["rx"], driver.count["tx"]) == (4, 3)


def test_gone_device_is_forgotten_without_writes(roots):
    driver = FakeDriver(roots[0])
    t = tuner(roots, driver, channels="housekeeping")
    t.apply("eth0")
    t.forget("eth0")
    t.restore_all()
    assert driver.count["combined"] == 2


# -- a rename TuneD did not report ---------------------------------------------

def rename_eth0(roots, new):
    """ip link set eth0 name <new>: sysfs shows the device under the new name."""
    sys_root = roots[1]
    netdir = os.path.join(sys_root, "devices/pci0000:00/0000:00:03.0/virtio1/net")
    os.rename(os.path.join(netdir, "eth0"), os.path.join(netdir, new))
    os.unlink(os.path.join(sys_root, "class/net/eth0"))
    os.symlink("../../devices/pci0000:00/0000:00:03.0/virtio1/net/" + new,
               os.path.join(sys_root, "class/net", new))


def renamable_tuner(roots, driver, names, **options):
    """A tuner whose name <-> ifindex lookups follow `names` {ifname: ifindex}."""
    proc, sys_root, tmp = roots
    config, errors = ch.HousekeepingConfig.from_options(options)
    assert not errors
    return ch.HousekeepingTuner(
        config, ledger=Ledger("hk", str(tmp / "run")), kfs=KernelFs(proc, sys_root),
        channels=driver, ifindex=names.get,
        ifname=lambda index: {i: n for n, i in names.items()}.get(index), napi=())


def test_verify_and_restore_follow_a_rename_tuned_was_not_told_of(roots, caplog):
    """TuneD before 2.25 sends no move event: it keeps calling the device
    eth0.  verify must still judge the device (under its new name) and
    restore must put its originals back, not drop them as a gone device's."""
    caplog.set_level(logging.INFO, logger="irqtune")
    proc = roots[0]
    driver = FakeDriver(proc)
    names = {"eth0": 7}
    t = renamable_tuner(roots, driver, names, channels="housekeeping",
                        irq_affinity="housekeeping")
    t.apply("eth0")
    rename_eth0(roots, "lan0")
    names.clear()
    names["lan0"] = 7
    write(proc, 27, "3")                 # drift, for verify to see
    checks = t.verify("eth0")
    assert checks and {c.device for c in checks} == {"lan0"}
    assert [c.what for c in checks if not c.ok] == ["IRQ 27 (virtio1-input.1) affinity"]
    assert "eth0 is now called lan0" in caplog.text
    t.restore("eth0")                    # the device leaves the instance
    assert driver.count["combined"] == 4
    assert {i: affinity(proc, i) for i in ORIGINAL_AFFINITY} == ORIGINAL_AFFINITY
    assert t.originals == {}


def test_a_daemon_started_after_a_rename_restores_under_the_new_name(roots):
    proc = roots[0]
    driver = FakeDriver(proc)
    names = {"eth0": 7}
    renamable_tuner(roots, driver, names, channels="housekeeping",
                    irq_affinity="housekeeping").apply("eth0")
    rename_eth0(roots, "lan0")
    names.clear()
    names["lan0"] = 7
    second = renamable_tuner(roots, driver, names, channels="housekeeping",
                             irq_affinity="housekeeping")
    assert set(second.originals) == {"lan0"}
    second.restore_all()
    assert driver.count["combined"] == 4
    assert {i: affinity(proc, i) for i in ORIGINAL_AFFINITY} == ORIGINAL_AFFINITY


def test_restore_all_follows_names_two_devices_swapped(roots):
    """eth0 <-> eth1 swapped behind TuneD's back: each device's originals
    stay with the device, not with the name."""
    t = tuner(roots, FakeDriver(roots[0]), state=False, names={"eth0": 8, "eth1": 7},
              channels="2")
    t.originals = {"eth0": {"ifindex": 7, "channels": {}, "irqs": {}},
                   "eth1": {"ifindex": 8, "channels": {}, "irqs": {}}}
    assert t.follow_renames() == {"eth0": "eth1", "eth1": "eth0"}
    assert (t.originals["eth1"]["ifindex"], t.originals["eth0"]["ifindex"]) == (7, 8)
    assert t.kernel_name("eth0") == "eth0" and t.kernel_name("eth1") == "eth1"
