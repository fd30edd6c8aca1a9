# SPDX-License-Identifier: GPL-2.0-or-later
"""The `irqtune` command's arguments: parsed and checked here, then each
command run by its front end - `status` (and `--watch`) by
irqtune.frontends.status, `verify` by irqtune.frontends.verify_report,
`doctor` by irqtune.frontends.doctor, `metrics` by irqtune.frontends.metrics.

Bad arguments are refused in one line naming the argument, the value and
what is accepted (exit 2); nothing else leaves the command as a traceback
unless IRQTUNE_DEBUG is set in the environment.  Names and values the
commands print go through irqtune.kernel.names.shown (escaped, cut)."""

import argparse
import os
import sys

from .frontends import doctor, metrics, status, verify_report
from .kernel.errors import OptionError
from .kernel.names import LINE_MAX, SHOWN_MAX, shown
from .kernel.netdevs import interfaces
from .kernel.values import parse_number

DEBUG_ENV = "IRQTUNE_DEBUG"
EXIT_BAD_ARGUMENT = 2           # argparse's own
# --watch: below 0.1 s the rates are mostly noise; an hour is the longest
# interval anyone watches for.
INTERVAL_MIN, INTERVAL_MAX, INTERVAL_DEFAULT = 0.1, 3600.0, 1.0
SECONDS_MIN, SECONDS_MAX = 0.5, 60.0      # doctor --seconds
LISTED_DEVICES = 12

# Each numeric option: (command, attribute) -> (option, decimal?, lowest,
# highest or None, what is accepted).  The ranges include their ends.
NUMBERS = {
    ("status", "interval"): ("--interval", True, INTERVAL_MIN, INTERVAL_MAX,
                             "accepted %g to %g (seconds)" % (INTERVAL_MIN, INTERVAL_MAX)),
    ("status", "count"): ("--count", False, 1, None,
                          "accepted 1 or more (without --count: until interrupted)"),
    ("doctor", "seconds"): ("--seconds", True, SECONDS_MIN, SECONDS_MAX,
                            "accepted %g to %g" % (SECONDS_MIN, SECONDS_MAX)),
    ("doctor", "pid"): ("--pid", False, 1, None, "accepted a process id (1 or more)"),
}


class Parser(argparse.ArgumentParser):
    """argparse whose refusals are one line ("irqtune status: ...") and
    exit 2, without the usage block; the values argparse quotes in them
    (whole: a 100 KB --format) shown escaped and cut."""

    def parse_known_args(self, args=None, namespace=None):
        self.given = sys.argv[1:] if args is None else list(args)
        return super().parse_known_args(self.given, namespace)

    def error(self, message):
        for arg in sorted(set(getattr(self, "given", ())), key=len, reverse=True):
            for value in (arg, arg.partition("=")[2]):
                if len(value) > SHOWN_MAX:
                    message = message.replace(repr(value), "'%s'" % shown(value)).replace(value, shown(value))
        self.exit(EXIT_BAD_ARGUMENT, "%s: %s\n" % (self.prog, shown(message, LINE_MAX)))


def unknown_device(names, known):
    """The line refusing the first name that is not a network device here."""
    for name in names:
        if name not in known:
            there = list(known)
            listed = ", ".join(shown(d) for d in there[:LISTED_DEVICES]) + (
                ", ..." if len(there) > LISTED_DEVICES else "")
            return ("device %s: no such device in this network namespace (accepted: %s)"
                    % (shown(name, quote=True), listed or "none"))
    return None


def with_numbers(args):
    """(a copy of args whose numeric options hold their numbers, None), or
    (None, the line refusing the first that is not one)."""
    values = {}
    for (command, attr), (option, decimal, low, high, accepted) in NUMBERS.items():
        text = getattr(args, attr) if args.command == command else None
        if text is not None:
            try:
                values[attr] = parse_number(option, text, low, high, accepted, decimal)
            except OptionError:
                return None, "%s %s: %s" % (option, shown(text, quote=True), accepted)
    return argparse.Namespace(**dict(vars(args), **values)), None


def bad_argument(args):
    """The line refusing a value argparse let through, or None (numbers:
    with_numbers)."""
    if args.command == "status":
        if args.watch and not args.devices:
            return "--watch: accepted one or more devices to watch"
        if not args.watch and (args.interval is not None or args.count is not None):
            return "--interval/--count: accepted only with --watch"
    elif args.command == "doctor":
        if args.service is not None and not args.service:
            return "--service '': accepted a systemd unit name"
    elif args.command == "metrics":
        if args.output == "":
            return ("--output '': accepted a file name (without --output the metrics go to "
                    "standard output)")
    return None


def build_parser():
    parser = Parser(prog="irqtune")
    sub = parser.add_subparsers(dest="command", required=True)
    st = sub.add_parser("status", help="kernel capabilities and per-NAPI values")
    st.add_argument("devices", nargs="*", help="network devices (default: all)")
    st.add_argument("--watch", action="store_true",
                    help="per NAPI: interrupts/s, rx packets/s and the busy-polled share")
    st.add_argument("--interval", default=None,
                    help="seconds between samples (--watch; %g to %g, default %g)"
                         % (INTERVAL_MIN, INTERVAL_MAX, INTERVAL_DEFAULT))
    st.add_argument("--count", default=None,
                    help="samples to print (--watch; 1 or more, default: until ^C)")
    vf = sub.add_parser("verify", help="tuned-adm verify; kernel arguments that wait for "
                        "the next boot are listed, not failed")
    vf.add_argument("--log", default=verify_report.TUNED_LOG,
                    help="TuneD's log file (default: %(default)s)")
    dr = sub.add_parser("doctor", help="why IRQ suspension does or does not engage")
    who = dr.add_mutually_exclusive_group()
    who.add_argument("--service", metavar="UNIT", help="the systemd unit whose processes to check")
    who.add_argument("--pid", help="the process to check")
    dr.add_argument("devices", nargs="*",
                    help="network devices (default: those the process's sockets receive from)")
    dr.add_argument("--seconds", default="3",
                    help="length of the measured window (0.5-60, default 3)")
    dr.add_argument("--json", action="store_true", help="the report as JSON")
    mt = sub.add_parser("metrics", help="per-NAPI metrics in the OpenMetrics text format")
    mt.add_argument("devices", nargs="*", help="network devices (default: all with NAPIs)")
    mt.add_argument("--output", metavar="FILE",
                    help="write FILE atomically (node_exporter's textfile collector) "
                         "instead of standard output (-); a regular file only")
    mt.add_argument("--format", choices=("openmetrics", "prometheus"), default=None,
                    help="OpenMetrics 1.0 (default), or the Prometheus text format "
                         "(default for an --output file named *.prom)")
    return parser


def run(args):
    """The command's exit status, from its front end."""
    if args.command == "verify":
        return verify_report.verify(log=args.log, err=lambda s: print(s, file=sys.stderr))
    if args.command == "doctor":
        return doctor.command(args.service, args.pid, args.devices, args.seconds, args.json)
    if args.command == "metrics":
        return metrics.command(args.devices, args.output, args.format)
    interval = INTERVAL_DEFAULT if args.interval is None else args.interval
    return status.command(args.devices, interval if args.watch else None, args.count)


def checked_run(args):
    """Refuse a bad argument value in one line, else run the command."""
    problem = bad_argument(args)
    parsed = None
    if problem is None:
        parsed, problem = with_numbers(args)
    if problem is None and args.command in ("status", "metrics"):
        problem = unknown_device(args.devices, interfaces())
    if problem:
        print("irqtune %s: %s" % (args.command, problem), file=sys.stderr)
        return EXIT_BAD_ARGUMENT
    return run(parsed)


def main(argv=None):
    command = None
    try:
        try:
            args = build_parser().parse_args(argv)
            command = args.command
            return checked_run(args)
        finally:
            sys.stdout.flush()      # a closed pipe shows here, not at exit
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `irqtune metrics | head`: the reader has gone; say nothing more.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as err:    # the last guard: one line, never a traceback
        if os.environ.get(DEBUG_ENV):
            raise
        print("irqtune%s: unexpected error: %s: %s (%s=1 shows where)"
              % (" " + command if command else "", type(err).__name__, shown(err, LINE_MAX),
                 DEBUG_ENV), file=sys.stderr)
        return 2 if command == "doctor" else 1      # doctor: "could not tell"
