# SPDX-License-Identifier: GPL-2.0-or-later
"""The README's first command, `make deploy`, exactly as written, in a fresh
guest without systemd (generation 6: Debian 12, TuneD 2.20, the lab's own
init; no network, the packages `make deploy` needs are in the image).  The
source is `git archive HEAD`: what a fresh clone holds.

Without systemd, `make deploy` must start D-Bus and the TuneD daemon itself
and go on to apply the profile.  Linux 6.12 has no napi-set: deferral is
set device-wide through sysfs and irq-suspend-timeout does not exist, and
the parents' units cannot verify in this guest - so `make deploy` must
fail loudly naming only those, with the profile active and the sysfs
fallback values set.
"""

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
# What cannot verify in this guest, and is not the project's to fix: the
# parents' units (no cpufreq, a lab kernel without NUMA, a kernel command
# line without network-latency's arguments) and the one value 6.12 lacks.
EXPECTED_FAILURES = ("'boost'", "'kernel.numa_balancing'", "cmdline arg",
                     "irq_suspend_timeout: unsupported")
ARCHIVE = REPO / "build" / "deploy-source.tar"


def test_make_deploy_without_systemd(lab):
    ARCHIVE.parent.mkdir(exist_ok=True)
    subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", "--prefix=irqtune/",
                    "-o", str(ARCHIVE), "HEAD"], check=True)
    g = lab.boot()
    try:
        def run(script, timeout=120):
            rc, out = g.run(["sh", "-c", script], timeout=timeout)
            return rc, out + g.last_stderr

        assert run("test -d /run/systemd/system")[0] != 0, "this guest is meant to have no systemd"
        assert run("test -e /usr/bin/irqtune")[0] != 0
        rc, out = run("mkdir -p /root/src && tar -C /root/src -xf /irqtune/build/%s && "
                      "cd /root/src/irqtune && make deploy 2>&1" % ARCHIVE.name, timeout=900)
        print("make deploy: rc %d\n%s" % (rc, out[-1500:]))
        assert "Cannot talk to TuneD daemon" not in out, out[-3000:]
        failures = re.findall(r"verify: failed: (.*)", out)
        if rc != 0:
            assert "irqtune verify: tuned-adm verify failed for latency-suspend" in out, out[-3000:]
            assert failures, out[-3000:]
            for f in failures:
                assert any(expected in f for expected in EXPECTED_FAILURES), f
        rc, active = run("tuned-adm active")
        assert "Current active profile: latency-suspend" in active, active
        assert run("kill -0 $(cat /run/tuned/tuned.pid)")[0] == 0, "no TuneD daemon running"
        nic = "/sys/class/net/%s" % g.nic
        assert g.read_file(nic + "/napi_defer_hard_irqs").strip() == "100"
        assert g.read_file(nic + "/gro_flush_timeout").strip() == "20000"
    finally:
        lab.close()
