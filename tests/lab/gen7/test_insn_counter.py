# SPDX-License-Identifier: GPL-2.0-or-later
"""The bench's CPU cost measure checked against the guest itself: the
instruction-counting plugin (tests/lab/plugin/insn_count.c) on a guest
booted as `make lab-bench` boots it (-cpu max,-erms,-fsrm, idle=halt).

- An idle window counts next to nothing: the whole guest executes less
  than 2 % of what one busy vCPU executes in the same time.
- A shell loop of 2N iterations pinned to vCPU 3 counts about twice a loop
  of N (1.8-2.2x) on vCPU 3, and vCPU 3 holds at least 90 % of what the
  whole guest executed more for the longer loop (the counts are per vCPU,
  not one shared total).
"""

import time

import pytest

import labvm
from host7 import COUNTED_BOOT_ARGS, COUNTED_CPU, KERNEL

N = 20000
VCPU = 3


@pytest.fixture
def counted(lab):
    if not labvm.insn_plugin().is_file():
        pytest.skip("%s not built (make lab-plugin)" % labvm.insn_plugin())
    return lab.get(kernel=KERNEL, cmdline=COUNTED_BOOT_ARGS, cpu=COUNTED_CPU, count_insns=True)


def loop(g, n):
    """Instructions per vCPU while the guest runs a dash loop of n
    iterations pinned to VCPU, and the loop's wall time."""
    script = 'i=0; while [ $i -lt %d ]; do i=$((i+1)); done' % n
    before = g.insns()
    t0 = time.monotonic()
    rc, _ = g.run(["taskset", "-c", str(VCPU), "sh", "-c", script], timeout=300)
    seconds = time.monotonic() - t0
    after = g.insns()
    assert rc == 0, g.last_stderr
    return [b - a for a, b in zip(before, after)], seconds


def test_counter_idle_and_loop_scaling(counted):
    g = counted
    assert len(g.insns()) == g.smp
    loop(g, 1000)                       # warm the page cache and translations
    one, t1 = loop(g, N)
    two, t2 = loop(g, 2 * N)
    time.sleep(1)
    before = g.insns()
    time.sleep(3)
    after = g.insns()
    idle = [b - a for a, b in zip(before, after)]
    busy_rate = two[VCPU] / t2          # one busy vCPU, instructions/s
    print("loop N=%d: %s (%.1fs); 2N: %s (%.1fs); idle 3 s: %s; busy vCPU %.0f M/s"
          % (N, one, t1, two, t2, idle, busy_rate / 1e6))
    ratio = two[VCPU] / max(1, one[VCPU])
    assert 1.8 <= ratio <= 2.2, "2N/N on vCPU %d = %.3f (%s vs %s)" % (VCPU, ratio, two, one)
    extra = sum(two) - sum(one)
    assert two[VCPU] - one[VCPU] >= 0.9 * extra, \
        "vCPU %d holds %d of the %d more instructions of the 2N loop" % (VCPU, two[VCPU] - one[VCPU], extra)
    per_iter = (two[VCPU] - one[VCPU]) / N
    assert 100 <= per_iter <= 100000, "%.0f instructions per dash loop iteration" % per_iter
    assert sum(idle) / 3 < 0.02 * busy_rate, \
        "idle guest %.1f M instructions/s, a busy vCPU %.1f M/s" % (sum(idle) / 3e6, busy_rate / 1e6)
