# SPDX-License-Identifier: GPL-2.0-or-later
"""The README's first command, `make deploy`, exactly as written, in a fresh
guest with systemd (Debian unstable, TuneD 2.27 enabled, no network: the
packages `make deploy` needs are in the image, so its apt step has nothing
to fetch).  The source is `git archive HEAD`: what a fresh clone holds.

The emulated CPU has no cpufreq driver, so the [cpu] unit latency-suspend
inherits from network-latency (boost) cannot verify here - as on many
virtual machines.  `make deploy` must then fail loudly, naming exactly
that, with the profile active and every NAPI tuned; anything else failing
verify fails the test.
"""

import re
import subprocess
from pathlib import Path

from support.host7 import BOOT_ARGS, KERNEL, SUSPEND_VALUES, Host7, napi_values

REPO = Path(__file__).resolve().parents[3]
ARCHIVE = REPO / "build" / "deploy-source.tar"


def test_make_deploy_on_a_fresh_systemd_guest(lab):
    ARCHIVE.parent.mkdir(exist_ok=True)
    subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", "--prefix=irqtune/",
                    "-o", str(ARCHIVE), "HEAD"], check=True)
    g = lab.boot(kernel=KERNEL, cmdline=BOOT_ARGS)
    try:
        h = Host7(g)
        assert h.run("test", "-e", "/usr/bin/irqtune")[0] != 0      # nothing installed yet
        h.sh("mkdir -p /root/src && tar -C /root/src -xf /irqtune/build/%s" % ARCHIVE.name)
        rc, out = h.run("sh", "-c", "cd /root/src/irqtune && make deploy 2>&1", timeout=900)
        failures = re.findall(r"verify: failed: (.*)", out)
        print("make deploy: rc %d\n%s" % (rc, out[-1500:]))
        if rc != 0:
            assert "irqtune verify: tuned-adm verify failed for latency-suspend" in out, out[-3000:]
            assert failures and all("'boost'" in f for f in failures), out[-3000:]
        else:
            assert "defer-hard-irqs" in out, out[-3000:]       # irqtune status ran
        rc2, active = h.tuned_adm("active")
        assert "Current active profile: latency-suspend" in active, active
        napis = h.napis()
        assert napis and all(napi_values(n) == SUSPEND_VALUES for n in napis.values()), napis
        assert h.sh("systemctl is-enabled tuned").strip() == "enabled"
    finally:
        g.shutdown()
