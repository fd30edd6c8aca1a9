#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Boot a lab guest, show a few facts (or run commands), power it off.

    boot.py [--kernel lab|base] [--cmdline "..."] [--check-log] [-- argv...]

--check-log: exit 1 if the kernel log has a report (labvm.KERNEL_REPORT)
by the time the commands ran; check-series.sh boots each prefix so.
"""
import argparse
import logging
import sys
import time

from support import labvm     # tests/ on PYTHONPATH (lab.mk)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", default="lab")
    ap.add_argument("--cmdline", default=labvm.DEFAULT_ISOLATION)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--check-log", action="store_true",
                    help="fail on a warning, oops, KASAN or lockdep report in the kernel log")
    ap.add_argument("argv", nargs="*", help="command to run in the guest")
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    t0 = time.monotonic()
    g = labvm.Guest(kernel=a.kernel, cmdline=a.cmdline)
    try:
        g.start()
        print("booted %s in %.1fs (workdir %s)" % (a.kernel, g.boot_seconds, g.workdir))
        cmds = [a.argv] if a.argv else [
            ["uname", "-a"], ["cat", "/proc/cmdline"],
            ["cat", "/sys/devices/system/cpu/isolated"],
            ["ethtool", "-l", g.nic or "eth0"],
            ["sh", "-c", "grep -E 'CPU|virtio' /proc/interrupts"],
            ["sh", "-c", "for i in $(grep -E 'virtio[0-9]+-(input|output)' /proc/interrupts"
             " | cut -d: -f1); do echo \"irq $i: $(cat /proc/irq/$i/smp_affinity_list)"
             " eff $(cat /proc/irq/$i/effective_affinity_list)\"; done"],
        ]
        rc = 0
        for argv in cmds:
            print("$ " + " ".join(argv))
            rc, out = g.run(argv, timeout=a.timeout)
            sys.stdout.write(out + g.last_stderr)
            if rc:
                print("(exit %d)" % rc)
        if a.check_log:
            _, log = g.run(["dmesg"], timeout=a.timeout)
            lines = log.splitlines()
            reports = [lines[n] for n in labvm.kernel_reports(lines)]
            print("kernel log: %d lines, %d reports%s" % (len(lines), len(reports),
                  "".join("\n  " + ln for ln in reports)))
            rc = rc or (1 if reports else 0)
    finally:
        g.shutdown()
    print("total %.1fs" % (time.monotonic() - t0))
    return rc


if __name__ == "__main__":
    sys.exit(main())
