# SPDX-License-Identifier: GPL-2.0-or-later
"""realtime-virtual-host-irqtune on Linux 7.2 under TuneD 2.27 and systemd,
with the stock [scheduler] unit really running (TuneD's `perf` module is
built into the guest from the 7.2 tree).

The guest boots with CPUs 2-3 isolated but without managed_irq isolation,
so the NIC starts with 4 channels spread over all CPUs.  The scheduler
unit moves every IRQ it may off the isolated CPUs too; nic_housekeeping
(priority -10) limits the NIC's channels and queue IRQs first and is
undone last, so the two never fight and `off` restores the originals.
"""

import re
import time

import pytest

from support.host7 import KERNEL, Host7

PROFILE = "realtime-virtual-host-irqtune"
CMDLINE = "isolcpus=domain,2-3 nohz_full=2-3"
HOUSEKEEPING = "0-1"


@pytest.fixture(scope="module")
def h(lab):
    g = lab.boot(kernel=KERNEL, cmdline=CMDLINE)
    host = Host7(g)
    host.install_project()
    yield host
    lab.close()     # realtime parents changed global guest settings


def channels(h):
    out = h.sh("ethtool -l %s" % h.nic)
    return int(re.search(r"^Combined:\s+(\d+)", out.split("Current hardware settings:")[1],
                         re.M).group(1))


def queue_affinities(h):
    return {irq: h.g.read_file("/proc/irq/%d/smp_affinity_list" % irq).strip()
            for name, (irq, _) in h.g.nic_queue_interrupts().items()}


def other_irq_affinities(h):
    """Affinity of IRQs that are not the NIC's and can be moved."""
    nic = {irq for irq, _ in h.g.nic_queue_interrupts().values()}
    out = {}
    for entry in h.sh("ls /proc/irq").split():
        if entry.isdigit() and int(entry) not in nic:
            rc, aff = h.g.run(["cat", "/proc/irq/%s/smp_affinity_list" % entry])
            if rc == 0:
                out[int(entry)] = aff.strip()
    return out


def napi_values(h):
    return {nid: (n.get("defer-hard-irqs", 0), n.get("gro-flush-timeout", 0))
            for nid, n in h.napis().items()}


def test_flavour_with_scheduler_limits_queues_and_restores(h):
    assert h.g.read_file("/sys/devices/system/cpu/isolated").strip() == "2-3"
    assert h.sh("python3 -c 'import perf; print(perf.__file__)'")
    assert channels(h) == 4
    before_q = queue_affinities(h)
    before_other = other_irq_affinities(h)
    before_napi = napi_values(h)
    assert set(before_q.values()) != {HOUSEKEEPING}, before_q
    h.write("/etc/tuned/realtime-virtual-host-variables.conf", "isolated_cores=2-3\n")
    h.write("/etc/tuned/realtime-virtual-host-irqtune-variables.conf",
            "isolated_cores=2-3\nisolate_managed_irq=N\nhousekeeping_nics=%s\n"
            "housekeeping_channels=housekeeping\nnapi_defer_hard_irqs=100\n"
            "napi_gro_flush_timeout=20us\n" % h.nic)
    log = h.profile(PROFILE, timeout=600)
    assert "scheduler" in log
    assert not re.search(r"(?i)cannot import.*perf|No module named 'perf'", log), log
    assert not re.search(r"Traceback[\s\S]*(irqtune|plugin_napi|plugin_nic_housekeeping)", log), log

    # The next boot's command line (TuneD's bootloader unit writes it even
    # where no boot loader config exists): the flavour's io_queue flag
    # beside the parents' isolation and irqaffinity=.
    boot = re.search(r'^TUNED_BOOT_CMDLINE="(.*)"$', h.g.read_file("/etc/tuned/bootcmdline"),
                     re.M).group(1).split()
    for arg in ("isolcpus=io_queue,2-3", "isolcpus=2-3", "nohz_full=2-3"):
        assert arg in boot, (arg, boot)
    irqaffinity = [a.split("=", 1)[1] for a in boot if a.startswith("irqaffinity=")]
    assert irqaffinity in (["0,1"], ["0-1"]), boot

    assert channels(h) == 2
    after_q = queue_affinities(h)
    assert set(after_q.values()) == {HOUSEKEEPING}, after_q
    assert set(napi_values(h).values()) == {(100, 20000)}
    moved = {irq: aff for irq, aff in other_irq_affinities(h).items() if aff != before_other.get(irq)}
    assert moved, "the scheduler unit moved no IRQ off the isolated CPUs"

    # No tug of war: nothing changes while both units stay active.
    mark = h.log_size()
    time.sleep(20)
    assert queue_affinities(h) == after_q
    assert channels(h) == 2
    later = h.log_since(mark)
    assert not re.search(r"queue IRQs made affine|channels set to", later), later

    ok, vlog = h.verify()
    assert "'channels combined' = '2'" in vlog, vlog
    assert not re.search(r"verify: failed: .*(IRQ \d+ .*affinity|NAPI)", vlog), vlog

    h.off()
    deadline = time.monotonic() + 120
    while channels(h) != 4 or queue_affinities(h) != before_q:
        assert time.monotonic() < deadline, (channels(h), queue_affinities(h), before_q)
        time.sleep(2)
    assert napi_values(h) == before_napi
    assert other_irq_affinities(h) == before_other
