# SPDX-License-Identifier: GPL-2.0-or-later
"""realtime-virtual-host-irqtune on the real TuneD daemon inside the lab guest.

The guest (4 vCPUs, 4-queue virtio-net) boots with CPUs 2-3 isolated but
without managed_irq isolation ("isolcpus=domain,2-3 nohz_full=2-3"), so
/sys/devices/system/cpu/isolated says 2-3 while the NIC still comes up
with 4 combined channels and its queue IRQs spread over all CPUs - the
state an administrator starts from.  TuneD then applies the flavour
profile; the realtime parents' global scheduler and sysctl settings land in
the guest only, never on the host.  net.ifnames=0 keeps the NIC's name
stable across a driver rebind (udevd runs for TuneD's hotplug events).

Checked: 2 combined channels, every queue IRQ affine to CPUs 0-1, NAPI
deferral set (6.12 has no napi-set: the device-wide sysfs files), GSIM
allowed on the queue IRQs when the kernel has it, verify
lines for channels and IRQs, an IRQ moved behind TuneD's back shown by
verify, a driver rebind re-applied, and `tuned-adm off` restoring 4
channels, the old affinities and the old NAPI values.
"""

import re
import time

import pytest

CMDLINE = "isolcpus=domain,2-3 nohz_full=2-3 net.ifnames=0"
PROFILE = "realtime-virtual-host-irqtune"
LOG = "/run/tuned-lab.log"
HOUSEKEEPING = "0-1"


@pytest.fixture(scope="module")
def g(lab):
    guest = lab.boot(cmdline=CMDLINE)
    yield guest
    lab.close()      # the realtime profile changed global guest settings


def sh(g, script, timeout=120):
    rc, out = g.run(["sh", "-c", script], timeout=timeout)
    assert rc == 0, "%s: rc %d: %s %s" % (script, rc, out, g.last_stderr)
    return out


def channels(g):
    out = sh(g, "ethtool -l %s" % g.nic)
    current = out.split("Current hardware settings:")[1]
    return int(re.search(r"^Combined:\s+(\d+)", current, re.M).group(1))


def queue_irqs(g):
    """{irq: name} of the NIC's queue vectors, read from the guest's procfs."""
    virtio = sh(g, "basename $(readlink -f /sys/class/net/%s/device)" % g.nic).strip()
    irqs = {}
    for line in g.read_file("/proc/interrupts").splitlines():
        m = re.match(r"\s*(\d+):.*\s(%s-(?:input|output)\.\d+)\s*$" % virtio, line)
        if m:
            irqs[int(m.group(1))] = m.group(2)
    assert len(irqs) == 8, irqs
    return irqs


def affinities(g):
    return {irq: g.read_file("/proc/irq/%d/smp_affinity_list" % irq).strip()
            for irq in queue_irqs(g)}


def napi_sysfs(g):
    return tuple(int(g.read_file("/sys/class/net/%s/%s" % (g.nic, f)))
                 for f in ("napi_defer_hard_irqs", "gro_flush_timeout"))


def gsim_state(g):
    """(delay_us, {irq: allow_sw_moderation}) or None without GSIM."""
    rc, out = g.run(["cat", "/proc/irq/sw_moderation/delay_us"])
    if rc != 0:
        return None
    allowed = {irq: g.read_file("/proc/irq/%d/allow_sw_moderation" % irq).strip()
               for irq in queue_irqs(g)}
    return int(out), allowed


def log_text(g):
    rc, out = g.run(["cat", LOG])
    return out if rc == 0 else ""


def wait_log(g, pattern, since, timeout=300, what=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log_text(g)[since:]
        if re.search(pattern, text):
            return text
        time.sleep(2)
    lines = [l for l in log_text(g)[since:].splitlines() if " DEBUG " not in l]
    raise AssertionError("timed out waiting for %s; non-debug log lines since:\n%s"
                         % (what or pattern, "\n".join(lines[-60:])))


def own_tracebacks(log):
    """Tracebacks in the TuneD log that involve irqtune code.

    The realtime parents load plugins the guest cannot run (scheduler needs
    the perf module): TuneD logs their tracebacks, which are not ours.
    """
    blocks = re.split(r"\n(?=\d{4}-\d\d-\d\d )", log)
    return [b for b in blocks if "Traceback" in b and
            re.search(r"irqtune|plugin_nic_housekeeping|plugin_napi", b)]


def adm(g, *args, timeout=300):
    return g.run(["tuned-adm", *args], timeout=timeout)


def verify(g):
    mark = len(log_text(g))
    rc, _ = adm(g, "verify")
    return rc, wait_log(g, r"verify", mark, what="verify lines")


@pytest.fixture(scope="module")
def tuned(g):
    # Preconditions of the scenario, as booted.
    assert g.read_file("/sys/devices/system/cpu/isolated").strip() == "2-3"
    assert channels(g) == 4, "the NIC must start with 4 channels (no managed_irq isolation)"
    # install-files only: the guest has no compiler and the share is read-only
    sh(g, "make -s -C /irqtune install-files PYTHON=/usr/bin/python3 >/dev/null")
    sh(g, "printf '%s\\n' 'isolated_cores=2-3' 'isolate_managed_irq=N' "
          "'housekeeping_nics=" + g.nic + "' 'housekeeping_channels=housekeeping' "
          "'napi_defer_hard_irqs=100' 'napi_gro_flush_timeout=20us' "
          "'gsim_irqs=nic:" + g.nic + "' 'gsim_delay_us=100' "
          "'gsim_target_intr_rate=1000000' 'gsim_hardirq_percent=70' "
          "> /etc/tuned/realtime-virtual-host-irqtune-variables.conf")
    # No profile at start (the guest would get the recommended one).
    sh(g, "echo > /etc/tuned/active_profile && echo manual > /etc/tuned/profile_mode")
    sh(g, "/lib/systemd/systemd-udevd --daemon")
    g.spawn(["tuned", "--debug", "--log", LOG])
    deadline = time.monotonic() + 300
    # rc 1 with "No current active profile." is an answer too
    while "active profile" not in adm(g, "active", timeout=60)[1]:
        assert time.monotonic() < deadline, "tuned did not come up: " + log_text(g)[-3000:]
        time.sleep(3)
    return g


def apply_profile(g):
    mark = len(log_text(g))
    rc, out = adm(g, "profile", PROFILE)
    assert rc == 0, out + g.last_stderr
    return wait_log(g, r"static tuning from profile '%s' applied" % PROFILE, mark,
                    timeout=600, what="profile applied")


def test_flavour_limits_queues_and_off_restores_them(tuned):
    g = tuned
    before_aff = affinities(g)
    before_napi = napi_sysfs(g)
    before_gsim = gsim_state(g)
    assert set(before_aff.values()) != {HOUSEKEEPING}, before_aff
    print("before: channels 4, queue IRQ affinity %s, napi sysfs %s, gsim %s"
          % (before_aff, before_napi, before_gsim))

    log = apply_profile(g)
    assert channels(g) == 2
    assert affinities(g) == {irq: HOUSEKEEPING for irq in before_aff}
    assert napi_sysfs(g) == (100, 20000)
    if before_gsim is not None:     # the lab kernel carries the GSIM series
        delay, allowed = gsim_state(g)
        assert delay == 100 and set(allowed.values()) == {"1"}, (delay, allowed)
    print("applied: channels %d, queue IRQ affinity %s, napi sysfs %s, gsim %s"
          % (channels(g), affinities(g), napi_sysfs(g), gsim_state(g)))
    # channels were set before the NAPI unit ran
    assert log.index("channels set to combined 2") < log.index("instance napi: %s: set" % g.nic)
    assert not own_tracebacks(log), own_tracebacks(log)

    rc, vlog = verify(g)
    assert "verify: passed: device %s: 'channels combined' = '2'" % g.nic in vlog, vlog
    for irq, name in queue_irqs(g).items():
        assert "verify: passed: device %s: 'IRQ %d (%s) affinity' = '0-1'" \
            % (g.nic, irq, name) in vlog, vlog

    # An IRQ moved onto an isolated CPU behind TuneD's back: shown by verify.
    victim, name = sorted(queue_irqs(g).items())[0]
    assert g.write_file("/proc/irq/%d/smp_affinity_list" % victim, "3") == 0
    rc, vlog = verify(g)
    assert rc != 0
    assert "verify: failed: device %s: 'IRQ %d (%s) affinity' = '3', expected '0-1'" \
        % (g.nic, victim, name) in vlog, vlog
    assert "irqbalance" in vlog

    mark = len(log_text(g))
    rc, out = adm(g, "off")
    assert rc == 0, out
    deadline = time.monotonic() + 120
    while channels(g) != 4 or affinities(g) != before_aff:
        assert time.monotonic() < deadline, (channels(g), affinities(g), before_aff,
                                             log_text(g)[mark:][-3000:])
        time.sleep(2)
    assert napi_sysfs(g) == before_napi
    assert gsim_state(g) == before_gsim
    print("after off: channels %d, queue IRQ affinity %s" % (channels(g), affinities(g)))


def test_driver_rebind_is_reapplied(tuned):
    g = tuned
    apply_profile(g)
    assert channels(g) == 2
    virtio = sh(g, "basename $(readlink -f /sys/class/net/%s/device)" % g.nic).strip()
    mark = len(log_text(g))
    sh(g, "echo %s > /sys/bus/virtio/drivers/virtio_net/unbind && "
          "echo %s > /sys/bus/virtio/drivers/virtio_net/bind" % (virtio, virtio))
    wait_log(g, r"device '%s' added" % g.nic, mark, what="hotplug add after rebind")
    deadline = time.monotonic() + 120
    while channels(g) != 2 or set(affinities(g).values()) != {HOUSEKEEPING}:
        assert time.monotonic() < deadline, (channels(g), affinities(g),
                                             log_text(g)[mark:][-3000:])
        time.sleep(2)
    rc, out = adm(g, "off")
    assert rc == 0, out
    deadline = time.monotonic() + 120
    while channels(g) != 4:
        assert time.monotonic() < deadline, log_text(g)[mark:][-3000:]
        time.sleep(2)
