# SPDX-License-Identifier: GPL-2.0-or-later
"""irqtune-bench: reproduce the IRQ suspension series' memcached table on
your own NIC.

  irqtune-bench run --server root@SERVER --client root@CLIENT --server-addr ADDR [options]
      the eleven modes at five loads up to the server's saturation, each
      mode set through irqtune's latency-suspend profile and read back
      before every run; writes NAME.{json,txt,md} and NAME-{p99,insn}.png
  irqtune-bench report RUN.json         table, verdicts and plots again
  irqtune-bench compare A.json [B.json] p99 spread per cell, side by side
                                        (one file: its two topologies)
  irqtune-bench server-state NIC        the read-back (run by the bench on the server)
  irqtune-bench count                   instructions per CPU (run by the bench on the server)

Bad arguments are refused in one line naming the argument, the value and
what is accepted (exit 2); a failed bench exits 1.
"""

import argparse
import json
import math
import sys
import time
from pathlib import Path

from .modes import MODES, PROFILE, parse_modes

EXIT_BAD_ARGUMENT = 2
MCLOAD = "/usr/libexec/irqtune-bench/mcload"
SHIM = "/usr/lib64/irqtune-bench/epoll_slice.so"


class Parser(argparse.ArgumentParser):
    """argparse whose refusals are one line and exit 2, without the usage block."""

    def error(self, message):
        self.exit(EXIT_BAD_ARGUMENT, "%s: %s\n" % (self.prog, message))


def add_run_options(ap, out_default):
    """The options every testbed's run takes (the lab's script too)."""
    ap.add_argument("--modes", default=",".join(MODES), help="comma separated, of: " + " ".join(MODES))
    ap.add_argument("--loads", default="", help="offered req/s, comma separated (default: found "
                    "from the server's saturation point and --fractions)")
    ap.add_argument("--fractions", default="0.1,0.3,0.55,0.8,1.0",
                    help="offered loads as fractions of the saturation point")
    ap.add_argument("--repeats", type=int, default=3, help="runs per cell, interleaved rounds")
    ap.add_argument("--seconds", type=float, default=3.0, help="measurement window per run")
    ap.add_argument("--warmup", type=float, default=0.5, help="load before the window opens")
    ap.add_argument("--conns", type=int, default=1)
    ap.add_argument("--memcached-cpu", type=int, default=2, help="CPU memcached is pinned to")
    ap.add_argument("--service", default="memcached", help="systemd unit of the memcached server")
    ap.add_argument("--probe-start", type=int, default=1000)
    ap.add_argument("--probe-max", type=int, default=2000000)
    ap.add_argument("--probe-seconds", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=1, help="of the round orders")
    ap.add_argument("--recommend-seconds", type=float, default=5.0,
                    help="the doctor's window for the recommend mode (0.5-60)")
    ap.add_argument("--quick", action="store_true",
                    help="a short run: 1 repeat, 2 s windows, 3 loads (checks the machinery, not the modes)")
    ap.add_argument("--out", default=out_default, help="directory of the results")


def _numbers(text, kind):
    return [kind(x) for x in text.split(",") if x.strip()]


def bad_run_argument(args):
    """The line refusing a run option, or None; applies --quick."""
    if args.quick:
        args.repeats, args.seconds = 1, 2.0
        if args.fractions == "0.1,0.3,0.55,0.8,1.0":
            args.fractions = "0.2,0.6,1.0"
    try:
        parse_modes(args.modes)
    except ValueError as err:
        return str(err)
    try:
        loads = _numbers(args.loads, int)
    except ValueError:
        return "--loads %s: accepted comma-separated whole numbers of requests/s" % args.loads
    if any(not 1 <= x <= 2000000 for x in loads):
        return "--loads %s: accepted 1 to 2000000 requests/s each" % args.loads
    try:
        fractions = _numbers(args.fractions, float)
    except ValueError:
        fractions = [float("nan")]
    if not fractions or any(not (math.isfinite(x) and 0 < x <= 2) for x in fractions):
        return "--fractions %s: accepted comma-separated numbers above 0, at most 2" % args.fractions
    if not 1 <= args.repeats <= 100:
        return "--repeats %d: accepted 1 to 100" % args.repeats
    for name, value, low, high in (("--seconds", args.seconds, 0.5, 120), ("--warmup", args.warmup, 0, 30),
                                   ("--probe-seconds", args.probe_seconds, 0.5, 120),
                                   ("--recommend-seconds", args.recommend_seconds, 0.5, 60)):
        if not (math.isfinite(value) and low <= value <= high):
            return "%s %g: accepted %g to %g (seconds)" % (name, value, low, high)
    if not 1 <= args.conns <= 64:
        return "--conns %d: accepted 1 to 64 (mcload's limit)" % args.conns
    if args.memcached_cpu < 0:
        return "--memcached-cpu %d: accepted a CPU number, 0 or more" % args.memcached_cpu
    if not 1 <= args.probe_start <= args.probe_max <= 2000000:
        return "--probe-start %d / --probe-max %d: accepted 1 <= start <= max <= 2000000" % (
            args.probe_start, args.probe_max)
    if not args.service or args.service.startswith("-") or "/" in args.service:
        return "--service %r: accepted a systemd unit name" % args.service
    return None


def logger():
    t_start = time.monotonic()

    def log(msg):
        print("[irqtune-bench %5.0fs] %s" % (time.monotonic() - t_start, msg), file=sys.stderr, flush=True)
    log.start = t_start
    return log


def execute(tb, args, name, report_extra=None):
    """Run the schedule on testbed tb and write the results; the exit code."""
    from . import report as rep
    from .runner import BenchError, run_bench
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = logger()
    report = dict(report_extra or {}, settings=vars(args), profile=PROFILE,
                  started=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()))

    def save():
        (out / ("%s.json" % name)).write_text(json.dumps(report, indent=1) + "\n")
    try:
        failed = run_bench(tb, args, log, report, save)
    except BenchError as err:
        print("irqtune-bench: %s" % err, file=sys.stderr)
        return 1
    finally:
        tb.finish()
    report["seconds_total"] = round(time.monotonic() - log.start)
    rep.write_report(report, out, name)
    if failed:
        print("irqtune-bench: %d run(s) failed (see %s)" % (len(failed), out / ("%s.json" % name)),
              file=sys.stderr)
        return 1
    return 0


def main(argv=None, mcload=MCLOAD, shim=SHIM):
    ap = Parser(prog="irqtune-bench", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True, parser_class=Parser)
    run = sub.add_parser("run", help="the bench against a server from a client, over ssh")
    run.add_argument("--server", required=True, help="ssh destination of the server (root)")
    run.add_argument("--client", required=True, help="ssh destination of the client (root)")
    run.add_argument("--server-addr", required=True, help="the server's address on the NIC under test")
    run.add_argument("--nic", help="the server's NIC under test (default: the one holding --server-addr)")
    run.add_argument("--port", type=int, default=11211, help="memcached's TCP port")
    run.add_argument("--ssh-option", action="append", default=[], metavar="OPTION",
                     help="an ssh -o option for both hosts (repeatable)")
    run.add_argument("--remote-command", default="irqtune-bench",
                     help="how the server starts irqtune-bench (default: irqtune-bench)")
    run.add_argument("--mcload", help="the load generator on the client (default: where the "
                     "client's irqtune-bench has it)")
    run.add_argument("--shim", help="epoll_slice.so on the server (default: where the server's "
                     "irqtune-bench has it)")
    run.add_argument("--name", default="irqtune-bench", help="base name of the result files")
    add_run_options(run, out_default=".")
    r = sub.add_parser("report", help="table, verdicts and plots of a saved run")
    r.add_argument("json", nargs=1)
    r.add_argument("--out", default=".")
    r.add_argument("--name", default=None, help="base name of the files (default: the JSON's)")
    c = sub.add_parser("compare", help="p99 spread per cell of two runs (or of one run's two topologies)")
    c.add_argument("json", nargs="+")
    s = sub.add_parser("server-state", help="the read-back, as JSON (on the server)")
    s.add_argument("nic")
    s.add_argument("--service", default="memcached")
    s.add_argument("--stats-only", action="store_true")
    sub.add_parser("count", help="instructions per CPU until a line on stdin (on the server)")
    sub.add_parser("paths", help="where this installation keeps mcload and epoll_slice.so, as JSON")
    args = ap.parse_args(argv)

    if args.command == "run":
        bad = bad_run_argument(args)
        if not bad and not 1 <= args.port <= 65535:
            bad = "--port %d: accepted 1 to 65535" % args.port
        if not bad and (args.server.startswith("-") or args.client.startswith("-")):
            bad = "--server/--client: accepted an ssh destination ([user@]host), not an option"
        if not bad:
            import ipaddress
            try:
                ipaddress.IPv4Address(args.server_addr)
            except ValueError:
                bad = "--server-addr %s: accepted an IPv4 address (mcload's)" % args.server_addr
        if bad:
            ap.exit(EXIT_BAD_ARGUMENT, "irqtune-bench run: %s\n" % bad)
        from .ssh import SshTestbed
        return execute(SshTestbed(args), args, args.name)
    if args.command in ("report", "compare"):
        from . import report as rep
        try:
            runs = [json.loads(Path(p).read_text()) for p in args.json]
        except (OSError, ValueError) as err:
            ap.exit(EXIT_BAD_ARGUMENT, "irqtune-bench %s: %s\n" % (args.command, err))
        if args.command == "report":
            out = Path(args.out)
            out.mkdir(parents=True, exist_ok=True)
            rep.write_report(runs[0], out, args.name or Path(args.json[0]).name.rsplit(".", 1)[0])
            return 0
        if len(runs) > 2:
            ap.exit(EXIT_BAD_ARGUMENT, "irqtune-bench compare: accepted one or two JSON files\n")
        modes = [m for m in runs[0]["settings"]["modes"].split(",") if m]
        loads = runs[0]["loads"]
        if len(runs) == 2:
            if runs[1]["loads"] != loads:
                print("irqtune-bench compare: the runs offered different loads (%s, %s): only the "
                      "common ones are compared" % (loads, runs[1]["loads"]), file=sys.stderr)
                loads = [x for x in loads if x in runs[1]["loads"]]
            print(rep.compare(runs[0]["runs"], runs[1]["runs"], modes, loads,
                              labels=tuple(Path(p).name for p in args.json)), end="")
            return 0
        split = rep.split_topologies(runs[0]["runs"])
        if set(split) != {"shared", "pinned"}:
            ap.exit(EXIT_BAD_ARGUMENT, "irqtune-bench compare: %s holds one topology (%s): name a "
                    "second run\n" % (args.json[0], ", ".join(split)))
        print(rep.compare(split["shared"], split["pinned"], modes, loads, labels=("shared", "pinned")), end="")
        return 0
    if args.command == "paths":
        # asked over ssh: each host's own installation knows its paths
        print(json.dumps({"mcload": mcload, "shim": shim}))
        return 0
    from . import server
    if args.command == "server-state":
        json.dump(server.state(args.nic, args.service, args.stats_only), sys.stdout)
        return 0
    return server.count_instructions()


if __name__ == "__main__":
    sys.exit(main())
