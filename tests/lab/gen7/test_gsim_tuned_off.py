# SPDX-License-Identifier: GPL-2.0-or-later
"""The gsim profile unapplied through TuneD 2.27 (`tuned-adm off`, the path
a profile switch and the Ansible rollback take too) while a flood keeps
GSIM holds armed.

Unapplying writes delay_us back to its original 0 with holds armed: the v2
series could leave a hold behind the disabled static key there and spin the
holding CPU in hard interrupt context (review-kernel-series-v2, problem 1).
Checked: holds happened before the off, every packet of the flood arrived,
delay_us is 0 again, and neither the lockup detectors (soft, buddy hard
lockup, RCU stall, hung task) on the serial console nor the kernel log
report anything.

Needs a 7.2 kernel with kernel-patches/7.2/gsim: "7.2-lab", or one named by
IRQTUNE_LAB7_KERNEL (e.g. "7.2-gsim+gsim-lab").
"""

import json
import subprocess
import time

import pytest

from lab.gsimlab import (DIR, assert_detectors_live, holds_delta, irq_holds, kernel_problems,
                         lockup_reports, pacer_argv, rx_irqs, udp_noports)

# A fixed 500us delay: every flood interrupt of an allowed vector is held,
# whatever rate this host's flood reaches.
VARIABLES = {"gsim": {"gsim_delay_us": 500, "gsim_target_intr_rate": 0,
                      "gsim_hardirq_percent": 0}}
PPS = 2000
FLOWS = 16
SECONDS = 45


def test_tuned_off_under_flood_delivers_everything(host7, lab):
    h = host7
    g = h.g
    rc, _ = g.run(["test", "-d", DIR])
    if rc != 0:
        pytest.fail("kernel %s has no %s (kernel-patches/7.2/gsim)" % (g.kernel, DIR))
    assert_detectors_live(g)
    assert g.read_file(DIR + "/delay_us").strip() == "0"
    irqs = sorted(rx_irqs(g))
    try:
        h.profile("gsim", variables=VARIABLES)
        assert g.read_file(DIR + "/delay_us").strip() == "500"
        before = udp_noports(g)
        holds = irq_holds(g)
        flood = subprocess.Popen(g.netns.exec_argv(pacer_argv(g, PPS, SECONDS, FLOWS)),
                                 stdout=subprocess.PIPE, text=True)
        try:
            time.sleep(3)
            held_before_off = sum(holds_delta(holds, irq_holds(g)).get(i, 0) for i in irqs)
            t0 = time.monotonic()
            h.off()
            off_seconds = time.monotonic() - t0
            delay_after = g.read_file(DIR + "/delay_us").strip()
        finally:
            out, _ = flood.communicate(timeout=SECONDS + 60)
        report = json.loads(out)
        time.sleep(1)
        received = udp_noports(g) - before
        print("\ngsim (delay_us 500) applied, %d pkt/s flood over %d flows: %d holds before "
              "`tuned-adm off` (%.1f s); delay_us after %s; %d of %d packets received"
              % (PPS, FLOWS, held_before_off, off_seconds, delay_after, received,
                 report["sent"]))
        assert held_before_off > 0, "nothing was held before the off, the test proves nothing"
        assert off_seconds < SECONDS - 5, "the flood ended before the off did"
        assert delay_after == "0"
        assert received == report["sent"], "%d packets lost" % (report["sent"] - received)
        assert lockup_reports(g) == []
        assert kernel_problems(g) == []
    except BaseException:
        lab.close()                     # a wedged guest is no use to later tests
        raise
