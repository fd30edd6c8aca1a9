# SPDX-License-Identifier: GPL-2.0-or-later
"""The bench's CPU cost measure checked against the guest itself: the
instruction-counting plugin (tests/lab/plugin/insn_count.c) on a guest
booted as `make lab-bench` boots it (-cpu max,-erms,-fsrm, idle=halt).

- A dash loop of 2N iterations pinned to vCPU 3 counts 1.8-2.2x a loop of
  N on vCPU 3, and during it vCPU 3 counts at least 3x any other vCPU
  (the counts are per vCPU, not one total spread over them).
- An idle window counts next to nothing: once the guest has settled
  (nginx and redis stopped, as the bench stops them; boot-time work done),
  the whole guest executes under 5 % of what one busy vCPU executes in
  the same time.  Right after boot systemd, TuneD and RCU still execute
  tens of millions of instructions a second under TCG, so the test waits
  up to 120 s for a quiet 2 s window and prints every window it saw.
"""

import time

import pytest

from support import labvm
from support.host7 import COUNTED_BOOT_ARGS, COUNTED_CPU, KERNEL

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


def test_counter_loop_scaling_and_idle(counted):
    g = counted
    assert len(g.insns()) == g.smp
    rc, _ = g.run(["systemctl", "stop", "nginx", "redis-server"], timeout=120)
    assert rc == 0, g.last_stderr
    loop(g, 1000)                       # warm the page cache and translations
    one, t1 = loop(g, N)
    two, t2 = loop(g, 2 * N)
    print("loop N=%d: %s (%.1f s); 2N: %s (%.1f s)" % (N, one, t1, two, t2))
    ratio = two[VCPU] / max(1, one[VCPU])
    assert 1.8 <= ratio <= 2.2, "2N/N on vCPU %d = %.3f (%s vs %s)" % (VCPU, ratio, two, one)
    others = max(c for i, c in enumerate(two) if i != VCPU)
    assert two[VCPU] >= 3 * others, "2N loop pinned to vCPU %d counted %s" % (VCPU, two)
    per_iter = (two[VCPU] - one[VCPU]) / N
    assert 100 <= per_iter <= 100000, "%.0f instructions per dash loop iteration" % per_iter

    busy_rate = two[VCPU] / t2          # one busy vCPU, instructions/s (a lower bound)
    windows = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        before = g.insns()
        time.sleep(2)
        idle = [b - a for a, b in zip(before, g.insns())]
        windows.append(idle)
        if sum(idle) / 2 < 0.05 * busy_rate:
            break
    print("busy vCPU %.1f M/s; idle 2 s windows: %s" % (busy_rate / 1e6, windows))
    assert sum(windows[-1]) / 2 < 0.05 * busy_rate, \
        "no quiet window in 120 s: the idle guest still executes %.1f M instructions/s, a busy vCPU " \
        "%.1f M/s (windows %s)" % (sum(windows[-1]) / 2e6, busy_rate / 1e6, windows)
