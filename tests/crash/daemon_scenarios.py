# SPDX-License-Identifier: GPL-2.0-or-later
"""Crash points under the real TuneD daemon on veth in a namespace: napi
(napi-set) and nic_housekeeping (channel counts); see run.py.

The daemon runs with IRQTUNE_CRASH_DIR set, driven by tuned-adm (and the
daemon's D-Bus method instance_acquire_devices for a move, which
tuned-adm 2.20 lacks).  A daemon killed at a crash point is started again
as an administrator would after a crash - it applies the profile it
finds active - and then `tuned-adm off` must put back every original.
Values are read back with rawnapi (plain netlink) and `ethtool -l`.
"""

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from support.commands import run
from support.netns import NetNs
from support.rawnapi import RawGenl
from support.tuned_daemon import TunedDaemon
from support.waiting import wait_for

NS = "irqtune-crash-d"
DEVICES = ("ca0", "cb0")
MOVED, THIRD = "ca0", "cc0"
LEDGERS = "/run/irqtune"

NAPI_A = {"defer_hard_irqs": 100, "gro_flush_timeout": 20000, "irq_suspend_timeout": 20000000}
NAPI_B = {"defer_hard_irqs": 200, "gro_flush_timeout": 40000}
NAPI_SECOND = {"defer_hard_irqs": 22, "gro_flush_timeout": 22000}


def section(name, devices, values, plugin=None):
    lines = ["[%s]" % name] + (["type=%s" % plugin] if plugin else [])
    lines += ["devices=%s" % ",".join(devices), "recheck_interval=0"]
    lines += ["%s=%s" % kv for kv in values.items()]
    return "\n".join(lines) + "\n"


def profile(summary, *sections):
    return "[main]\nsummary=%s (crash-point harness)\n\n%s" % (summary, "\n".join(sections))


SCENARIOS = {
    "napi (napi-set)": {
        "plugin": "napi",
        "A": profile("napi A", section("napi", DEVICES, NAPI_A)),
        "B": profile("napi B", section("napi", DEVICES, NAPI_B)),
        "M": profile("napi M", section("napi", DEVICES, NAPI_A),
                     section("napi_second", (THIRD,), NAPI_SECOND, "napi")),
        "second": "napi_second",
    },
    "channels": {
        "plugin": "nic_housekeeping",
        "A": profile("channels A", section("nic_housekeeping", DEVICES,
                                           {"channels": "housekeeping",
                                            "housekeeping_cpus": "0-1"})),
        "B": profile("channels B", section("nic_housekeeping", DEVICES, {"channels": 1,
                                                                        "housekeeping_cpus": "0"})),
        "M": profile("channels M",
                     section("nic_housekeeping", DEVICES, {"channels": "housekeeping",
                                                           "housekeeping_cpus": "0-1"}),
                     section("nic_second", (THIRD,), {"channels": 1, "housekeeping_cpus": "0"},
                             "nic_housekeeping")),
        "second": "nic_second",
    },
}


class CrashDaemon(TunedDaemon):
    """TunedDaemon with the crash-point directory in its environment."""

    def __init__(self, ns, workdir, crash_dir):
        super().__init__(ns, workdir)
        self.env = dict(os.environ, IRQTUNE_CRASH_DIR=crash_dir)

    def start(self):
        assert self.proc is None
        self.proc = self.ns.popen("tuned", "--debug", "--log", self.log_path, env=self.env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        wait_for(lambda: self.proc.poll() is not None or
                 "active profile" in self.adm("active", check=False).stdout,
                 timeout=30, what="tuned on D-Bus")

    def started_after_crash(self):
        """Start again after SIGKILL; wait until the active profile is applied."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink("/run/tuned/tuned.pid")
        mark = self.log_mark()
        self.proc = None
        self.start()
        wait_for(lambda: re.search(r"static tuning from profile '[^']*' applied|"
                                   r"No profile is preset|no profile", self.log_since(mark))
                 or "No current active profile" in self.adm("active", check=False).stdout,
                 timeout=60, what="restarted daemon applied its profile")


def napi_values(ns, devs):
    out = {}
    for dev in devs:
        for pos, napi in enumerate(ns.napis(dev)):
            for attr in ("defer-hard-irqs", "gro-flush-timeout", "irq-suspend-timeout"):
                out["%s NAPI #%d %s" % (dev, pos, attr)] = napi.get(attr)
    return out


def channel_values(ns, devs):
    out = {}
    for dev in devs:
        text = ns.exec("ethtool", "-l", dev).stdout.split("Current hardware settings:")[1]
        for kind in ("RX", "TX"):
            out["%s %s channels" % (dev, kind)] = re.search(r"^%s:\s+(\d+)" % kind, text,
                                                            re.M).group(1)
    return out


def randomise_napis(ns, devs, rng):
    with ns.entered():
        nl = RawGenl()
        try:
            for dev in devs:
                for napi in nl.napis(dev):
                    nl.set(napi["id"], defer_hard_irqs=rng.randint(1, 50),
                           gro_flush_timeout=rng.randint(1000, 9000),
                           irq_suspend_timeout=rng.randint(1, 1000))
        finally:
            nl.close()


def randomise_channels(ns, devs, rng):
    for dev in devs:
        ns.exec("ethtool", "-L", dev, "rx", str(rng.randint(3, 4)), "tx", str(rng.randint(3, 4)))


def run_all(results, args, rng, deadline, crash_loop, crash_dir_class):
    chosen = [name for name in SCENARIOS
              if not args.only or any(o in name for o in args.only)]
    if not chosen:
        return
    ns = NetNs(NS)
    work = tempfile.mkdtemp(prefix="irqtune-crash-tuned-")
    crash = crash_dir_class(os.path.join(work, "crash"))
    tuned = CrashDaemon(ns, work, crash.path)
    try:
        for dev in DEVICES + (THIRD,):
            ns.add_veth(dev, queues=4)
        tuned.setup()
        tuned.start()
        for name in chosen:
            scenario = SCENARIOS[name]
            for key in ("A", "B", "M"):
                tuned.write_profile("irqtune-crash-" + key, scenario[key])
            devs = DEVICES + (THIRD,)
            if scenario["plugin"] == "napi":
                def read(devs=devs):
                    return napi_values(ns, devs)

                def randomise(rng, devs=devs):
                    randomise_napis(ns, devs, rng)
            else:
                def read(devs=devs):
                    return channel_values(ns, devs)

                def randomise(rng, devs=devs):
                    randomise_channels(ns, devs, rng)
            for op in [o for o in ("apply", "switch", "restore", "move")
                       if not args.ops or o in args.ops]:
                one_op(results, name, op, scenario, tuned, crash, read, randomise, rng, args,
                       deadline, crash_loop)
    finally:
        with contextlib.suppress(Exception):
            crash.disarm()
            if tuned.proc is not None and tuned.proc.poll() is None:
                tuned.adm("off", check=False)
        tuned.teardown()
        with contextlib.suppress(FileNotFoundError):
            os.unlink("/run/tuned/tuned.pid")
        ns.delete()
        problems = [line for line in tuned.log().splitlines()
                    if re.search(r"Traceback|failed to initialize plugin|\bBUG\b|"
                                 r"cannot import", line)]
        if problems:
            results.failures.append(("TuneD", "-", "-", {"log": ("clean", problems[0])}))
            print("TuneD's log: %s" % "\n".join(problems[:5]))
        shutil.rmtree(work, ignore_errors=True)


def one_op(results, name, op, scenario, tuned, crash, read, randomise, rng, args, deadline,
           crash_loop):
    def ensure_running():
        if tuned.proc is None or tuned.proc.poll() is not None:
            tuned.started_after_crash()

    def setup(rng):
        crash.reset()
        ensure_running()
        tuned.adm("off", check=False)
        for ledger in ("napi-napi", "napi-napi_second", "nic_housekeeping-nic_housekeeping",
                       "nic_housekeeping-nic_second"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(LEDGERS, ledger + ".json"))
        randomise(rng)

    def prepare():
        if op in ("switch", "restore"):
            tuned.profile("irqtune-crash-A")
        elif op == "move":
            tuned.profile("irqtune-crash-M")

    def run_op(n):
        crash.arm(n)
        mark = tuned.log_mark()
        if op == "apply":
            done = adm_waiting(tuned, mark, "profile", "irqtune-crash-A")
        elif op == "switch":
            done = adm_waiting(tuned, mark, "profile", "irqtune-crash-B")
        elif op == "restore":
            done = run("tuned-adm", "off", check=False, timeout=30)
        else:
            done = run("dbus-send", "--system", "--print-reply", "--dest=com.redhat.tuned",
                       "/Tuned", "com.redhat.tuned.control.instance_acquire_devices",
                       "string:" + MOVED, "string:" + scenario["second"], check=False,
                       timeout=60)
        del done
        # the daemon is dead, or has done the operation; give a kill a moment
        try:
            tuned.proc.wait(1.0)
        except subprocess.TimeoutExpired:
            pass
        killed = tuned.proc.poll() == -signal.SIGKILL
        count = crash.writes()
        crash.disarm()
        if killed:
            tuned.proc = None
        return killed, count

    def recover():
        crash.disarm()
        ensure_running()
        tuned.adm("off", check=False)
        time.sleep(0.2)

    crash_loop(results, name, op, "TuneD", setup, run_op, recover, read, rng, args, deadline,
               prepare)


def adm_waiting(tuned, mark, *argv):
    """tuned-adm profile, then wait until the daemon applied it or died."""
    result = run("tuned-adm", "--async", *argv, check=False, timeout=30)
    wait_for(lambda: tuned.proc.poll() is not None or
             re.search(r"static tuning from profile '[^']*' applied", tuned.log_since(mark)),
             timeout=60, what="profile applied or daemon killed")
    return result
