# SPDX-License-Identifier: GPL-2.0-or-later
"""Housekeeping-limited NIC vectors (kernel-patches/housekeeping-vectors).

With managed-IRQ isolation of CPUs 2-3, the guest's 4-queue virtio-net NIC
must come up with 2 combined channels (one per housekeeping CPU) and keep
every queue interrupt on CPUs 0-1; without isolation it uses all 4 CPUs.
The unpatched base kernel shows the old behaviour, which
test_unpatched_kernel_differs checks with the same expectations.
"""

import re

import labvm
import pytest

HOUSEKEEPING = {0, 1}
ISOLATED = {2, 3}
ALL_CPUS = {0, 1, 2, 3}


def cpu_list(text):
    """Parse a kernel CPU list ("0-1,3") into a set."""
    cpus = set()
    for part in text.strip().split(","):
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-")
            cpus.update(range(int(lo), int(hi) + 1))
        else:
            cpus.add(int(part))
    return cpus


def channels(g):
    """(max combined, current combined) from ethtool -l."""
    rc, out = g.run(["ethtool", "-l", g.nic])
    assert rc == 0, g.last_stderr
    m = re.findall(r"^Combined:\s*(\d+)", out, re.M)
    assert len(m) == 2, out
    return int(m[0]), int(m[1])


def queue_irqs(g):
    return g.nic_queue_interrupts()


def affinity(g, irq):
    smp = cpu_list(g.read_file("/proc/irq/%d/smp_affinity_list" % irq))
    eff = cpu_list(g.read_file("/proc/irq/%d/effective_affinity_list" % irq))
    return smp, eff


def warm_up(g):
    """Send a little traffic so that every active queue interrupt fires.

    On x86 without interrupt remapping an affinity change of an MSI vector
    is carried out at its next interrupt; until then effective_affinity
    shows the old target. Returns the queue IRQs before and after."""
    before = queue_irqs(g)
    g.flood(seconds=1, count=3000, flows=32)
    return before, queue_irqs(g)


def vector_violations(g):
    """Everything that differs from the housekeeping-limited behaviour on
    an isolcpus=managed_irq,2-3 boot; empty when the kernel does it."""
    bad = []
    isolated = cpu_list(g.read_file("/sys/devices/system/cpu/isolated"))
    if isolated != ISOLATED:
        bad.append("guest isolated CPUs are %s, expected %s" % (sorted(isolated), sorted(ISOLATED)))
    maximum, current = channels(g)
    if maximum != labvm.NIC_QUEUES:
        bad.append("device offers %d channels, lab set %d" % (maximum, labvm.NIC_QUEUES))
    if current != len(HOUSEKEEPING):
        bad.append("%d combined channels, expected %d (housekeeping CPUs)" % (current, len(HOUSEKEEPING)))
    before, irqs = warm_up(g)
    if len(irqs) != 2 * labvm.NIC_QUEUES:
        bad.append("found %d queue vectors, expected %d" % (len(irqs), 2 * labvm.NIC_QUEUES))
    for name, (irq, counts) in sorted(irqs.items()):
        smp, eff = affinity(g, irq)
        if not smp <= HOUSEKEEPING:
            bad.append("%s (irq %d) smp_affinity_list %s" % (name, irq, sorted(smp)))
        # The effective target is only meaningful once the vector fired
        # after its affinity was set (see warm_up()).
        fired = sum(counts) > sum(before.get(name, (0, []))[1])
        if fired and not eff <= HOUSEKEEPING:
            bad.append("%s (irq %d) effective_affinity_list %s" % (name, irq, sorted(eff)))
    return bad


def test_guest_boots_lab_kernel(guest):
    rc, out = guest.run(["uname", "-r"])
    assert rc == 0 and out.strip() == labvm.kernel_info(guest.kernel).get("release")
    assert guest.nic, "guest NIC not found:\n" + guest.console()[-2000:]


def test_isolated_boot_limits_vectors(guest):
    bad = vector_violations(guest)
    assert not bad, "\n".join(bad)


def test_isolated_boot_traffic_stays_on_housekeeping(guest):
    warm_up(guest)
    before = queue_irqs(guest)
    report = guest.flood(seconds=3, count=300000, flows=32)
    assert report["sent"] > 0, report
    after = queue_irqs(guest)
    grown = {cpu: 0 for cpu in ALL_CPUS}
    rx = 0
    for name, (_, counts) in after.items():
        for cpu, n in enumerate(counts):
            grown[cpu] += n - before[name][1][cpu]
            if name.startswith("input."):
                rx += n - before[name][1][cpu]
    print("flood %s; queue interrupts per CPU %s" % (report, grown))
    assert rx > 0, "flood raised no receive interrupt: %s" % report
    assert all(grown[cpu] == 0 for cpu in ISOLATED), grown


def test_raised_channels_share_housekeeping_cpus(guest):
    """ethtool -L up to the device maximum: the extra queues share the
    housekeeping CPUs instead of landing on the isolated ones."""
    maximum, current = channels(guest)
    try:
        rc, _ = guest.run(["ethtool", "-L", guest.nic, "combined", str(maximum)])
        assert rc == 0, guest.last_stderr
        assert channels(guest)[1] == maximum
        irqs = queue_irqs(guest)
        for name, (irq, _) in sorted(irqs.items()):
            smp = affinity(guest, irq)[0]
            assert smp <= HOUSEKEEPING, "%s (irq %d) smp_affinity_list %s" % (name, irq, sorted(smp))
        used = set()
        for q in range(maximum):
            used |= affinity(guest, irqs["input.%d" % q][0])[0]
        assert used == HOUSEKEEPING
    finally:
        guest.run(["ethtool", "-L", guest.nic, "combined", str(current)])


def test_unisolated_boot_uses_all_cpus(lab):
    g = lab.get(cmdline="")
    assert cpu_list(g.read_file("/sys/devices/system/cpu/isolated")) == set()
    maximum, current = channels(g)
    assert (maximum, current) == (labvm.NIC_QUEUES, labvm.NIC_QUEUES)
    irqs = queue_irqs(g)
    used = set()
    for q in range(current):
        used |= affinity(g, irqs["input.%d" % q][0])[0]
    assert used == ALL_CPUS


def test_unpatched_kernel_differs(lab):
    """The base kernel, same boot: the checks above must fail there."""
    if labvm.missing("base"):
        pytest.skip("unpatched base kernel not built: %s" % labvm.missing("base"))
    g = lab.get(kernel="base")
    bad = vector_violations(g)
    print("base kernel deviations:\n  " + "\n  ".join(bad))
    assert channels(g)[1] == labvm.NIC_QUEUES
    assert any("combined channels" in b for b in bad)
    assert any("affinity" in b for b in bad)
