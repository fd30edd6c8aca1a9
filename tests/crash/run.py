#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The crash-point harness: every tuner killed after each kernel write of
each operation, then restarted and switched off; every original must be
back exactly (issue 25).  `make crash-check` runs it as root (by hand,
from the repository: PYTHONPATH=.:tests:bench python3 tests/crash/run.py;
the worker processes inherit the path; bench/ for the reader rawnapi uses).

For each tuner and operation (apply, profile switch, restore, instance
move) it runs the operation with irqtune.kernel.crashpoint armed at N = 1, 2, ...
- SIGKILL right after the Nth kernel write - from originals drawn at
random (seeded; the seed is printed, --seed repeats a run), until a run
finishes without being killed: N - 1 crash points, the whole operation's
writes.  After each run it starts the process again as a restarted daemon
would (the active profile applied from the ledger), switches tuning off,
and reads every value back without the library: rawnapi's netlink reader
and `ethtool -l` for veth, plain reads of the fixture files.

Where: the real TuneD daemon (2.20 on the Debian host) on veth in a
network namespace for napi-set and channel counts; the library in a
subprocess (tests/crash/worker.py) for what the daemon cannot reach here -
the napi sysfs fallback (a kernel without napi-set, on real veth sysfs
files), and fixtures where no kernel object exists on the host: GSIM
(patched kernels), queue IRQ affinity (veth has no IRQs, netdevsim is not
built), the opt-in's systemd root, zero-copy rx's ring/feature/RSS/rule
settings.

Bounds: each process 60 s, at most --max-points crash points per tuner
and operation, --time-limit for the whole run (points not run are
printed); namespaces and TuneD's files are cleaned up in every case.
Exit status 1 when any value was lost or a bound was hit.
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from support import hostguard

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"
WORKER = os.path.join(HERE, "worker.py")
NS = "irqtune-crash"
PROC_TIMEOUT = 60

# operation: (steps before arming, the operation, recovery after a restart)
LIB_OPS = {
    "apply": ([], ["apply:A"], ["apply:A", "off:A"]),
    "switch": (["apply:A"], ["off:A", "apply:B"], ["apply:B", "off:B"]),
    "restore": (["apply:A"], ["off:A"], ["apply:A", "off:A"]),
    "move": (["apply:M"], ["move"], ["apply:M", "off:M"]),
}


def cpulist(cpus):
    """The kernel's text of a CPU list: ranges of consecutive CPUs ("0-1,3")."""
    runs = []
    for cpu in cpus:
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join("%d" % a if a == b else "%d-%d" % (a, b) for a, b in runs)


def diff(before, after):
    return {k: (before.get(k), after.get(k)) for k in sorted(set(before) | set(after))
            if before.get(k) != after.get(k)}


# -- library scenarios: fixtures and their readers -----------------------------

class Fixture:
    """A scenario's kernel: set up with random originals, read back
    without the library."""

    prefix = ()         # how the worker is started (namespace)
    ops = ("apply", "switch", "restore", "move")

    def __init__(self, work):
        self.work = work
        self.kernel = os.path.join(work, "kernel")

    def reset(self, rng):
        shutil.rmtree(self.kernel, ignore_errors=True)
        os.makedirs(self.kernel)
        self.randomise(rng)

    def close(self):
        pass


class NapiSysfs(Fixture):
    """Real veth sysfs files in a namespace (napi_defer_hard_irqs,
    gro_flush_timeout, threaded)."""

    name = "napi-sysfs"
    prefix = ("ip", "netns", "exec", NS)
    FILES = ("napi_defer_hard_irqs", "gro_flush_timeout", "threaded")

    def __init__(self, work):
        super().__init__(work)
        from support.netns import NetNs
        self.ns = NetNs(NS)
        for dev in ("sa0", "sb0"):
            self.ns.add_veth(dev, queues=2)

    def paths(self):
        return ["/sys/class/net/%s/%s" % (d, f) for d in ("sa0", "sb0") for f in self.FILES]

    def randomise(self, rng):
        argv = []
        for path in self.paths():
            name = path.rsplit("/", 1)[1]
            value = {"napi_defer_hard_irqs": rng.randint(1, 50),
                     "gro_flush_timeout": rng.randint(1000, 9000), "threaded": 0}[name]
            argv += [path, str(value)]
        self.ns.exec(PYTHON, "-c", "import sys\nfor p, v in zip(sys.argv[1::2], sys.argv[2::2]):"
                     "\n    open(p, 'w').write(v)", *argv)

    def read(self):
        values = self.ns.exec("cat", *self.paths()).stdout.split()
        return dict(zip(self.paths(), values))

    def close(self):
        self.ns.delete()


class Affinity(Fixture):
    """Queue IRQ affinity in a procfs fixture of a virtio NIC (the layout
    of support/fakes/interrupts.py), channel counts in a fixture driver."""

    name = "channels+affinity"
    IRQS = (24, 25, 26, 27, 28)

    def randomise(self, rng):
        from support.fakes.interrupts import INTERRUPTS
        proc, sys_root = os.path.join(self.kernel, "proc"), os.path.join(self.kernel, "sys")
        os.makedirs(proc)
        with open(os.path.join(proc, "interrupts"), "w") as f:
            f.write(INTERRUPTS)
        for irq in self.IRQS:
            os.makedirs(os.path.join(proc, "irq", str(irq)))
            cpus = sorted(rng.sample(range(4), rng.randint(1, 4)))
            with open(os.path.join(proc, "irq", str(irq), "smp_affinity_list"), "w") as f:
                f.write(cpulist(cpus) + "\n")
        cpu = os.path.join(sys_root, "devices/system/cpu")
        os.makedirs(cpu)
        for name, text in (("online", "0-3"), ("isolated", "2-3"), ("nohz_full", "2-3")):
            with open(os.path.join(cpu, name), "w") as f:
                f.write(text + "\n")
        dev = os.path.join(sys_root, "devices/pci0000:00/0000:00:03.0/virtio1")
        os.makedirs(os.path.join(dev, "net/eth0"))
        os.symlink("../../../virtio1", os.path.join(dev, "net/eth0/device"))
        os.makedirs(os.path.join(sys_root, "class/net"))
        os.symlink("../../devices/pci0000:00/0000:00:03.0/virtio1/net/eth0",
                   os.path.join(sys_root, "class/net/eth0"))
        os.makedirs(os.path.join(os.path.dirname(dev), "msi_irqs"))
        for irq in self.IRQS:
            open(os.path.join(os.path.dirname(dev), "msi_irqs", str(irq)), "w").close()
        with open(os.path.join(self.kernel, "channels.json"), "w") as f:
            json.dump({"max": 4, "count": rng.randint(3, 4)}, f)

    def read(self):
        out = {}
        for irq in self.IRQS:
            with open(os.path.join(self.kernel, "proc/irq", str(irq), "smp_affinity_list")) as f:
                out["IRQ %d affinity" % irq] = f.read().strip()
        with open(os.path.join(self.kernel, "channels.json")) as f:
            out["combined channels"] = json.load(f)["count"]
        return out


class Gsim(Fixture):
    """The latest GSIM shape's files (support/fakes/gsim.py's FakeKernel
    builds them; the library writes them through KernelFs)."""

    name = "gsim"
    ops = ("apply", "switch", "restore")     # system-wide: no devices to move

    def randomise(self, rng):
        from irqtune.features import gsim
        from support.fakes.gsim import FakeKernel
        knobs = {"delay_us": rng.randint(0, 500), "target_intr_rate": rng.randint(0, 50000000),
                 "hardirq_percent": rng.randint(0, 100), "update_ms": rng.randint(1, 100)}
        os.rmdir(self.kernel)
        kernel = FakeKernel(self.kernel, gsim.SHAPE_LATEST, knobs=knobs)
        for irq in kernel.irqs:
            kernel._set_switch(irq, rng.random() < 0.3)

    def read(self):
        out = {}
        knobs = os.path.join(self.kernel, "proc/irq/sw_moderation")
        for name in sorted(os.listdir(knobs)):
            if name != "stats":
                with open(os.path.join(knobs, name)) as f:
                    out[name] = f.read().strip()
        irq_dir = os.path.join(self.kernel, "proc/irq")
        for irq in sorted(os.listdir(irq_dir)):
            path = os.path.join(irq_dir, irq, "allow_sw_moderation")
            if os.path.exists(path):
                with open(path) as f:
                    out["IRQ %s allow_sw_moderation" % irq] = f.read().strip()
        return out


class OptIn(Fixture):
    """A systemd root (etc/systemd/system, run/systemd/system) in which
    some services have an administrator's drop-in directory already."""

    name = "service opt-in"
    ops = ("apply", "switch", "restore")

    def randomise(self, rng):
        from worker import OPTIN_LIB
        root = os.path.join(self.kernel, "root")
        os.makedirs(os.path.join(root, "etc/systemd/system"))
        os.makedirs(os.path.join(root, "run/systemd/system"))
        lib = os.path.join(root, OPTIN_LIB.lstrip("/"))
        os.makedirs(os.path.dirname(lib))
        with open(lib, "wb") as f:
            f.write(b"\x7fELF")
        for unit in ("a.service", "b.service", "c.service"):
            if rng.random() < 0.5:
                d = os.path.join(root, "etc/systemd/system", unit + ".d")
                os.makedirs(d)
                with open(os.path.join(d, "10-admin.conf"), "w") as f:
                    f.write("[Service]\nNice=%d\n" % rng.randint(-5, 5))

    def read(self):
        base = os.path.join(self.kernel, "root/etc/systemd/system")
        out = {}
        for dirpath, dirnames, filenames in os.walk(base):
            for d in dirnames:
                out[os.path.relpath(os.path.join(dirpath, d), base) + "/"] = "dir"
            for name in filenames:
                with open(os.path.join(dirpath, name)) as f:
                    out[os.path.relpath(os.path.join(dirpath, name), base)] = f.read()
        return out


class ZeroCopy(Fixture):
    """A NIC with combined channels, header split, hds-thresh,
    rx-ntuple-filter, an RSS table and a rule table, as a JSON file
    (worker.FileNic)."""

    name = "zero-copy rx"

    def randomise(self, rng):
        count = rng.randint(2, 4)
        indir = None if rng.random() < 0.5 else [rng.randrange(count) for _ in range(16)]
        wanted = ["rx-gro"] + (["rx-ntuple-filter"] if rng.random() < 0.5 else [])
        with open(os.path.join(self.kernel, "nic.json"), "w") as f:
            json.dump({"max": 8, "count": count, "split_config": rng.choice((0, 1, 2)),
                       "hds": rng.randint(0, 4096), "wanted": wanted, "indir": indir,
                       "rules": {}}, f)

    def read(self):
        with open(os.path.join(self.kernel, "nic.json")) as f:
            state = json.load(f)
        state["wanted"] = ",".join(sorted(state["wanted"]))
        state["rules"] = ",".join(sorted(state["rules"]))
        return {k: json.dumps(v) for k, v in state.items()}


LIB_FIXTURES = (NapiSysfs, Affinity, Gsim, OptIn, ZeroCopy)


# -- the loop ----------------------------------------------------------------

class Results:
    def __init__(self):
        self.rows = []
        self.failures = []
        self.bounded = []

    def add(self, tuner, op, where, points, writes, checked, lost, seconds):
        self.rows.append((tuner, op, where, points, writes, checked, lost, seconds))

    def print(self):
        print("\n%-18s %-8s %-7s %6s %6s %8s %5s %6s" % ("tuner", "op", "via", "points", "writes",
                                                       "checked", "lost", "secs"))
        for row in self.rows:
            print("%-18s %-8s %-7s %6d %6s %8d %5d %6.1f" % row)
        total = sum(r[3] for r in self.rows), sum(r[6] for r in self.rows)
        print("crash points tried: %d, values lost: %d" % total)


def crash_loop(results, tuner, op, where, setup, run_op, recover, read, rng, args, deadline,
               prepare=lambda: None):
    """N = 1, 2, ... until the operation completes; see the module.
    setup(rng) draws the originals, read() takes them, prepare() brings
    the state the operation starts from (a profile applied), run_op(n)
    -> (killed, writes), recover() restarts and switches off."""
    start = time.monotonic()
    points = checked = lost = 0
    writes = "?"
    for n in range(1, args.max_points + 2):
        if time.monotonic() > deadline:
            results.bounded.append("%s %s: time limit at N=%d" % (tuner, op, n))
            break
        if n > args.max_points:
            results.bounded.append("%s %s: more than %d writes" % (tuner, op, args.max_points))
            break
        setup(rng)
        before = read()
        prepare()
        killed, count = run_op(n)
        recover()
        after = read()
        differ = diff(before, after)
        checked += len(before)
        lost += len(differ)
        if killed:
            points += 1
        else:
            writes = count
        if differ:
            results.failures.append((tuner, op, n if killed else "none (completed)", differ))
            print("LOST: %s %s crash after write %s: %s" % (
                tuner, op, n if killed else "- (completed)",
                "; ".join("%s was %r, now %r" % (k, b, a) for k, (b, a) in differ.items())),
                flush=True)
        if not killed:
            if not count:
                # an operation without a kernel write tests nothing: a
                # plugin that did not load, a profile that tunes nothing
                results.failures.append((tuner, op, "-", {"kernel writes": (">0", 0)}))
                print("NO WRITES: %s %s made no kernel write; nothing was tested"
                      % (tuner, op), flush=True)
            break
    results.add(tuner, op, where, points, writes, checked, lost, time.monotonic() - start)


class CrashDir:
    def __init__(self, path):
        self.path = path
        os.makedirs(path, exist_ok=True)

    def arm(self, n):
        self.reset()
        with open(os.path.join(self.path, "after"), "w") as f:
            f.write("%d\n" % n)

    def disarm(self):
        try:
            os.unlink(os.path.join(self.path, "after"))
        except FileNotFoundError:
            pass

    def reset(self):
        self.disarm()
        with open(os.path.join(self.path, "writes"), "w"):
            pass

    def writes(self):
        with open(os.path.join(self.path, "writes")) as f:
            return sum(1 for _ in f)


def library_scenarios(results, args, rng, deadline):
    for cls in LIB_FIXTURES:
        if args.only and not any(o in cls.name for o in args.only):
            continue
        work = tempfile.mkdtemp(prefix="irqtune-crash-")
        crash = CrashDir(os.path.join(work, "crash"))
        fixture = cls(work)
        scenario = {"channels+affinity": "affinity", "gsim": "gsim", "service opt-in": "optin",
                    "zero-copy rx": "zerocopy-fixture"}.get(cls.name, cls.name)
        env = dict(os.environ, IRQTUNE_CRASH_DIR=crash.path)
        try:
            for op in cls.ops:
                if args.ops and op not in args.ops:
                    continue
                pre, steps, recovery = LIB_OPS[op]

                def worker(argv, n=None):
                    proc = subprocess.run(
                        list(fixture.prefix) + [PYTHON, WORKER, scenario, work] + argv,
                        env=env, capture_output=True, text=True, timeout=PROC_TIMEOUT)
                    if proc.returncode not in (0, -signal.SIGKILL) or \
                            (n is None and proc.returncode):
                        raise SystemExit("%s %s: worker %s failed (%d):\n%s" % (
                            cls.name, op, argv, proc.returncode, proc.stderr[-3000:]))
                    return proc.returncode == -signal.SIGKILL

                def setup(rng):
                    crash.reset()
                    shutil.rmtree(os.path.join(work, "run"), ignore_errors=True)
                    fixture.reset(rng)

                def run_op(n):
                    killed = worker(pre + ["arm:%d" % n] + steps, n)
                    count = crash.writes()
                    crash.disarm()
                    return killed, count

                crash_loop(results, cls.name, op, "library", setup, run_op,
                           lambda: worker(recovery), fixture.read, rng, args, deadline)
        finally:
            fixture.close()
            shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--max-points", type=int, default=40)
    parser.add_argument("--time-limit", type=float, default=600.0)
    parser.add_argument("--only", nargs="*", help="tuners whose name contains one of these")
    parser.add_argument("--ops", nargs="*", help="operations (apply switch restore move)")
    parser.add_argument("--no-daemon", action="store_true", help="library scenarios only")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("the crash-point harness needs root (namespaces, TuneD)")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 32)
    print("crash-point harness: seed %d (repeat with --seed %d)" % (seed, seed), flush=True)
    rng = random.Random(seed)
    start = time.monotonic()
    deadline = start + args.time_limit
    results = Results()
    # The daemon scenarios need TuneD's D-Bus name and write /etc/tuned:
    # the host's daemon is stopped and put back as the test suites do it.
    hostguard.terminate_as_interrupt()
    hostguard.recover()
    hostguard.save()
    try:
        if not args.no_daemon:
            import daemon_scenarios
            daemon_scenarios.run_all(results, args, rng, deadline, crash_loop, CrashDir)
        library_scenarios(results, args, rng, deadline)
    finally:
        hostguard.restore()
        results.print()
        print("harness run time: %.0f s" % (time.monotonic() - start))
    for line in results.bounded:
        print("BOUND HIT: " + line)
    if results.failures or results.bounded:
        print("FAILED: %d runs lost values (seed %d)" % (len(results.failures), seed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
