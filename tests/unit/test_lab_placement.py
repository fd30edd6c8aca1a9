# SPDX-License-Identifier: GPL-2.0-or-later
"""The realtime lab's judgement of where the NIC's work may run
(tests/support/rtlab.placement_faults).

Fixtures: what test_rt_provisioning printed in the 7.2-lab-rt guest on
2026-11-25 (4 vCPUs, CPUs 2-3 isolated, virtio-net cut to 2 of its 4
channels), irq_placement() and rps_xps() under each profile.
"""

from support import rtlab

# realtime-virtual-host-irqtune: queue IRQs (irq, smp, effective, thread)
FLAVOUR = {"input.0": (32, "0-1", "0", "0"), "output.0": (33, "0-1", "0", "0"),
           "input.1": (34, "0-1", "1", "1"), "output.1": (35, "0-1", "1", "1"),
           "input.2": (36, "0-1", "0", "0"), "output.2": (37, "0-1", "1", "1"),
           "input.3": (38, "0-1", "0", "0"), "output.3": (39, "0-1", "1", "1")}
FLAVOUR_QUEUES = {"rx-0": set(), "rx-1": set(), "tx-0": {0}, "tx-1": {1}}
# stock realtime-virtual-host: the switched-off queue 3's vector never
# fired after its move, so it is still effective on CPU 3
STOCK = dict(FLAVOUR, **{"input.3": (38, "0-1", "3", "3")})
STOCK_QUEUES = {"rx-0": set(), "rx-1": set(), "tx-0": {0, 1}, "tx-1": {2, 3}}


def test_the_flavours_placement_has_nothing_on_isolated_cpus():
    assert rtlab.placement_faults(FLAVOUR, FLAVOUR_QUEUES, True) == []


def test_the_stock_profiles_placement_is_named():
    assert rtlab.placement_faults(STOCK, STOCK_QUEUES, True) == [
        "input.3 (IRQ 38) effective_affinity: 3", "input.3 (IRQ 38) thread: 3",
        "tx-1 xps_cpus: 2,3"]


def test_one_queue_irq_on_an_isolated_cpu():
    placement = dict(FLAVOUR, **{"input.1": (34, "2", "2", "2")})
    assert rtlab.placement_faults(placement, FLAVOUR_QUEUES, False) == [
        "input.1 (IRQ 34) smp_affinity: 2", "input.1 (IRQ 34) effective_affinity: 2"]


def test_rps_or_xps_of_one_queue_on_an_isolated_cpu():
    rps = dict(FLAVOUR_QUEUES, **{"rx-0": {0, 2}})
    assert rtlab.placement_faults(FLAVOUR, rps, True) == ["rx-0 rps_cpus: 0,2"]
    xps = dict(FLAVOUR_QUEUES, **{"tx-0": {0, 2}})
    assert rtlab.placement_faults(FLAVOUR, xps, True) == ["tx-0 xps_cpus: 0,2"]


def test_a_missing_irq_thread_counts_only_on_preempt_rt():
    placement = dict(FLAVOUR, **{"input.0": (32, "0-1", "0", None)})
    assert rtlab.placement_faults(placement, FLAVOUR_QUEUES, False) == []
    assert rtlab.placement_faults(placement, FLAVOUR_QUEUES, True) == [
        "input.0 (IRQ 32) thread: None"]
