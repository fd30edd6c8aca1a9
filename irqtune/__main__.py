# SPDX-License-Identifier: GPL-2.0-or-later
"""`irqtune status` (also `python3 -m irqtune status`): what the kernel offers
and what each NAPI holds; `--watch` shows suspension at work.  `irqtune
verify`: TuneD's verify with arguments waiting for a reboot told apart
(irqtune.verify_report).  `irqtune doctor` names the broken link when
suspension does not engage; `irqtune metrics` prints per-NAPI metrics for
Prometheus and PCP."""

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


def doctor(args):
    """Exit 0 engaged, 1 not engaged, 2 could not tell (bad input included)."""
    import json
    from .doctor import EXIT_CANNOT_TELL, diagnose, format_text, resolve_targets
    if not 0.5 <= args.seconds <= 60:
        print("irqtune doctor: --seconds %g: accepted 0.5 to 60" % args.seconds, file=sys.stderr)
        return EXIT_CANNOT_TELL
    try:
        pids = resolve_targets(args.service, args.pid)
        report = diagnose(pids, args.devices, args.seconds, unit=args.service)
    except IrqtuneError as err:
        print("irqtune doctor: %s" % err, file=sys.stderr)
        return EXIT_CANNOT_TELL
    if args.json:
        print(json.dumps(report.as_dict(), indent=1, sort_keys=True))
    else:
        print(format_text(report))
    return report.verdict()[0]


def metrics(args):
    from .metrics import collect, render, write_atomically
    try:
        fmt = args.format or ("prometheus" if (args.output or "").endswith(".prom")
                              else "openmetrics")
        text = render(collect(args.devices), openmetrics=fmt == "openmetrics")
        if args.output:
            write_atomically(args.output, text)
        else:
            sys.stdout.write(text)
    except (IrqtuneError, OSError) as err:
        print("irqtune metrics: %s" % err, file=sys.stderr)
        return 1
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
    dr = sub.add_parser("doctor", help="why IRQ suspension does or does not engage")
    who = dr.add_mutually_exclusive_group()
    who.add_argument("--service", metavar="UNIT", help="the systemd unit whose processes to check")
    who.add_argument("--pid", type=int, help="the process to check")
    dr.add_argument("devices", nargs="*",
                    help="network devices (default: those the process's sockets receive from)")
    dr.add_argument("--seconds", type=float, default=3.0,
                    help="length of the measured window (0.5-60, default 3)")
    dr.add_argument("--json", action="store_true", help="the report as JSON")
    mt = sub.add_parser("metrics", help="per-NAPI metrics in the OpenMetrics text format")
    mt.add_argument("devices", nargs="*", help="network devices (default: all with NAPIs)")
    mt.add_argument("--output", metavar="FILE",
                    help="write FILE atomically (node_exporter's textfile collector) "
                         "instead of standard output")
    mt.add_argument("--format", choices=("openmetrics", "prometheus"), default=None,
                    help="OpenMetrics 1.0 (default), or the Prometheus text format "
                         "(default for an --output file named *.prom)")
    args = parser.parse_args(argv)
    if args.command == "verify":
        return verify_report.verify(log=args.log,
                                    err=lambda s: print(s, file=sys.stderr))
    if args.command == "doctor":
        return doctor(args)
    if args.command == "metrics":
        return metrics(args)
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
