# SPDX-License-Identifier: GPL-2.0-or-later
"""Global Software Interrupt Moderation (kernel-patches/gsim) in the guest.

Interface: the /proc/irq/sw_moderation files (defaults, round trip, ERANGE
on out-of-range writes, EOPNOTSUPP for interrupts GSIM cannot moderate) and
the debugfs statistics (per CPU and per IRQ).

Behaviour, on the guest's virtio-net receive interrupts under a paced UDP
flood from the host:
- the rate drops when moderated and comes back when off (interleaved rounds,
  judged round by round against the unmoderated rounds around them);
- every packet sent during a moderated flood is received, adaptive and fixed;
- interrupts not allowed are never held (per-IRQ hold counts);
- the control loop settles near the rate target (per-interval rates and
  their spread are printed); the first interrupts after an idle gap are
  not held;
- NIC down, driver unbind and CPU hotplug under a fixed-delay flood leave
  no kernel warning (holds counted during the test) and a working NIC.

The lab check file of kernel-patches/gsim-lab delivers an interrupt while it
is held and checks disable_irq()/enable_irq() replay, synchronize_irq() and
an affinity change (test_held_delivery_*), a retrigger during a hold replayed
exactly once and never while disabled, a delivery after moderation was
switched off while a hold was armed (the v2 hard lockup), the holding CPU
going offline without a rebind, and each refusal of allow_sw_moderation.

Switching moderation off (delay_us 0) under a flood that keeps holds armed,
over and over: every packet arrives and the lockup detectors (soft, hard -
the buddy detector under TCG -, RCU stall, hung task) report nothing.

kernel-patches/7.2/gsim-v2-lab puts v2's faults back (kernel
"7.2-gsim+gsim-lab+gsim-v2-lab"): the tests marked "fails on gsim-v2-lab"
below were seen failing there (tests/lab/README.md, "GSIM tests").

test_unpatched_kernel_fails boots the unpatched base kernel and checks that
the interface checks fail there.
"""

import json
import re
import subprocess
import time

import pytest

from support import labvm
from lab.gsimlab import (DIR, STATS, V1_STATS, WRITE_ERRNO, assert_detectors_live, holds_delta,
                         irq_holds, kernel_log, kernel_problems, lockup_reports, pacer_argv,
                         parse_stats, read_stats, rx_irqs, udp_noports, write_errno)

# name: (default, valid values, out-of-range values)
PARAMS = {
    "delay_us": (0, [1, 100, 500, 0], [501, 1000000, -1]),
    "target_intr_rate": (0, [1, 1000000, 50000000, 0], [50000001, 4294967296, -5]),
    "hardirq_percent": (0, [1, 70, 100, 0], [101, -1]),
    "update_ms": (5, [1, 100, 5], [0, 101, -1]),
}
LABTEST = "/sys/kernel/debug/irq_sw_moderation_labtest"

# Switch moderation on (the knob writes of each mode in turn) and off again
# for the given seconds, from inside the guest: one process, so that the
# switches keep their pace however slow the agent's round trips are (on
# the KASAN + lockdep guest one write through the agent took seconds).
# Prints the number of switches to delay_us 0, or the first failed write.
SWITCHER = r"""
import json, os, sys, time
directory, seconds, modes = sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3])

def write(knob, value):
    fd = os.open(os.path.join(directory, knob), os.O_WRONLY)
    try:
        os.write(fd, str(value).encode())
    finally:
        os.close(fd)

switches = 0
end = time.monotonic() + seconds
try:
    while time.monotonic() < end:
        for knob, value in modes[switches % len(modes)]:
            write(knob, value)
        time.sleep(0.3)
        write("delay_us", 0)
        switches += 1
        time.sleep(0.1)
except OSError as e:
    sys.exit("switch %d: %s" % (switches, e))
print(switches)
"""

FLOOD = dict(pps=20000, seconds=4, flows=1)


def read_int(g, path):
    return int(g.read_file(path).strip())


def allow(g, irqs):
    """Let GSIM moderate these IRQs."""
    for irq in irqs:
        assert write_errno(g, "/proc/irq/%d/allow_sw_moderation" % irq, 1) == "OK"


def gsim_violations(g):
    """Everything in the interface that differs from the series; empty when
    the kernel implements it."""
    bad = []
    for name in PARAMS:
        rc, _ = g.run(["test", "-f", "%s/%s" % (DIR, name)])
        if rc != 0:
            bad.append("%s/%s missing" % (DIR, name))
    rc, _ = g.run(["test", "-f", STATS])
    if rc != 0:
        bad.append("%s missing" % STATS)
    for irq in rx_irqs(g):
        rc, _ = g.run(["test", "-f", "/proc/irq/%d/allow_sw_moderation" % irq])
        if rc != 0:
            bad.append("/proc/irq/%d/allow_sw_moderation missing" % irq)
    return bad


def reset(g, irqs=()):
    for name, (default, _, _) in PARAMS.items():
        write_errno(g, "%s/%s" % (DIR, name), default)
    for irq in irqs:
        # Tolerant: a test may have unbound the NIC and freed the vector.
        g.run(["sh", "-c", 'test ! -e "$1" || echo 0 > "$1"', "reset",
               "/proc/irq/%d/allow_sw_moderation" % irq])


def delivered(g, pps=3000, seconds=2, flows=16):
    """Fraction of a paced flood the guest received."""
    before = udp_noports(g)
    rc, out = g.host_run(pacer_argv(g, pps, seconds, flows), timeout=seconds + 30)
    assert rc == 0, out
    sent = json.loads(out)["sent"]
    time.sleep(0.5)
    return (udp_noports(g) - before) / max(sent, 1), sent


def debug_checkers(g):
    """Which of the debug kernel's checkers are live: KASAN (initialised at
    boot) and lockdep (debug_locks still 1: lockdep turns itself off after
    its first report or when it runs out of table space)."""
    rc, out = g.run(["dmesg"])
    kasan = rc == 0 and "KernelAddressSanitizer initialized" in out
    rc, stats = g.run(["cat", "/proc/lockdep_stats"])
    m = re.search(r"debug_locks:\s+(\d+)", stats) if rc == 0 else None
    return {"kasan": kasan, "lockdep": bool(m and m.group(1) == "1")}


def kept_pace(report, pps):
    return report["sent"] >= 0.8 * pps * FLOOD["seconds"]


def flood_rate(g, sample_stats_after=None, pps=None):
    """Flood the guest; returns a dict: rate (receive interrupts per second),
    report (sender's), stats_before and stats (sampled during the flood)
    when sample_stats_after is given, holds (per-IRQ holds during it)."""
    pps = pps or FLOOD["pps"]
    res = {"stats": None, "stats_before": None}
    before = rx_irqs(g)
    holds_before = irq_holds(g)
    if sample_stats_after is not None:
        res["stats_before"] = read_stats(g)
        g.run(["rm", "-f", "/tmp/gsim-stats"])
        g.spawn(["sh", "-c", "sleep %s; cat %s > /tmp/gsim-stats.tmp || cat %s > "
                 "/tmp/gsim-stats.tmp; mv /tmp/gsim-stats.tmp /tmp/gsim-stats"
                 % (sample_stats_after, STATS, V1_STATS)])
    t0 = time.monotonic()
    rc, out = g.host_run(pacer_argv(g, pps, FLOOD["seconds"], FLOOD["flows"]),
                         timeout=FLOOD["seconds"] + 30)
    elapsed = time.monotonic() - t0
    assert rc == 0, out
    report = json.loads(out)
    after = rx_irqs(g)
    assert report["sent"] > 0, report
    delta = sum(after[i] - before.get(i, 0) for i in after)
    if sample_stats_after is not None:
        for _ in range(20):
            rc, out = g.run(["cat", "/tmp/gsim-stats"])
            if rc == 0:
                res["stats"] = out
                break
            time.sleep(0.5)
    res["holds"] = holds_delta(holds_before, irq_holds(g))
    res["rate"] = delta / max(elapsed, report["seconds"])
    res["report"] = report
    res["pps"] = pps
    return res


# Flood rate chosen for each guest, by workdir.
_PPS = {}
# Paced flood rates tried, highest first. The lowest are for the KASAN +
# lockdep guest: it polled without a single interrupt at 2500 pkt/s.
PPS_CANDIDATES = (20000, 10000, 5000, 2500, 1200, 600)


def host_pps(g):
    """Packets/s of the paced flood on this host: of the rates the sender
    keeps, the one raising the most unmoderated receive interrupts. A
    slower host (or a busier one) makes the TCG guest poll longer per
    interrupt, so past some rate more packets mean fewer interrupts; a
    rate that raises few interrupts leaves moderation nothing to show.
    Every candidate is tried: on the KASAN + lockdep kernel the rate rose
    from 0 irq/s only at the lowest ones."""
    key = str(g.workdir)
    if key not in _PPS:
        assert write_errno(g, DIR + "/delay_us", 0) == "OK"
        tried = []
        for pps in PPS_CANDIDATES:
            r = flood_rate(g, pps=pps)
            kept = kept_pace(r["report"], pps)
            tried.append((pps, round(r["rate"]), kept))
        usable = [t for t in tried if t[2]] or [min(tried)]
        best = max(usable, key=lambda t: t[1])
        print("\nflood sized to the host: [pps, unmoderated irq/s, sender kept pace] %s "
              "-> %d pkt/s" % (tried, best[0]))
        _PPS[key] = best[0]
    return _PPS[key]


def measure(g, phases, rounds=3):
    """Run the phases `rounds` times, interleaved (A B C A B C ...): each a
    (writes, sample_stats) pair, the parameter writes [(file, value)] done
    first, then one paced flood sized to the host. Returns the list of
    rounds, each the list of flood_rate() results of its phases."""
    pps = host_pps(g)
    per_round = []
    for _ in range(rounds):
        results = []
        for writes, sample in phases:
            for name, value in writes:
                assert write_errno(g, "%s/%s" % (DIR, name), value) == "OK", (name, value)
            results.append(flood_rate(g, sample_stats_after=2 if sample else None, pps=pps))
        per_round.append(results)
    return per_round


def lossless_pps(g, at_most):
    """The highest candidate rate, at most at_most, of which the guest
    receives every packet unmoderated: a lost packet under moderation
    means something only where none is lost without it."""
    assert write_errno(g, DIR + "/delay_us", 0) == "OK"
    tried = []
    for pps in [p for p in PPS_CANDIDATES if p <= at_most] or [min(PPS_CANDIDATES)]:
        ok, sent = delivered(g, pps=pps, seconds=2, flows=16)
        tried.append((pps, round(ok, 4)))
        if ok == 1:
            print("\nunmoderated, received of the paced flood [pps, fraction] %s -> %d pkt/s"
                  % (tried, pps))
            return pps
    pytest.fail("too noisy to judge: the guest loses packets unmoderated at every rate "
                "[pps, fraction received] %s" % tried)


def judge(per_round, unmoderated, check):
    """Judge each round on its own against the unmoderated floods around
    it (indices `unmoderated`): check(results, lowest, highest unmoderated
    rate) says True (as expected), False (not) or None (undecided: the
    unmoderated rates moved so much that the result lies between them).
    Rounds whose sender fell behind are not judged. Returns (verdicts of
    the decided rounds, why the others were not decided)."""
    verdicts, noise = [], []
    for n, results in enumerate(per_round, 1):
        base = [results[i]["rate"] for i in unmoderated]
        rates = [round(r["rate"]) for r in results]
        if not all(kept_pace(r["report"], r["pps"]) for r in results):
            noise.append("round %d: sender fell behind (sent %s)"
                         % (n, [r["report"]["sent"] for r in results]))
            print(noise[-1])
            continue
        verdict = check(results, min(base), max(base))
        if verdict is None:
            noise.append("round %d: rates %s, unmoderated rates too far apart to judge"
                         % (n, rates))
            print(noise[-1])
            continue
        verdicts.append(bool(verdict))
        print("round %d: rates %s -> %s" % (n, rates, "as expected" if verdict
                                              else "NOT as expected"))
    return verdicts, noise


# Unmoderated rounds further apart than this ratio disagree: the host, not
# the kernel, moved the rate, and a result between them is not judged.
NOISE_RATIO = 1.5


def lower(rate, low, high, factor=1.25):
    """True if rate is clearly below both unmoderated rates, False if it
    is not (at or above the higher one, or between them while they agree),
    None when it lies between unmoderated rates that disagree (host noise)."""
    if rate * factor < low:
        return True
    if rate >= high or high <= NOISE_RATIO * low:
        return False
    return None


def assert_rounds(g, verdicts, noise):
    if g.kernel.endswith("-debug"):
        # Under KASAN and lockdep the emulated guest's unmoderated rates
        # moved tenfold between floods (23 to 293 irq/s): such a run is for
        # the checkers (the fixture fails on any report), not the rates.
        pytest.skip("rates not judged on a KASAN + lockdep kernel (verdicts %s%s)"
                    % (verdicts, "; " + "; ".join(noise) if noise else ""))
    if not verdicts:
        pytest.skip("too noisy to judge: " + "; ".join(noise))
    assert sum(verdicts) * 2 > len(verdicts), \
        "%d of %d judged rounds as expected" % (sum(verdicts), len(verdicts))


# What each guest showed before any test wrote to it, by workdir.
_FIRST_SEEN = {}


def snapshot(g, irqs):
    state = {name: read_int(g, "%s/%s" % (DIR, name)) for name in PARAMS}
    state["allow"] = {irq: read_int(g, "/proc/irq/%d/allow_sw_moderation" % irq)
                      for irq in irqs}
    state["stats"] = read_stats(g)
    return state


@pytest.fixture
def gsim_guest(guest):
    bad = gsim_violations(guest)
    if any(b.startswith(DIR) for b in bad):
        pytest.fail("kernel %s lacks GSIM: %s" % (guest.kernel, bad))
    irqs = sorted(rx_irqs(guest))
    key = str(guest.workdir)
    if key not in _FIRST_SEEN:
        _FIRST_SEEN[key] = snapshot(guest, irqs)
    guest.gsim_first_seen = _FIRST_SEEN[key]
    reset(guest, irqs)
    log_lines = len(kernel_log(guest))
    yield guest
    if guest.alive():
        reset(guest, irqs)
        # Every test is also a probe for the kernel's checkers (KASAN and
        # lockdep on the -debug kernels, the lockup detectors on all).
        assert kernel_problems(guest, since=log_lines) == [], \
            "the kernel reported problems during the test"


def test_interface_files_exist(gsim_guest):
    g = gsim_guest
    assert rx_irqs(g), "no virtio-net receive vectors in /proc/interrupts"
    assert gsim_violations(g) == []


# The KUnit suite of the series' last patch; a built-in suite runs at boot
# and writes its TAP report to the kernel log.
KUNIT_SUITE = "irq_sw_moderation"


def test_control_step_kunit(gsim_guest):
    """The control step's KUnit cases passed at boot, among them the
    fair-share branch (a CPU just under its share keeps its delay), which
    no flood in an emulated guest reaches reliably."""
    g = gsim_guest
    rc, out = g.run(["dmesg"])
    assert rc == 0, g.last_stderr
    m = re.search(r"# %s: pass:(\d+) fail:(\d+) skip:(\d+) total:(\d+)" % KUNIT_SUITE, out)
    assert m, "no KUnit report of %s in the kernel log (CONFIG_KUNIT off?)" % KUNIT_SUITE
    failed = re.findall(r"not ok \d+ (swmod_\w+)", out)
    print(m.group(0), "failed:", failed)
    passed, fails, _, total = map(int, m.groups())
    assert fails == 0 and not failed and passed == total > 0, (m.group(0), failed)


def test_defaults(gsim_guest):
    # As found before any test of this module wrote to the guest.
    first = gsim_guest.gsim_first_seen
    for name, (default, _, _) in PARAMS.items():
        assert first[name] == default, (name, first)
    assert first["allow"] and set(first["allow"].values()) == {0}, first["allow"]
    stats = first["stats"]
    assert stats.startswith("# mode off "), stats
    rows = parse_stats(stats)
    assert [r["cpu"] for r in rows] == list(range(len(rows))) and rows
    assert all(r["delay_ns"] == 0 for r in rows), stats


def test_values_round_trip(gsim_guest):
    g = gsim_guest
    for name, (_, valid, _) in PARAMS.items():
        path = "%s/%s" % (DIR, name)
        for value in valid:
            assert write_errno(g, path, value) == "OK", (name, value)
            assert read_int(g, path) == value, (name, value)
    for irq in rx_irqs(g):
        path = "/proc/irq/%d/allow_sw_moderation" % irq
        for value, expect in (("1", 1), ("0", 0), ("on", 1), ("off", 0)):
            assert write_errno(g, path, value) == "OK", (path, value)
            assert read_int(g, path) == expect, (path, value)


def test_out_of_range_fails_with_erange(gsim_guest):
    g = gsim_guest
    for name, (_, valid, bad_values) in PARAMS.items():
        path = "%s/%s" % (DIR, name)
        keep = valid[1]
        assert write_errno(g, path, keep) == "OK"
        for value in bad_values:
            assert write_errno(g, path, value) == "ERANGE", (name, value)
            # Nothing clamped, nothing changed.
            assert read_int(g, path) == keep, (name, value)
        assert write_errno(g, path, "abc") == "EINVAL", name
    irq = sorted(rx_irqs(g))[0]
    path = "/proc/irq/%d/allow_sw_moderation" % irq
    assert write_errno(g, path, 2) == "ERANGE"
    assert write_errno(g, path, -1) == "ERANGE"
    assert read_int(g, path) == 0


def print_stats(title, stats):
    print("  %s:\n    %s" % (title, "\n    ".join((stats or "<not sampled>").splitlines())))


def test_flood_is_moderated_and_off_restores(gsim_guest):
    g = gsim_guest
    irqs = sorted(rx_irqs(g))
    allow(g, irqs)
    per_round = measure(g, [
        ([("delay_us", 0)], False),
        ([("update_ms", 5), ("target_intr_rate", 1000), ("delay_us", 500)], True),
        ([("delay_us", 0)], False)])
    print("\nGSIM receive interrupt rates [unmoderated, 500us max + target 1000/s, "
          "off again] (%d rx vectors, %d pkt/s)" % (len(irqs), per_round[0][0]["pps"]))
    unmoderated = [round(r[i]["rate"]) for r in per_round for i in (0, 2)]
    if max(unmoderated) < 1000:
        # The KASAN + lockdep guest (600 pkt/s raised 350-490 irq/s):
        # adaptive mode rightly holds nothing under its target.
        pytest.skip("unmoderated the guest raised %s irq/s, under the 1000/s target: "
                    "nothing to moderate on this machine" % unmoderated)

    def check(results, low, high):
        held = sum(results[1]["holds"].get(i, 0) for i in irqs)
        if not held:
            print("no hold during the moderated flood")
            return False
        return lower(results[1]["rate"], low, high)
    verdicts, noise = judge(per_round, [0, 2], check)
    print_stats("stats during the last moderated flood", per_round[-1][1]["stats"])
    assert_rounds(g, verdicts, noise)


def test_every_packet_received_while_moderated(gsim_guest):
    """Nothing is lost while moderated: every UDP packet of a paced flood is
    counted by the guest's stack (Udp NoPorts), adaptive and fixed mode, and
    interrupts were really held meanwhile. An unmoderated flood of the same
    size is the control: the test says so when the guest loses packets
    without moderation too."""
    g = gsim_guest
    irqs = sorted(rx_irqs(g))
    allow(g, irqs)
    pps = lossless_pps(g, min(host_pps(g), 5000))
    # A target well below any host's load: the adaptive loop must hold
    # (on the KASAN + lockdep kernel the flood raised under 1000 irq/s).
    modes = [("unmoderated", [("delay_us", 0)]),
             ("adaptive", [("target_intr_rate", 200), ("hardirq_percent", 0),
                           ("delay_us", 500)]),
             ("fixed", [("target_intr_rate", 0), ("hardirq_percent", 0), ("delay_us", 500)])]
    seen = {}
    for name, writes in modes:
        for knob, value in writes:
            assert write_errno(g, "%s/%s" % (DIR, knob), value) == "OK"
        holds = irq_holds(g)
        ok, sent = delivered(g, pps=pps, seconds=3, flows=16)
        held = sum(holds_delta(holds, irq_holds(g)).get(i, 0) for i in irqs)
        seen[name] = (ok, sent, held)
        print("%-11s received %.4f of %d packets, %d holds" % (name, ok, sent, held))
    if seen["unmoderated"][0] < 1:
        pytest.fail("too noisy to judge: the guest lost %d of %d packets unmoderated"
                    % (round((1 - seen["unmoderated"][0]) * seen["unmoderated"][1]),
                       seen["unmoderated"][1]))
    for name in ("adaptive", "fixed"):
        ok, sent, held = seen[name]
        assert held > 0, "%s: nothing was held, the check proves nothing" % name
        assert ok == 1, "%s: %d of %d packets lost" % (name, round((1 - ok) * sent), sent)


def labtest(g, line):
    rc, _ = g.run(["test", "-e", LABTEST])
    if rc != 0:
        pytest.fail("kernel %s has no %s (kernel-patches/gsim-lab)" % (g.kernel, LABTEST))
    assert write_errno(g, LABTEST, line) == "OK", line
    result = g.read_file(LABTEST).strip()
    print(result)
    return result


def wait_for_lockup_reports(g, seconds=120):
    """After a hang: the detectors' reports, waiting for the soft lockup
    threshold (2 * watchdog_thresh) and the RCU stall timeout to pass."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not lockup_reports(g):
        time.sleep(2)
    return lockup_reports(g)


def fixed_delay(g, irq):
    allow(g, [irq])
    for knob, value in (("target_intr_rate", 0), ("hardirq_percent", 0), ("delay_us", 500)):
        assert write_errno(g, "%s/%s" % (DIR, knob), value) == "OK"


def held_rx_labtest(g, check):
    """The lab module's `check` on the first rx vector, held by a fixed
    delay: it answers "ok ..." and the kernel reports nothing."""
    irq = sorted(rx_irqs(g))[0]
    fixed_delay(g, irq)
    result = labtest(g, "%s %d" % (check, irq))
    assert result.startswith("ok "), result
    assert kernel_problems(g) == []


def test_held_delivery_replayed_after_enable_irq(gsim_guest):
    """An interrupt delivered while held, then disable_irq(): after the hold
    ended, enable_irq() must run its handler (IRQS_PENDING kept)."""
    held_rx_labtest(gsim_guest, "replay")


def test_held_delivery_replayed_exactly_once(gsim_guest):
    """A retrigger through the irqchip lands during a hold, then
    disable_irq(): the handler never runs while disabled and runs exactly
    once after enable_irq(). Fails on gsim-v2-lab (stale IRQS_REPLAY:
    enable_irq() replays nothing)."""
    held_rx_labtest(gsim_guest, "replayonce")


def test_switch_off_while_held_then_delivery(gsim_guest, lab):
    """A hold armed (the release timers paused by the lab file), delay_us
    set to 0 through procfs, then a delivery on the holding CPU: it must
    return, the handler run once, nothing stay held; switching off drains
    every hold, so none is left at the delivery. Fails on gsim-v2-lab: the
    delivery spins in hard interrupt context for the hold's own
    IRQD_IRQ_INPROGRESS, and the lockup detectors report the CPUs."""
    g = gsim_guest
    assert_detectors_live(g)
    irq = sorted(rx_irqs(g))[0]
    fixed_delay(g, irq)
    try:
        held = labtest(g, "hold %d" % irq)
        assert held.startswith("ok "), held
        assert write_errno(g, DIR + "/delay_us", 0) == "OK"
        try:
            rc, out = g.run(["python3", "-c", WRITE_ERRNO, LABTEST, "deliver %d" % irq],
                            timeout=60)
        except labvm.LabError as e:
            rc, out = None, str(e)
        if rc != 0 or out.strip() != "OK":
            reports = wait_for_lockup_reports(g)
            pytest.fail("the delivery after switching off did not return (%s %s); "
                        "lockup reports:\n  %s" % (rc, out.strip(), "\n  ".join(reports)))
        result = g.read_file(LABTEST).strip()
        print(result)
        assert result.startswith("ok "), result
        assert "held at delivery 0" in result, "a hold survived delay_us 0: " + result
        assert lockup_reports(g) == []
        assert kernel_problems(g) == []
    except BaseException:
        lab.close()                     # a hung guest is no use to later tests
        raise


def test_switch_off_under_flood_delivers_everything(gsim_guest, lab):
    """A flood keeps holds armed while delay_us goes 500 -> 0 over and over
    (fixed and adaptive mode in turn): every packet arrives, holds happened,
    and the lockup detectors and the kernel log report nothing. The race of
    v2 (a message in flight at the switch) is too narrow for TCG to hit
    reliably: this test is the load-side check, the one above the exact one."""
    g = gsim_guest
    assert_detectors_live(g)
    irqs = sorted(rx_irqs(g))
    allow(g, irqs)
    pps = lossless_pps(g, min(host_pps(g), 3000))
    seconds = 10
    modes = [[("target_intr_rate", 0), ("hardirq_percent", 0), ("delay_us", 500)],
             [("target_intr_rate", 200), ("hardirq_percent", 0), ("delay_us", 500)]]
    before = udp_noports(g)
    holds = irq_holds(g)
    try:
        flood = subprocess.Popen(g.netns.exec_argv(pacer_argv(g, pps, seconds, 16)),
                                 stdout=subprocess.PIPE, text=True)
        try:
            rc, out = g.run(["python3", "-c", SWITCHER, DIR, str(seconds - 2),
                             json.dumps(modes)], timeout=seconds + 60)
        finally:
            report, _ = flood.communicate(timeout=seconds + 60)
        assert rc == 0, "switching failed: %s %s" % (out, g.last_stderr)
        switches = int(out)
        sent = json.loads(report)["sent"]
        time.sleep(1)
        received = udp_noports(g) - before
        held = sum(holds_delta(holds, irq_holds(g)).get(i, 0) for i in irqs)
        print("%d switches to delay_us 0 during a %d pkt/s flood: %d holds, "
              "%d of %d packets received" % (switches, pps, held, received, sent))
        assert switches >= 5, "too few switches to judge"
        assert held > 0, "nothing was held, the check proves nothing"
        assert received == sent, "%d of %d packets lost" % (sent - received, sent)
        assert lockup_reports(g) == []
        assert kernel_problems(g) == []
    except BaseException:
        lab.close()
        raise


def test_holding_cpu_offline_without_rebind(gsim_guest, lab):
    """The CPU holding an interrupt goes offline, nothing is rebound: the
    hold ends before its interrupts move (not held, not in progress, not
    masked), a delivery runs the handler on the new target and the NIC
    receives everything. Fails on gsim-v2-lab's hotplug fault (holds left
    to the migrated timer)."""
    g = gsim_guest
    # A receive vector already effective on a CPU that can go offline (not
    # 0): on x86 without interrupt remapping an affinity write takes effect
    # only at the vector's next interrupt, so writing one is no way to pick.
    effective = {irq: int(g.read_file("/proc/irq/%d/effective_affinity_list" % irq)
                          .strip().split(",")[0].split("-")[0]) for irq in rx_irqs(g)}
    movable = sorted(irq for irq, c in effective.items() if c != 0)
    if not movable:
        pytest.fail("no receive vector outside CPU 0: %s" % effective)
    irq = movable[0]
    cpu = effective[irq]
    path = "/proc/irq/%d/smp_affinity_list" % irq
    online = "/sys/devices/system/cpu/cpu%d/online" % cpu
    old = g.read_file(path).strip()
    fixed_delay(g, irq)
    try:
        held = labtest(g, "hold %d" % irq)
        assert held.startswith("ok ") and (" on cpu %d:" % cpu) in held, held
        assert write_errno(g, online, 0) == "OK"
        state = labtest(g, "state %d" % irq)
        assert " held 0 " in state and "inprogress 0" in state and "masked 0" in state, state
        result = labtest(g, "deliver %d" % irq)
        assert result.startswith("ok "), result
        ok, sent = delivered(g)
        print("CPU %d offline, no rebind: %.4f of %d packets received" % (cpu, ok, sent))
        assert ok == 1, "%d of %d packets lost" % (round((1 - ok) * sent), sent)
        assert kernel_problems(g) == []
    except BaseException:
        lab.close()
        raise
    finally:
        if g.alive():
            g.run(["sh", "-c", 'echo 1 > "$1"', "online", online])
            g.run(["sh", "-c", 'echo "$1" > "$2"', "aff", old, path])


def test_each_refusal_reached(gsim_guest):
    """The lab file gives a live NIC vector one property at a time that
    makes it ineligible - a threaded handler, no per-vector mask,
    IRQF_NO_SUSPEND -: allow_sw_moderation=1 fails with EOPNOTSUPP and
    stays 0 for each; taken back, the same vector is accepted. Fails on
    gsim-v2-lab's fault that drops these refusals."""
    g = gsim_guest
    irq = sorted(rx_irqs(g))[0]
    path = "/proc/irq/%d/allow_sw_moderation" % irq
    try:
        for what in ("threaded", "nomask", "nosuspend"):
            assert write_errno(g, path, 0) == "OK"
            assert labtest(g, "refuse %d %s" % (irq, what)).startswith("ok "), what
            assert write_errno(g, path, 1) == "EOPNOTSUPP", what
            assert read_int(g, path) == 0, what
    finally:
        labtest(g, "refuse %d none" % irq)
    assert write_errno(g, path, 1) == "OK"
    assert read_int(g, path) == 1


def test_held_delivery_waited_for_by_synchronize_irq(gsim_guest):
    """synchronize_irq() returns only after the handler of a delivery held
    back by moderation has run."""
    g = gsim_guest
    irq = sorted(rx_irqs(g))[0]
    fixed_delay(g, irq)
    result = labtest(g, "sync %d" % irq)
    assert result.startswith("ok "), result


def test_held_delivery_runs_on_new_target_cpu(gsim_guest):
    """Affinity changed while held: the held delivery runs on the new CPU."""
    g = gsim_guest
    irq = sorted(rx_irqs(g))[0]
    old = g.read_file("/proc/irq/%d/smp_affinity_list" % irq).strip()
    eff = int(g.read_file("/proc/irq/%d/effective_affinity_list" % irq).strip().split(",")[0]
              .split("-")[0])
    to = 1 if eff == 0 else 0           # housekeeping CPUs of the default boot
    fixed_delay(g, irq)
    try:
        result = labtest(g, "affinity %d %d" % (irq, to))
    finally:
        g.write_file("/proc/irq/%d/smp_affinity_list" % irq, old)
    assert result.startswith("ok "), result


def test_ineligible_irqs_refused(gsim_guest):
    """allow_sw_moderation=1 fails with EOPNOTSUPP on interrupts GSIM cannot
    moderate (IO-APIC timer, serial port, level triggered ACPI) and stays 0;
    the NIC's MSI-X vectors are accepted."""
    g = gsim_guest
    names = {}
    for line in g.read_file("/proc/interrupts").splitlines()[1:]:
        fields = line.split()
        if fields and fields[0].rstrip(":").isdigit():
            names[int(fields[0].rstrip(":"))] = " ".join(fields[-2:])
    ineligible = [irq for irq, name in names.items()
                  if name.endswith(("timer", "ttyS0", "acpi"))]
    print("ineligible candidates: %s" % {i: names[i] for i in ineligible})
    assert ineligible, names
    for irq in ineligible:
        path = "/proc/irq/%d/allow_sw_moderation" % irq
        assert write_errno(g, path, 1) == "EOPNOTSUPP", (irq, names[irq])
        assert read_int(g, path) == 0, (irq, names[irq])
    allow(g, sorted(rx_irqs(g)))


def test_irqs_not_allowed_are_never_held(gsim_guest):
    """Only input.0 allowed; a fixed-delay flood over all queues holds it and
    no other interrupt (per-IRQ hold counts)."""
    g = gsim_guest
    queues = g.nic_queue_interrupts()
    allowed = queues["input.0"][0]
    allow(g, [allowed])
    for knob, value in (("target_intr_rate", 0), ("hardirq_percent", 0), ("delay_us", 200)):
        assert write_errno(g, "%s/%s" % (DIR, knob), value) == "OK"
    before = irq_holds(g)
    fired_before = rx_irqs(g)
    for _ in range(3):
        delivered(g, pps=min(host_pps(g), 8000), seconds=2, flows=32)
    after = rx_irqs(g)
    after = {i: after[i] - fired_before.get(i, 0) for i in after}
    delta = holds_delta(before, irq_holds(g))
    fired = {name: sum(counts) for name, (irq, counts) in g.nic_queue_interrupts().items()}
    print("holds during the flood by IRQ: %s; rx interrupts during it %s; queues %s"
          % ({i: d for i, d in delta.items() if d}, after, fired))
    assert delta.get(allowed, 0) > 0, delta
    assert {i: d for i, d in delta.items() if i != allowed and d} == {}, delta
    assert len([i for i in after if after[i] > 0]) > 1, \
        "the flood reached one queue only: %s" % after


def interval_rates(g, irqs, seconds, step=0.5):
    """Spawn a guest sampler of the summed interrupt counts of irqs every
    `step` seconds; returns a function giving the per-interval rates."""
    script = ("import time,sys\n"
              "irqs=set(sys.argv[1].split(','))\n"
              "def total():\n"
              "  n=0\n"
              "  for l in open('/proc/interrupts'):\n"
              "    f=l.split()\n"
              "    if f and f[0].rstrip(':') in irqs:\n"
              "      n+=sum(int(x) for x in f[1:] if x.isdigit())\n"
              "  return n\n"
              "out=open('/tmp/gsim-rates.tmp','w')\n"
              "t=time.monotonic()\n"
              "for i in range(int(%f/%f)+1):\n"
              "  out.write('%%f %%d\\n'%%(time.monotonic()-t,total())); out.flush()\n"
              "  time.sleep(%f)\n"
              "out.close()\n"
              "import os; os.rename('/tmp/gsim-rates.tmp','/tmp/gsim-rates')\n"
              % (seconds, step, step))
    g.run(["rm", "-f", "/tmp/gsim-rates"])
    g.spawn(["python3", "-c", script, ",".join(str(i) for i in irqs)])

    def rates():
        for _ in range(40):
            rc, out = g.run(["cat", "/tmp/gsim-rates"])
            if rc == 0:
                break
            time.sleep(0.5)
        assert rc == 0, "sampler did not finish"
        pts = [tuple(float(x) for x in ln.split()) for ln in out.splitlines()]
        return [(b[1] - a[1]) / (b[0] - a[0]) for a, b in zip(pts, pts[1:])]
    return rates


# The adaptive loop's dead band (patch 5): it lengthens the delay over the
# target, shortens it only below 7/8 of it, and keeps it in between.
DEAD_BAND_LOW = 7 / 8


def test_control_loop_settles_at_target(gsim_guest):
    """Constant offered load above the target: after a second the rate
    stays in the loop's dead band [7/8 target, target], give or take 10 %
    of measurement, step to step spread printed."""
    g = gsim_guest
    irqs = sorted(rx_irqs(g))
    allow(g, irqs)
    # The target lies between what this host's flood raises unmoderated
    # and the floor a fixed 500us delay (the most the loop may use) leaves,
    # both measured here, interleaved.
    # Up to three rounds: the first whose two unmoderated floods agree.
    seen = []
    for _ in range(3):
        (unmod, floor, unmod2), = measure(g, [
            ([("delay_us", 0)], False),
            ([("target_intr_rate", 0), ("hardirq_percent", 0), ("delay_us", 500)], False),
            ([("delay_us", 0)], False)], rounds=1)
        low, high = sorted((unmod["rate"], unmod2["rate"]))
        floor = floor["rate"]
        seen.append("unmoderated %d and %d irq/s, fixed 500us %d irq/s" % (low, high, floor))
        print("\n" + seen[-1])
        if high <= NOISE_RATIO * low:
            break
    else:
        pytest.skip("too noisy to judge: " + "; ".join(seen))
    # Room for a judgement: with the unmoderated rate at least twice the
    # floor, the floor is at most 2/3 of the target and the unmoderated
    # rate at least 4/3, both outside what the assertion below accepts.
    if low < 2 * floor:
        pytest.skip("too slow to judge: %s leave no room for a target between them" % seen[-1])
    base = low
    target = int(floor + 0.5 * (low - floor))
    for knob, value in (("update_ms", 20), ("hardirq_percent", 0),
                        ("target_intr_rate", target), ("delay_us", 500)):
        assert write_errno(g, "%s/%s" % (DIR, knob), value) == "OK"
    seconds = 8
    rates = interval_rates(g, irqs, seconds)
    # The flood outlasts the sampler (its start and the TCG guest's sleeps
    # are late), so that no sample covers the time after the flood.
    rc, out = g.host_run(pacer_argv(g, host_pps(g), seconds + 2, 1), timeout=seconds + 32)
    assert rc == 0, out
    samples = rates()[2:-1]             # settle 1 s, drop the tail
    mean = sum(samples) / len(samples)
    steps = [abs(b - a) for a, b in zip(samples, samples[1:])]
    print("\nunmoderated %d irq/s, target %d/s: per 0.5 s %s" % (
        base, target, [round(x) for x in samples]))
    print("mean %.0f (%.1f %% of target), step-to-step spread mean %.0f max %.0f irq/s"
          % (mean, 100 * mean / target, sum(steps) / len(steps), max(steps)))
    print_stats("stats", read_stats(g))
    # A loop that does not adapt stays at the unmoderated rate or at the
    # floor: outside this.
    assert 0.9 * DEAD_BAND_LOW * target <= mean <= 1.1 * target, (mean, target)
    assert max(steps) <= 0.5 * target, "oscillates: %s" % samples


def test_first_interrupts_after_idle_not_delayed(gsim_guest):
    """After a flood drove the delay up and an idle second, sparse packets
    are not held: the delay decays with elapsed time, not per interrupt."""
    g = gsim_guest
    irqs = sorted(rx_irqs(g))
    allow(g, irqs)
    for knob, value in (("update_ms", 5), ("hardirq_percent", 0),
                        ("target_intr_rate", 1000), ("delay_us", 500)):
        assert write_errno(g, "%s/%s" % (DIR, knob), value) == "OK"
    r = flood_rate(g, sample_stats_after=2, pps=host_pps(g))
    if not any(row["delay_ns"] > 0 for row in parse_stats(r["stats"])):
        if r["rate"] < 1000:
            pytest.skip("the flood raised %d irq/s, under the 1000/s target: no delay "
                        "to decay on this machine" % r["rate"])
        pytest.fail("%d irq/s over a 1000/s target and no delay: %s" % (r["rate"], r["stats"]))
    time.sleep(1)
    before = irq_holds(g)
    rc, out = g.host_run(pacer_argv(g, 20, 1, 1), timeout=30)
    assert rc == 0, out
    held = {i: d for i, d in holds_delta(before, irq_holds(g)).items() if d}
    print("\nafter the flood (%d holds) and 1 s idle, %s sparse packets: holds %s"
          % (sum(r["holds"].values()), json.loads(out)["sent"], held))
    assert held == {}


def test_hardirq_target_moderates(gsim_guest):
    """hardirq_percent alone (no rate target) drives the delays: with a
    1 % target the CPU taking the flood's interrupts is over it."""
    g = gsim_guest
    allow(g, sorted(rx_irqs(g)))
    per_round = measure(g, [
        ([("delay_us", 0)], False),
        ([("target_intr_rate", 0), ("hardirq_percent", 1), ("delay_us", 500)], True),
        ([("delay_us", 0), ("hardirq_percent", 0)], False)])

    def check(results, low, high):
        rows = parse_stats(results[1]["stats"])
        held = sum(results[1]["holds"].values())
        if not results[1]["stats"].startswith("# mode adaptive ") or not held or \
                not any(r["hardirq_pm"] > 10 for r in rows):
            print("holds %d, stats %s" % (held, results[1]["stats"]))
            return False
        return lower(results[1]["rate"], low, high)
    verdicts, noise = judge(per_round, [0, 2], check)
    print_stats("stats, hardirq_percent 1", per_round[-1][1]["stats"])
    assert_rounds(g, verdicts, noise)


def test_adaptive_idle_below_target_and_fixed_mode(gsim_guest):
    """Adaptive mode leaves interrupts alone while the load is under the
    target; with both targets 0 delay_us is a fixed delay: holds happen."""
    g = gsim_guest
    irqs = sorted(rx_irqs(g))
    allow(g, irqs)
    per_round = measure(g, [
        ([("delay_us", 0)], False),
        ([("target_intr_rate", 50000000), ("delay_us", 500)], True),
        ([("target_intr_rate", 0), ("delay_us", 200)], True),
        ([("delay_us", 0)], False)])

    def check(results, low, high):
        # Exact evidence first: no hold at all while under the target,
        # holds with the fixed delay; then the fixed delay's rate.
        high_held = sum(results[1]["holds"].get(i, 0) for i in irqs)
        fixed_held = sum(results[2]["holds"].get(i, 0) for i in irqs)
        if high_held or not fixed_held or \
                not results[2]["stats"].startswith("# mode fixed delay_us 200 "):
            print("holds under the target %d, with the fixed delay %d" % (high_held, fixed_held))
            return False
        return lower(results[2]["rate"], low, high)
    verdicts, noise = judge(per_round, [0, 3], check)
    print_stats("stats, target above the load", per_round[-1][1]["stats"])
    print_stats("stats, fixed delay", per_round[-1][2]["stats"])
    assert_rounds(g, verdicts, noise)


def test_down_unbind_hotplug_under_fixed_delay_flood(gsim_guest, lab):
    """NIC down, CPU offline/online and driver unbind/bind (free_irq(),
    synchronize_irq() in the down paths) while interrupts are held under a
    fixed-delay flood: holds happen during the test, no kernel warning,
    and the NIC receives everything afterwards."""
    g = gsim_guest
    irqs = sorted(rx_irqs(g))
    try:
        allow(g, irqs)
        for knob, value in (("target_intr_rate", 0), ("hardirq_percent", 0), ("delay_us", 500)):
            assert write_errno(g, "%s/%s" % (DIR, knob), value) == "OK"
        ok, sent = delivered(g)
        print("\nfixed 500us, before: %.1f%% of %d packets received" % (100 * ok, sent))
        assert ok > 0.9
        # The flood sized to the host: a rate the guest cannot keep up with
        # keeps NAPI polling and raises (and holds) no interrupt at all.
        pps = host_pps(g)
        holds = irq_holds(g)
        flood = subprocess.Popen(g.netns.exec_argv(pacer_argv(g, pps, 14, 16)),
                                 stdout=subprocess.PIPE, text=True)
        try:
            time.sleep(2)
            held_before_down = sum(holds_delta(holds, irq_holds(g)).values())
            g.run(["ip", "link", "set", g.nic, "down"], check=True)
            g.run(["ip", "link", "set", g.nic, "up"], check=True)
            for cpu in (1, 2, 3):
                path = "/sys/devices/system/cpu/cpu%d/online" % cpu
                assert write_errno(g, path, 0) == "OK", cpu
                time.sleep(0.5)
                assert write_errno(g, path, 1) == "OK", cpu
                time.sleep(0.5)
            held_during = sum(holds_delta(holds, irq_holds(g)).values())
            dev = g.nic_device()
            assert write_errno(g, "/sys/bus/virtio/drivers/virtio_net/unbind", dev) == "OK"
            time.sleep(0.5)
            assert write_errno(g, "/sys/bus/virtio/drivers/virtio_net/bind", dev) == "OK"
        finally:
            out, _ = flood.communicate(timeout=60)
        print("holds during the %d pkt/s flood: %d before NIC down, %d before unbind"
              % (pps, held_before_down, held_during))
        print_stats("stats after the flood", read_stats(g))
        assert held_before_down > 0 and held_during > held_before_down

        # The rebound NIC lost its address; give it back and allow the new vectors.
        g.nic = g.nic_by_mac()
        if g.nic is None:
            rc, log = g.run(["dmesg"])
            pytest.fail("NIC gone after rebind; interfaces %s; kernel log ends:\n%s"
                        % (g.run(["ls", "/sys/class/net"])[1].split(),
                           "\n".join(log.splitlines()[-40:])))
        g.run(["ip", "addr", "add", "%s/%d" % (labvm.GUEST_IP, labvm.PREFIX), "dev", g.nic],
              check=True)
        g.run(["ip", "link", "set", g.nic, "up"], check=True)
        new_irqs = sorted(rx_irqs(g))
        # free_irq() cleared the permission: the new vectors start not allowed.
        assert all(read_int(g, "/proc/irq/%d/allow_sw_moderation" % i) == 0 for i in new_irqs)
        allow(g, new_irqs)
        time.sleep(2)
        ok, sent = delivered(g)
        print("fixed 500us, after down/hotplug/rebind: %.1f%% of %d packets received"
              % (100 * ok, sent))
        assert ok > 0.9
        assert write_errno(g, DIR + "/delay_us", 0) == "OK"
        ok, sent = delivered(g)
        print("moderation off: %.1f%% of %d packets received" % (100 * ok, sent))
        assert ok > 0.9
        assert kernel_problems(g) == []
        checkers = debug_checkers(g)
        print("debug checkers live at the end: %s" % checkers)
        if g.kernel.endswith("-debug"):
            # A debug run proves nothing when a checker is off.
            assert checkers == {"kasan": True, "lockdep": True}, checkers
    finally:
        # The NIC was re-created: later tests get a freshly booted guest.
        lab.close()


def unpatched_kernel():
    """The unpatched kernel of the guest kernel's generation: "7.2-base"
    beside "7.2-lab", "base" beside the 6.12 kernels."""
    return "7.2-base" if labvm.generation(labvm.default_kernel()) == 7 else "base"


def test_unpatched_kernel_fails(lab):
    """The base kernel, same boot: the interface checks above must fail."""
    base = unpatched_kernel()
    if labvm.missing(base):
        pytest.skip("unpatched base kernel not built: %s" % labvm.missing(base))
    g = lab.get(kernel=base)
    bad = gsim_violations(g)
    print("base kernel deviations:\n  " + "\n  ".join(bad))
    assert "%s/delay_us missing" % DIR in bad
    assert any("allow_sw_moderation missing" in b for b in bad)
