# SPDX-License-Identifier: GPL-2.0-or-later
"""The gsim overlay on the real TuneD daemon inside the lab guest, whose
kernel carries the project's GSIM patches.

The project is installed into the guest's (throw-away, snapshot=on) root
file system from the read-only share with `make install-files`; TuneD runs
there without systemd (dbus is started by the guest init). The tests
check what the kernel's files hold, not what the plugin logs:

- `tuned-adm profile throughput-performance gsim` sets the seed's targets
  in /proc/irq/sw_moderation and allows moderation on exactly the NIC's
  queue interrupts; verify passes for them; `tuned-adm off` restores the
  (deliberately non-default) originals exactly;
- kill -9 of the daemon, a restart and `off` still restore the originals
  (saved in /run/irqtune);
- values from /etc/tuned/gsim-variables.conf reach the kernel, and under a
  paced UDP flood the NIC's interrupt rate with the overlay's target stays
  near the target (numbers printed);
- irqs=name:REGEX selects exactly the virtio-blk queue vectors (the
  guest's stand-in for NVMe queues), irqs=all every MSI-X vector;
- after the NIC's driver is unbound and bound again (new descriptors with
  moderation disallowed), the plugin allows the new vectors again.
"""

import json
import re
import time

import pytest

from support import labvm
from lab.gsimlab import pacer_argv, rx_irqs, write_errno
from support.waiting import wait_for

DIR = "/proc/irq/sw_moderation"
KNOBS = ("delay_us", "target_intr_rate", "hardirq_percent", "update_ms")
VARIABLES = "/etc/tuned/gsim-variables.conf"
LOG = "/tmp/tuned.log"
MARKER = "/run/irqtune-lab-tuned"
PROFILE = ("throughput-performance", "gsim")
# The seed's starting values, the overlay's defaults.
SEED = {"delay_us": 100, "target_intr_rate": 1000000, "hardirq_percent": 70}
# Non-default originals set before each apply, so that a restore to the
# kernel defaults cannot pass for an exact restore.
ORIGINAL_KNOBS = {"delay_us": 0, "target_intr_rate": 123, "hardirq_percent": 3, "update_ms": 7}


class TunedGuest:
    """TuneD in the guest, driven through tuned-adm over the guest agent."""

    def __init__(self, g):
        self.g = g

    def run(self, *argv, timeout=120, check=True):
        rc, out = self.g.run(list(argv), timeout=timeout)
        if check and rc != 0:
            raise AssertionError("guest: %s failed (%s): %s %s"
                                 % (" ".join(argv), rc, out, self.g.last_stderr))
        return rc, out

    def setup(self):
        rc, _ = self.g.run(["test", "-e", MARKER])
        if rc == 0 and self.running():
            return
        self.run("make", "-s", "-C", labvm.GUEST_REPO, "install-files")
        self.run("sh", "-c", "printf '\\n' > /etc/tuned/active_profile; "
                 "echo manual > /etc/tuned/profile_mode; : > %s" % MARKER)
        self.start()

    def running(self):
        rc, _ = self.g.run(["pgrep", "-f", "/usr/sbin/tuned"])
        return rc == 0

    def start(self):
        self.g.spawn(["tuned", "--debug", "--log", LOG], log_path="/tmp/tuned.out")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            rc, out = self.g.run(["tuned-adm", "active"], timeout=60)
            if "active profile" in out:
                return
            time.sleep(1)
        raise AssertionError("TuneD did not come up in the guest: %s"
                             % self.g.read_file("/tmp/tuned.out"))

    def kill9(self):
        self.run("pkill", "-KILL", "-f", "/usr/sbin/tuned")
        for _ in range(50):
            if not self.running():
                break
            time.sleep(0.2)
        self.run("rm", "-f", "/run/tuned/tuned.pid")

    def log(self):
        rc, out = self.g.run(["cat", LOG])
        return out if rc == 0 else ""

    def profile(self, *names):
        mark = len(self.log())
        self.run("tuned-adm", "profile", *names, timeout=300)
        wait_for(lambda: re.search(r"static tuning from profile '[^']*' applied",
                                   self.log()[mark:]),
                 timeout=60, interval=0.5, what="profile %s applied" % " ".join(names))
        return mark

    def off(self):
        self.run("tuned-adm", "off", timeout=300)

    def verify(self):
        mark = len(self.log())
        rc, out = self.run("tuned-adm", "verify", timeout=300, check=False)
        return rc, self.log()[mark:]


@pytest.fixture
def tuned_guest(lab):
    g = lab.get()
    rc, _ = g.run(["test", "-d", DIR])
    if rc != 0:
        pytest.fail("kernel %s has no %s: the lab kernel must carry kernel-patches/gsim"
                    % (g.kernel, DIR))
    t = TunedGuest(g)
    t.setup()
    t.off_quietly = lambda: t.run("tuned-adm", "off", check=False)
    t.off_quietly()
    saved_vars = g.read_file(VARIABLES)
    yield t
    if g.alive():
        t.off_quietly()
        g.write_file(VARIABLES, saved_vars)
        for name, value in (("delay_us", 0), ("target_intr_rate", 0),
                            ("hardirq_percent", 0), ("update_ms", 5)):
            write_errno(g, "%s/%s" % (DIR, name), value)


def interrupts(g):
    """{irq: name} of the numbered lines of the guest's /proc/interrupts."""
    result = {}
    for line in g.read_file("/proc/interrupts").splitlines()[1:]:
        fields = line.split()
        if fields and fields[0].rstrip(":").isdigit():
            result[int(fields[0].rstrip(":"))] = fields[-1]
    return result


def nic_virtio(g):
    rc, out = g.run(["readlink", "-f", "/sys/class/net/%s/device" % g.nic])
    assert rc == 0, g.last_stderr
    return out.strip().rsplit("/", 1)[-1]


def nic_queue_irqs(g):
    dev = nic_virtio(g)
    return sorted(i for i, n in interrupts(g).items()
                  if re.fullmatch(re.escape(dev) + r"-(input|output)\.\d+", n))


def state(g):
    """Every GSIM knob and every per-IRQ switch of the guest."""
    knobs = {k: int(g.read_file("%s/%s" % (DIR, k)).strip()) for k in KNOBS}
    rc, out = g.run(["sh", "-c", 'for f in /proc/irq/[0-9]*/allow_sw_moderation; do '
                     'echo "$f $(cat "$f")"; done'])
    assert rc == 0, g.last_stderr
    switches = {}
    for line in out.splitlines():
        path, value = line.split()
        switches[int(path.split("/")[3])] = int(value)
    return knobs, switches


def set_originals(g):
    """Non-default knobs; one selected NIC queue and one foreign IRQ on."""
    for name, value in ORIGINAL_KNOBS.items():
        assert write_errno(g, "%s/%s" % (DIR, name), value) == "OK", name
    queues = nic_queue_irqs(g)
    foreign = [i for i, n in interrupts(g).items() if i not in queues and "-req." in n]
    on = [queues[1]] + foreign[:1]
    for irq in on:
        assert write_errno(g, "/proc/irq/%d/allow_sw_moderation" % irq, 1) == "OK"
    return state(g)


def expect_applied(g, before, knobs=None):
    knobs = dict(SEED if knobs is None else knobs)
    now_knobs, now_switches = state(g)
    want_knobs = dict(before[0], **knobs)
    assert now_knobs == want_knobs
    queues = nic_queue_irqs(g)
    want_switches = {**before[1], **{i: 1 for i in queues}}
    assert now_switches == want_switches, {
        i: (before[1].get(i), now_switches.get(i)) for i in set(now_switches) | set(want_switches)
        if now_switches.get(i) != want_switches.get(i)}


def test_overlay_sets_targets_and_nic_switches_and_off_restores(tuned_guest):
    t = tuned_guest
    g = t.g
    before = set_originals(g)
    queues = nic_queue_irqs(g)
    assert len(queues) >= 2, interrupts(g)
    t.profile(*PROFILE)
    expect_applied(g, before)
    # the NIC's config vector and the other devices' vectors are left alone
    config = [i for i, n in interrupts(g).items() if n == nic_virtio(g) + "-config"]
    assert config and state(g)[1][config[0]] == before[1][config[0]] == 0
    rc, log = t.verify()
    gsim = [ln for ln in log.splitlines() if "plugin_gsim" in ln or "allow_sw_moderation" in ln]
    assert not [ln for ln in gsim if "verify: failed" in ln], "\n".join(gsim)
    for name, value in SEED.items():
        assert "verify: passed: '%s (%s/%s)' = '%d'" % (name, DIR, name, value) in log, log
    for irq in queues:
        assert "verify: passed: device irq%d (" % irq in log
    assert rc == 0, log
    t.off()
    wait_for(lambda: state(g) == before, timeout=30, interval=0.5,
             what="originals after tuned-adm off")
    rc, out = g.run(["ls", "/run/irqtune"])
    assert "gsim" not in out


def test_kill9_restart_then_off_restores_originals(tuned_guest):
    t = tuned_guest
    g = t.g
    before = set_originals(g)
    t.profile(*PROFILE)
    expect_applied(g, before)
    t.kill9()
    mark = len(t.log())
    t.start()
    wait_for(lambda: "static tuning from profile" in t.log()[mark:], timeout=60, interval=0.5,
             what="profile re-applied")
    expect_applied(g, before)
    t.off()
    wait_for(lambda: state(g) == before, timeout=30, interval=0.5,
             what="originals after restart + off")


def measure(t, pps=20000, seconds=5):
    """Receive interrupts per second of the NIC under a paced one-flow flood."""
    g = t.g
    before = rx_irqs(g)
    t0 = time.monotonic()
    rc, out = g.host_run(pacer_argv(g, pps, seconds, 1), timeout=seconds + 30)
    elapsed = time.monotonic() - t0
    assert rc == 0, out
    report = json.loads(out)
    after = rx_irqs(g)
    assert report["sent"] > 0, report
    return sum(after[i] - before.get(i, 0) for i in after) / max(elapsed, report["seconds"])


def test_flood_rate_stays_near_the_target(tuned_guest):
    t = tuned_guest
    g = t.g
    base = measure(t)
    assert base > 1500, "the flood raised too few interrupts to judge: %.0f/s" % base
    # A target the flood exceeds threefold; the longest delay bounds one
    # source at ~2000/s, so the control loop, not the cap, sets the rate.
    target = max(500, int(base / 3) // 100 * 100)
    wanted = {"delay_us": 500, "target_intr_rate": target, "hardirq_percent": 0,
              "update_ms": 5}
    g.write_file(VARIABLES, "".join("gsim_%s=%d\n" % kv for kv in wanted.items()))
    t.profile(*PROFILE)
    knobs, switches = state(g)
    assert knobs == wanted, "values of %s not applied: %s" % (VARIABLES, knobs)
    assert all(switches[i] for i in nic_queue_irqs(g))
    g.run(["rm", "-f", "/tmp/gsim-stats"])
    g.spawn(["sh", "-c", "sleep 3; cat %s/stats > /tmp/gsim-stats" % DIR])
    moderated = measure(t)
    stats = g.read_file("/tmp/gsim-stats")
    t.off()
    wait_for(lambda: state(g)[0]["delay_us"] == 0, timeout=60, interval=0.5,
             what="moderation off")
    after = measure(t)
    print("\nGSIM through TuneD (throughput-performance gsim), paced one-flow UDP flood:")
    print("  unmoderated            %7.0f irq/s" % base)
    print("  target_intr_rate       %7d irq/s  (delay_us 500, from %s)" % (target, VARIABLES))
    print("  moderated (measured)   %7.0f irq/s  = %.2f x target" % (moderated, moderated / target))
    print("  after tuned-adm off    %7.0f irq/s" % after)
    print("  stats during the moderated flood:\n    " + "\n    ".join(stats.splitlines()))
    assert moderated <= 1.5 * target, (moderated, target)
    assert moderated >= 0.3 * target, (moderated, target)
    assert moderated < base / 1.5 and after > 1.5 * moderated, (base, moderated, after)


def test_name_pattern_and_all_selectors(tuned_guest):
    """irqs=name:REGEX picks the virtio-blk queue vectors (the guest's
    stand-in for NVMe queues) and nothing else; irqs=all picks every
    MSI-X vector; off restores each time."""
    t = tuned_guest
    g = t.g
    before = set_originals(g)
    names = interrupts(g)
    blk = sorted(i for i, n in names.items() if re.fullmatch(r"virtio\d+-req\.\d+", n))
    assert blk, names
    g.write_file(VARIABLES, "gsim_irqs=name:^virtio\\d+-req\\.\\d+$\n")
    t.profile(*PROFILE)
    knobs, switches = state(g)
    assert knobs == dict(before[0], **SEED)
    assert switches == {**before[1], **{i: 1 for i in blk}}, switches
    t.off()
    wait_for(lambda: state(g) == before, timeout=30, interval=0.5,
             what="originals after off (name:)")
    g.write_file(VARIABLES, "gsim_irqs=all\n")
    t.profile(*PROFILE)
    lines = g.read_file("/proc/interrupts").splitlines()[1:]
    msix = sorted(int(ln.split()[0].rstrip(":")) for ln in lines
                  if ln.split() and ln.split()[0].rstrip(":").isdigit() and "MSI" in ln)
    assert set(blk) | set(nic_queue_irqs(g)) < set(msix)
    switches = state(g)[1]
    assert switches == {**before[1], **{i: 1 for i in msix}}, switches
    t.off()
    wait_for(lambda: state(g) == before, timeout=30, interval=0.5,
             what="originals after off (all)")


def test_reprobed_nic_vectors_are_moderated_again(tuned_guest, lab):
    """Driver unbind/bind frees the NIC's vectors and requests them again
    (new descriptors, moderation disallowed): the plugin's rescan allows
    them again; off restores."""
    t = tuned_guest
    g = t.g
    try:
        before = set_originals(g)
        t.profile(*PROFILE)
        expect_applied(g, before)
        dev = nic_virtio(g)
        mark = len(t.log())
        assert write_errno(g, "/sys/bus/virtio/drivers/virtio_net/unbind", dev) == "OK"
        assert write_errno(g, "/sys/bus/virtio/drivers/virtio_net/bind", dev) == "OK"
        g.nic = g.nic_by_mac()
        assert g.nic, "NIC gone after rebind"
        queues = wait_for(lambda: nic_queue_irqs(g), timeout=30, interval=0.5,
                          what="NIC vectors after rebind")
        wait_for(lambda: all(state(g)[1][i] for i in queues), timeout=30, interval=0.5,
                 what="rebound NIC's vectors allowed again by the rescan")
        rescans = re.findall(r"allowed moderation on (\d+) new or reset IRQs", t.log()[mark:])
        print("\nafter rebind the rescan allowed %s IRQs (%d NIC vectors)" % (rescans, len(queues)))
        assert rescans and sum(map(int, rescans)) >= len(queues), rescans
        t.off()
        knobs, switches = state(g)
        assert knobs == before[0]
        # the selected queue that was on before is on again, the others off
        assert {i: switches[i] for i in queues} == {i: before[1].get(i, 0) for i in queues}
    finally:
        lab.close()     # the NIC lost its address: later tests get a fresh guest
