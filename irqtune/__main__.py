# SPDX-License-Identifier: GPL-2.0-or-later
"""`irqtune status` (also `python3 -m irqtune status`): what the kernel offers
and what each NAPI holds; `--watch` shows suspension at work.  `irqtune
verify`: TuneD's verify with arguments waiting for a reboot told apart
(irqtune.verify_report)."""

import argparse
import sys

from .caps import detect_napi_capabilities
from .errors import IrqtuneError
from .kfs import KFS
from .netlink.netdev import NapiFamily
from . import verify_report

COLUMNS = ("defer-hard-irqs", "gro-flush-timeout", "irq-suspend-timeout", "threaded", "irq")


def status(devices):
    caps = detect_napi_capabilities()
    print("netdev family: %s, napi-set: %s, settable: %s"
          % (caps.netdev_family, caps.napi_set, ", ".join(sorted(caps.settable)) or "-"))
    print("kernel: %s" % caps.kernel.describe())
    for line in caps.lacking():
        print("missing: %s" % line)
    if not caps.napi_get:
        return 0
    devices = devices or KFS.listdir(KFS.sys_path("class/net"))
    print("%-12s %6s " % ("device", "napi") + " ".join("%20s" % c for c in COLUMNS))
    with NapiFamily() as nl:
        for dev in devices:
            try:
                ifindex = KFS.read_int(KFS.net_path(dev, "ifindex"))
            except (OSError, ValueError):
                print("%s: no such device" % dev, file=sys.stderr)
                continue
            for napi in nl.napis(ifindex):
                print("%-12s %6d " % (dev, napi["id"])
                      + " ".join("%20s" % napi.get(c, "-") for c in COLUMNS))
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="irqtune")
    sub = parser.add_subparsers(dest="command", required=True)
    st = sub.add_parser("status", help="kernel capabilities and per-NAPI values")
    st.add_argument("devices", nargs="*", help="network devices (default: all)")
    st.add_argument("--watch", action="store_true",
                    help="per NAPI: interrupts/s, rx packets/s and the busy-polled share")
    st.add_argument("--interval", type=float, default=1.0, help="seconds between samples (--watch)")
    st.add_argument("--count", type=int, default=None, help="samples to print (--watch; default: until ^C)")
    vf = sub.add_parser("verify", help="tuned-adm verify; kernel arguments that wait for "
                        "the next boot are listed, not failed")
    vf.add_argument("--log", default=verify_report.TUNED_LOG,
                    help="TuneD's log file (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.command == "verify":
        return verify_report.verify(log=args.log,
                                    err=lambda s: print(s, file=sys.stderr))
    try:
        if args.watch:
            if not args.devices:
                parser.error("--watch needs the devices to watch")
            from .watch import watch
            try:
                watch(args.devices, args.interval, args.count, out=lambda s: print(s, flush=True))
            except KeyboardInterrupt:
                pass
            return 0
        return status(args.devices)
    except IrqtuneError as err:
        print("irqtune: %s" % err, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
