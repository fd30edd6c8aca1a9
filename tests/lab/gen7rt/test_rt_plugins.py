# SPDX-License-Identifier: GPL-2.0-or-later
"""The other irqtune plugins on PREEMPT_RT (kernel 7.2-lab-rt, TuneD 2.27
under systemd): latency-suspend on threaded NAPIs with a service opted in,
the gsim plugin on a kernel that cannot have GSIM, `irqtune status` and the
kernel capability detection.

On PREEMPT_RT every device interrupt is handled in a thread (irq/<n>-<name>)
and GSIM's Kconfig refuses the kernel (depends on !PREEMPT_RT), so the
7.2-lab-rt kernel carries the GSIM series without /proc/irq/sw_moderation.
NAPI values are read back with the raw netlink reader of the integration
tests, never with the library under test.
"""

import re

import pytest

from support import labvm
from support.rtlab import ABSENT_ON_PREEMPT_RT, KERNEL, verify_on_preempt_rt
from support.host7 import BOOT_ARGS, SUSPEND_VALUES, Host7, napi_values

LIB = "libirqtune-busypoll.so"
DROPIN = "/etc/systemd/system/memcached.service.d/50-irqtune-busypoll.conf"


@pytest.fixture(scope="module")
def h(lab):
    reason = labvm.missing(KERNEL)
    if reason:
        pytest.skip(reason)
    g = lab.get(kernel=KERNEL, cmdline=BOOT_ARGS)
    host = Host7(g)
    host.install_project()
    host.serve_memcached_on_nic()
    yield host
    lab.close()


def irq_threads(h):
    """{irq: thread name} of the kernel's IRQ threads."""
    out = {}
    for comm in h.sh("ps -eo comm=").split():
        m = re.match(r"irq/(\d+)-", comm)
        if m:
            out[int(m.group(1))] = comm
    return out


def test_every_nic_vector_is_threaded(h):
    assert "PREEMPT_RT" in h.g.read_file("/proc/sys/kernel/version").split()
    threads = irq_threads(h)
    queues = {name: irq for name, (irq, _) in h.g.nic_queue_interrupts().items()}
    assert queues and all(irq in threads for irq in queues.values()), (queues, threads)


def test_status_reports_the_realtime_kernel(h):
    rc, out = h.run("irqtune", "status", h.nic)
    assert rc == 0, out
    print(out)
    lines = out.splitlines()
    assert "kernel: PREEMPT_RT: yes, busy polling: yes" in lines, out
    assert not [l for l in lines if l.startswith("missing:")], out
    rows = [l for l in lines if l.split()[:1] == [h.nic]]
    assert len(rows) == len(h.napis()), out


def test_capabilities_detected_in_the_guest(h):
    """The library's detection on the real kernel: both features found in
    the initial network namespace; in another one the busy_poll sysctl is
    not visible, which must read as 'cannot tell', never as missing."""
    script = ("from irqtune.kernel.caps import detect_kernel_features as d; f = d(); "
              "print(f.busy_poll, f.preempt_rt, f.lacking())")
    assert h.sh("python3 -c %s" % repr(script)).strip() == "True True []"
    out = h.sh("ip netns add rtcaps && ip netns exec rtcaps python3 -c %s; ip netns del rtcaps"
               % repr(script))
    assert out.strip() == "None True []", out


def set_threaded(h, value):
    h.write("/sys/class/net/%s/threaded" % h.nic, str(value))


def napi_threads(h):
    return [c for c in h.sh("ps -eo comm=").split() if c.startswith("napi/%s-" % h.nic)]


def test_latency_suspend_on_threaded_napis_with_optin(h):
    """An administrator runs NAPI in threads (common on realtime hosts, so
    that NAPI work is a schedulable thread), then applies latency-suspend
    with memcached opted in: every threaded NAPI gets the per-NAPI values,
    stays threaded, memcached runs with the preload, and `off` restores."""
    h.off()
    set_threaded(h, 1)
    before = h.napis()
    assert before and all(n.get("threaded") == 1 for n in before.values()), before
    # one thread per rx NAPI ("napi/<dev>-<id>"); virtio-net's tx NAPIs get
    # threads too, as "napi/<dev>-0": they have no id (napi-get omits them)
    assert {"napi/%s-%d" % (h.nic, nid) for nid in before} <= set(napi_threads(h)), napi_threads(h)
    try:
        log = h.profile(h.lab_profile(), variables={"latency-suspend": {
            "suspend_nics": h.nic, "optin_services": "memcached", "optin_restart": "true"}})
        print(log)
        napis = h.napis()
        assert {nid: napi_values(n) for nid, n in napis.items()} == \
            {nid: SUSPEND_VALUES for nid in napis}, napis
        assert all(n.get("threaded") == 1 for n in napis.values()), napis
        assert LIB in h.main_pid_maps("memcached")
        assert "Traceback" not in log and not re.search(r"ERROR .*plugin_(napi|busy_poll)", log), log
        assert re.search(r"instance napi: .*set %d NAPIs" % len(napis), log), log
        # network-latency's kernel.numa_balancing is the only failure
        assert verify_on_preempt_rt(h) == {"kernel.numa_balancing": "sysctl absent on PREEMPT_RT"}
        bp0, rx0 = h.busy_poll_rx(), h.nic_rx_packets()
        res = h.memcached_load(rate=2000, seconds=8, conns=1)
        share = (h.busy_poll_rx() - bp0) / max(1, h.nic_rx_packets() - rx0)
        print("threaded NAPIs, latency-suspend, memcached opted in: %s answered, p99 %s us, "
              "busy-polled share of rx packets %.3f" % (res.get("answered"), res.get("p99_us"), share))
        h.off()
        after = h.napis()
        assert all(napi_values(n) == napi_values(before[nid]) and n.get("threaded") == 1
                   for nid, n in after.items()), (before, after)
        assert h.run("test", "-e", DROPIN)[0] != 0
    finally:
        set_threaded(h, 0)


def test_gsim_on_a_kernel_without_gsim_names_preempt_rt(h):
    h.off()
    assert h.run("test", "-e", "/proc/irq/sw_moderation")[0] != 0
    h.write("/etc/tuned/gsim-variables.conf", "gsim_irqs=nic:%s\n" % h.nic)
    log = h.profile(h.lab_profile(), "gsim", variables={"latency-suspend": {"suspend_nics": h.nic}})
    lines = [l for l in log.splitlines() if "GSIM" in l and "not available" in l]
    assert len(lines) == 1, log
    assert "the running kernel is PREEMPT_RT" in lines[0], lines
    assert "CONFIG_IRQ_SW_MODERATION depends on !PREEMPT_RT" in lines[0], lines
    assert "Traceback" not in log, log
    # The rest of the profile applied.
    assert all(napi_values(n) == SUSPEND_VALUES for n in h.napis().values())
    # verify names the GSIM options unsupported (and the parent's sysctl)
    ok, vlog = h.verify()
    failed = set(re.findall(r"verify: failed: '([^']*)'", vlog))
    assert {f for f in failed if f.startswith("gsim: ")} and all(
        f.startswith("gsim: ") or f in ABSENT_ON_PREEMPT_RT for f in failed), vlog
    assert all("unsupported: the kernel has no GSIM interface" in f
               for f in failed if f.startswith("gsim: ")), vlog
    h.off()
