#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The memory one measurement window (irqtune.shared.measure.epolltrace.record,
what gro_flush_timeout=auto runs in TuneD) costs this process, against a
target that waits as fast as it can.

  tools/measure-rss.py [--seconds N] [spin|ready]

spin:  the target loops in epoll_wait(timeout 0) with nothing ready (the
       probe of issue 39: load, waits, never a busy period);
ready: one fd stays ready, so every wait returns an event and is a busy
       period (the most periods a target can produce).

Prints this process's RSS before the window, its peak during (VmHWM,
reset just before; the figures computed as auto does) and after, and
what the window saw.  Root, tracefs.
Numbers, not a test: run it before and after a change and compare.
"""

import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from irqtune.shared.measure import busy, epolltrace  # noqa: E402

TARGET = r"""
import os, select, sys
ep = select.epoll()
r, w = os.pipe()
if sys.argv[1] == "ready":
    os.write(w, b"x")
ep.register(r, select.EPOLLIN)
print("ready", flush=True)
while True:
    ep.poll(0)
"""


def status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", nargs="?", default="spin", choices=("spin", "ready"))
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    target = subprocess.Popen([sys.executable, "-c", TARGET, args.mode],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert target.stdout.readline().strip() == "ready"
        epolltrace.EpollTrace([target.pid]).close()     # tracefs read, modules imported
        before = status_kib("VmRSS")
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")                                 # resets VmHWM to the current RSS
        started = time.monotonic()
        recorded = epolltrace.record([target.pid], args.seconds)
        figures = busy.figures(recorded.periods, recorded.maxevents)     # as auto does
        took = time.monotonic() - started
        peak, after = status_kib("VmHWM"), status_kib("VmRSS")
    finally:
        target.kill()
        target.wait()
    print("target %s, window %.1f s (took %.1f s): %d busy periods, maxevents %d, "
          "%d samples lost, truncated %s" % (args.mode, recorded.seconds, took,
                                             figures.busy_periods, recorded.maxevents,
                                             recorded.lost, recorded.truncated))
    print("RSS before %.1f MiB, peak during %.1f MiB (+%.1f), after %.1f MiB"
          % (before / 1024, peak / 1024, (peak - before) / 1024, after / 1024))


if __name__ == "__main__":
    main()
