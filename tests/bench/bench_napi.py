# SPDX-License-Identifier: GPL-2.0-or-later
"""Per-NAPI tuning through irqtune vs device-wide sysfs writes, in one run.

Builds 256 veth pairs with 2 rx queues each in a network namespace (GRO on
one end: 512 NAPIs), then times, for the same devices:
  - irqtune: NapiTuner.apply / restore_all (three values on every NAPI,
    including reading the originals), counting netlink round trips;
  - sysfs: writing napi_defer_hard_irqs and gro_flush_timeout of every
    device (reading the old values first, as a restore needs), which is
    what administrators use today - two values, device-wide, no suspension.
Each is timed in 5 alternating rounds and the medians are printed.
Run as root: `make bench`, or from the repository (whose library it
times) PYTHONPATH=. python3 tests/bench/bench_napi.py [pairs]
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time

NS = "irqtune-bench"


def setup(pairs):
    subprocess.run(["ip", "netns", "del", NS], capture_output=True)
    subprocess.run(["ip", "netns", "add", NS], check=True)
    with tempfile.NamedTemporaryFile("w", suffix=".ip") as batch:
        for i in range(pairs):
            batch.write("link add b%d numrxqueues 2 numtxqueues 2 type veth peer bp%d "
                        "numrxqueues 2 numtxqueues 2\n" % (i, i))
            batch.write("link set b%d up\nlink set bp%d up\n" % (i, i))
        batch.flush()
        subprocess.run(["ip", "-n", NS, "-batch", batch.name], check=True)
    for i in range(pairs):
        subprocess.run(["ip", "netns", "exec", NS, "ethtool", "-K", "b%d" % i, "gro", "on"],
                       check=True, capture_output=True)


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def inner(pairs, rounds=5):
    from irqtune.kernel.caps import detect_napi_capabilities
    from irqtune.features.napi import NapiConfig, NapiTuner
    from irqtune.kernel.netlink import genl
    from irqtune.kernel.netlink.netdev import CMD_NAPI_SET

    devices = ["b%d" % i for i in range(pairs)]
    calls = {"n": 0, "set": 0}
    real_exchange = genl.GenlFamily._exchange

    def counting(self, msg_class, cmd, requests, dump=False):
        # every request goes through the one loop; family lookups are setup
        if cmd != genl.CTRL_CMD_GETFAMILY or self.family_id != genl.GENL_ID_CTRL:
            calls["n"] += len(requests)
            calls["set"] += len(requests) if cmd == CMD_NAPI_SET else 0
        return real_exchange(self, msg_class, cmd, requests, dump)

    genl.GenlFamily._exchange = counting
    config = NapiConfig(defer_hard_irqs=100, gro_flush_timeout=20000,
                        irq_suspend_timeout=20000000)
    caps = detect_napi_capabilities()
    saved = {}

    def sysfs_apply():
        for d in devices:
            for name, value in (("napi_defer_hard_irqs", 100), ("gro_flush_timeout", 20000)):
                path = "/sys/class/net/%s/%s" % (d, name)
                with open(path) as f:
                    saved[path] = f.read()
                with open(path, "w") as f:
                    f.write("%d\n" % value)

    def sysfs_restore():
        for path, value in saved.items():
            with open(path, "w") as f:
                f.write(value)

    # Alternate the two, `rounds` times, and take medians: the machine is
    # shared, and one run's ratio moves by 2x with the load.
    runs = {"apply": [], "restore": [], "s_apply": [], "s_restore": []}
    napis = {"n": 0}
    from irqtune.kernel.netlink.netdev import NapiFamily

    def values():
        with NapiFamily() as nl:
            return sorted((n["id"], n.get("defer-hard-irqs"), n.get("gro-flush-timeout"),
                           n.get("irq-suspend-timeout")) for n in nl.all_napis())

    before = values()
    exact = True
    for _ in range(rounds):
        tuner = NapiTuner(config, caps)
        calls["n"] = calls["set"] = 0
        runs["apply"].append(timed(lambda: napis.__setitem__("n", tuner.apply(*devices))))
        apply_calls, apply_sets = calls["n"], calls["set"]
        calls["n"] = 0
        runs["restore"].append(timed(tuner.restore_all))
        restore_calls = calls["n"]
        exact = exact and values() == before      # not timed: proves restore did its work
        runs["s_apply"].append(timed(sysfs_apply))
        runs["s_restore"].append(timed(sysfs_restore))
    t_apply, t_restore, s_apply, s_restore = (
        statistics.median(runs[k]) for k in ("apply", "restore", "s_apply", "s_restore"))
    n = napis["n"]
    print("%d devices, %d NAPIs set; medians of %d rounds" % (pairs, n, rounds))
    print("%-34s %14s %14s" % ("", "irqtune/kernel/netlink", "sysfs"))
    print("%-34s %14s %14s" % ("scope", "per NAPI", "per device"))
    print("%-34s %14d %14d" % ("values per NAPI", 3, 2))
    print("%-34s %14.1f %14.1f" % ("apply, total ms", t_apply * 1e3, s_apply * 1e3))
    print("%-34s %14.1f %14.1f" % ("apply, us per NAPI", t_apply / n * 1e6, s_apply / n * 1e6))
    print("%-34s %14.1f %14.1f" % ("restore, total ms", t_restore * 1e3, s_restore * 1e3))
    print("%-34s %14.1f %14.1f" % ("restore, us per NAPI", t_restore / n * 1e6,
                                   s_restore / n * 1e6))
    print("%-34s %14.2f %14s" % ("netlink requests per NAPI, apply",
                                 apply_calls / n, "-"))
    print("%-34s %14.2f %14s" % ("  of which napi-set", apply_sets / n, "-"))
    print("%-34s %14.2f %14s" % ("netlink requests per NAPI, restore",
                                 restore_calls / n, "-"))
    print("restore put every original back: %s" % ("yes" if exact else "NO"))
    print("apply ratio irqtune/sysfs: %.2fx" % (t_apply / s_apply))
    print("restore ratio irqtune/sysfs: %.2fx" % (t_restore / s_restore))


def main():
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] != "--inner" else 256
    if "--inner" in sys.argv:
        inner(int(sys.argv[-1]))
        return
    setup(pairs)
    try:
        subprocess.run(["ip", "netns", "exec", NS, sys.executable, os.path.abspath(__file__),
                        "--inner", str(pairs)], check=True)
    finally:
        subprocess.run(["ip", "netns", "del", NS])


if __name__ == "__main__":
    main()
