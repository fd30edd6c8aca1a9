# SPDX-License-Identifier: GPL-2.0-or-later
"""Housekeeping-limited NIC vectors (kernel-patches/housekeeping-vectors on
6.12, kernel-patches/7.2/housekeeping-vectors on 7.2).

The guest boots with the command line realtime-virtual-host-irqtune gives a
host whose isolated_cores are 2-3: the realtime parents' isolcpus=, nohz_full=
and irqaffinity=, plus the flavour's isolcpus=io_queue. Its 4-queue virtio-net
NIC must come up with 2 combined channels (one per housekeeping CPU) and
every queue vector - fired or not - must target CPUs 0-1 only. The lab check
file of kernel-patches/*/housekeeping-lab shows what the networking core's
default queue helpers choose (netif_get_num_default_rss_queues(), and on 7.2
the NAPI config IRQ affinity of netif_set_affinity_auto()), which virtio_net
does not call. Existing command lines without io_queue keep the old
defaults, and the unpatched base kernel fails the same checks.
"""

import re

import pytest

from support import labvm

HOUSEKEEPING = {0, 1}
ISOLATED = {2, 3}
ALL_CPUS = {0, 1, 2, 3}
FLAVOUR_CMDLINE = ("isolcpus=managed_irq,domain,2-3 isolcpus=io_queue,2-3 "
                   "nohz_full=2-3 irqaffinity=0-1")
# What realtime hosts boot today (TuneD's realtime profiles).
MANAGED_IRQ_CMDLINE = "isolcpus=managed_irq,domain,2-3 nohz_full=2-3"
CHECK_FILE = "/sys/kernel/debug/netdev_default_queues"


def base_kernel(kernel):
    return "7.2-base" if labvm.generation(kernel) == 7 else "base"


def channels(g):
    """(max combined, current combined) from ethtool -l."""
    rc, out = g.run(["ethtool", "-l", g.nic])
    assert rc == 0, g.last_stderr
    m = re.findall(r"^Combined:\s*(\d+)", out, re.M)
    assert len(m) == 2, out
    return int(m[0]), int(m[1])


def affinity(g, irq):
    smp = labvm.cpu_list(g.read_file("/proc/irq/%d/smp_affinity_list" % irq))
    eff = labvm.cpu_list(g.read_file("/proc/irq/%d/effective_affinity_list" % irq))
    return smp, eff


def default_queues(g):
    """The lab check file as {"rss_queues": int, "cpus": set,
    "napi_config": [set per queue] (7.2 only)}."""
    rc, text = g.run(["cat", CHECK_FILE])
    if rc != 0:
        pytest.fail("kernel %s has no %s (kernel-patches/housekeeping-lab)" % (g.kernel, CHECK_FILE))
    out = {"napi_config": []}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "rss_queues":
            out[key] = int(value)
        elif key == "cpus":
            out[key] = labvm.cpu_list(value)
        elif key == "napi_config":
            out[key].append(labvm.cpu_list(value.split("affinity", 1)[1]))
    return out


def vector_violations(g):
    """Everything that differs from housekeeping-limited vectors on the
    flavour's command line; empty when the kernel does it. Every queue
    vector counts, whether it ever fired or not: with irqaffinity= the
    vectors are allocated on housekeeping CPUs when requested, so none
    waits for a first interrupt to leave an isolated CPU."""
    bad = []
    isolated = labvm.cpu_list(g.read_file("/sys/devices/system/cpu/isolated"))
    if isolated != ISOLATED:
        bad.append("guest isolated CPUs are %s, expected %s" % (sorted(isolated), sorted(ISOLATED)))
    maximum, current = channels(g)
    if maximum != labvm.NIC_QUEUES:
        bad.append("device offers %d channels, lab set %d" % (maximum, labvm.NIC_QUEUES))
    if current != len(HOUSEKEEPING):
        bad.append("%d combined channels, expected %d (housekeeping CPUs)" % (current, len(HOUSEKEEPING)))
    irqs = g.nic_queue_interrupts()
    if len(irqs) != 2 * labvm.NIC_QUEUES:
        bad.append("found %d queue vectors, expected %d" % (len(irqs), 2 * labvm.NIC_QUEUES))
    for name, (irq, counts) in sorted(irqs.items()):
        smp, eff = affinity(g, irq)
        if not smp <= HOUSEKEEPING:
            bad.append("%s (irq %d) smp_affinity_list %s" % (name, irq, sorted(smp)))
        if not eff <= HOUSEKEEPING:
            bad.append("%s (irq %d, %d interrupts) effective_affinity_list %s"
                       % (name, irq, sum(counts), sorted(eff)))
    # virtio_net's own XPS maps (the series leaves isolated transmitters
    # out of them, and says so): no tx queue names an isolated CPU
    for q in range(current):
        xps = labvm.mask_cpus(g.read_file("/sys/class/net/%s/queues/tx-%d/xps_cpus" % (g.nic, q)))
        if xps & ISOLATED:
            bad.append("tx-%d xps_cpus %s" % (q, sorted(xps)))
    return bad



@pytest.fixture
def flavour(lab):
    return lab.get(cmdline=FLAVOUR_CMDLINE)


def test_guest_boots_lab_kernel(flavour):
    rc, out = flavour.run(["uname", "-r"])
    assert rc == 0 and out.strip() == labvm.kernel_info(flavour.kernel).get("release")
    assert flavour.nic, "guest NIC not found:\n" + flavour.console()[-2000:]


def test_isolated_boot_limits_vectors(flavour):
    bad = vector_violations(flavour)
    assert not bad, "\n".join(bad)


def test_isolated_boot_traffic_stays_on_housekeeping(flavour):
    before = flavour.nic_queue_interrupts()
    report = flavour.flood(seconds=3, count=300000, flows=32)
    assert report["sent"] > 0, report
    after = flavour.nic_queue_interrupts()
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


def test_raised_channels_share_housekeeping_cpus(flavour):
    """ethtool -L up to the device maximum: the extra queues share the
    housekeeping CPUs instead of landing on the isolated ones."""
    maximum, current = channels(flavour)
    try:
        rc, _ = flavour.run(["ethtool", "-L", flavour.nic, "combined", str(maximum)])
        assert rc == 0, flavour.last_stderr
        assert channels(flavour)[1] == maximum
        irqs = flavour.nic_queue_interrupts()
        for name, (irq, _) in sorted(irqs.items()):
            smp = affinity(flavour, irq)[0]
            assert smp <= HOUSEKEEPING, "%s (irq %d) smp_affinity_list %s" % (name, irq, sorted(smp))
        used = set()
        for q in range(maximum):
            used |= affinity(flavour, irqs["input.%d" % q][0])[0]
        assert used == HOUSEKEEPING
    finally:
        flavour.run(["ethtool", "-L", flavour.nic, "combined", str(current)])


def test_default_queue_helpers_follow_io_queue(flavour):
    seen = default_queues(flavour)
    print("flavour boot: %s" % seen)
    assert seen["cpus"] == HOUSEKEEPING
    assert seen["rss_queues"] == 2
    if labvm.generation(flavour.kernel) == 7:
        assert len(seen["napi_config"]) == 8
        assert all(len(m) == 1 and m <= HOUSEKEEPING for m in seen["napi_config"]), seen
        assert set().union(*seen["napi_config"]) == HOUSEKEEPING


def test_default_rss_queues_count_housekeeping_cores(lab):
    """One housekeeping core of four: one RSS queue by default, where all
    four cores give two; every NAPI config starts on CPU 0."""
    g = lab.get(cmdline="isolcpus=io_queue,1-3")
    seen = default_queues(g)
    print("isolcpus=io_queue,1-3: %s" % seen)
    assert (seen["rss_queues"], seen["cpus"]) == (1, {0})
    assert channels(g)[1] == 1
    if labvm.generation(g.kernel) == 7:
        assert seen["napi_config"] and all(m == {0} for m in seen["napi_config"]), seen


def test_managed_irq_isolation_keeps_todays_defaults(lab):
    """Hosts booted without io_queue (every realtime host today) see no
    change: all four channels, the helpers over all CPUs."""
    g = lab.get(cmdline=MANAGED_IRQ_CMDLINE)
    assert channels(g) == (labvm.NIC_QUEUES, labvm.NIC_QUEUES)
    seen = default_queues(g)
    assert (seen["rss_queues"], seen["cpus"]) == (2, ALL_CPUS)
    if labvm.generation(g.kernel) == 7:
        assert set().union(*seen["napi_config"]) == ALL_CPUS


def test_unisolated_boot_uses_all_cpus(lab):
    g = lab.get(cmdline="")
    assert labvm.cpu_list(g.read_file("/sys/devices/system/cpu/isolated")) == set()
    maximum, current = channels(g)
    assert (maximum, current) == (labvm.NIC_QUEUES, labvm.NIC_QUEUES)
    irqs = g.nic_queue_interrupts()
    used = set()
    for q in range(current):
        used |= affinity(g, irqs["input.%d" % q][0])[0]
    assert used == ALL_CPUS


def test_unpatched_kernel_differs(lab):
    """The base kernel, same command line: the vector checks fail there,
    and the unknown io_queue flag costs nothing (the kernel skips it and
    reads isolcpus=domain on the CPUs the parents isolate anyway)."""
    base = base_kernel(labvm.default_kernel())
    if labvm.missing(base):
        pytest.skip("unpatched base kernel not built: %s" % labvm.missing(base))
    g = lab.get(kernel=base, cmdline=FLAVOUR_CMDLINE)
    bad = vector_violations(g)
    print("base kernel deviations:\n  " + "\n  ".join(bad))
    assert channels(g)[1] == labvm.NIC_QUEUES
    assert any("combined channels" in b for b in bad)
    assert any("smp_affinity_list" in b for b in bad)
    assert any("xps_cpus" in b for b in bad)
    assert labvm.cpu_list(g.read_file("/sys/devices/system/cpu/isolated")) == ISOLATED
    rc, log = g.run(["dmesg"])
    assert "isolcpus: Skipped unknown flag io_queue" in log
