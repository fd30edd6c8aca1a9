# SPDX-License-Identifier: GPL-2.0-or-later
"""irqtune-bench: reproduce the IRQ suspension series' memcached table on
your own NIC.

  irqtune-bench run --server root@SERVER --client root@CLIENT --server-addr ADDR [options]
      the series' eleven modes (or --modes) at four loads up to 90 % of
      the server's saturation, each mode set through irqtune's
      latency-suspend profile and read back before every run, a disturbed
      run run again; writes NAME.{json,txt,md} and NAME-{p99,insn|cpu}.png
  irqtune-bench check --server root@SERVER --client root@CLIENT --server-addr ADDR [options]
      what a run needs from both hosts and this machine, one line per
      finding with the command that fixes it; exits 1 when a run would
      fail (run makes the same checks first)
  irqtune-bench local [options]
      the same bench on this machine's own kernel: memcached behind a veth
      whose other end is in a network namespace with the load generator
      (docs/benchmarks.md, "A real kernel")
  irqtune-bench report RUN.json         table, verdicts and plots again
  irqtune-bench report --verdicts-json RUN.json   the verdicts as JSON
  irqtune-bench compare A.json [B.json] p99 spread per cell, side by side
                                        (one file: its two topologies)
  irqtune-bench docs RUN.json FILE.md --images DIR
                                        FILE.md's generated part and plots
                                        from a saved run (docs/benchmarks.md)
  irqtune-bench server-state NIC        the read-back (run by the bench on the server)
  irqtune-bench count                   instructions per CPU (run by the bench on the server)
  irqtune-bench server-facts NIC ...    what check judges (run by the bench on the server)
  irqtune-bench incoming --port P       memcached's connections' NAPI ids (on the server)
  irqtune-bench hold ADDR PORT --source-ports P1,...
                                        connections held open (run by the bench on the client)

Bad arguments are refused in one line naming the argument, the value and
what is accepted (exit 2); a failed bench exits 1, an interrupted one 130.
"""

import argparse
import ipaddress
import json
import os
import re
import sys
import types
from pathlib import Path

from . import client, server, servervalues
from .guard import LINE_MAX, QUOTED_MAX, BadArgument, shown, written_error
from .modes import MEASURED, MODES, SERIES_MODES, parse_modes

EXIT_BAD_ARGUMENT = 2
EXIT_INTERRUPTED = 130          # a shell's 128 + SIGINT
MCLOAD = "/usr/libexec/irqtune-bench/mcload"
SHIM = "/usr/lib64/irqtune-bench/epoll_slice.so"
# The longest argument taken (PATH_MAX): checked before argparse or a
# number parser sees it, so no value costs more than this to refuse.
ARGUMENT_MAX = 4096
# The longest --name: the results' names add "-insn.png", the writer's
# temporary files a dot before and ".XXXXXXXX" after, within NAME_MAX (255).
NAME_MAX = 200


class Parser(argparse.ArgumentParser):
    """argparse whose refusals are one line and exit 2, without the usage
    block; every argument at most ARGUMENT_MAX characters, and the values
    argparse quotes in its refusals (whole) escaped and cut."""

    def parse_known_args(self, args=None, namespace=None):
        self.given = sys.argv[1:] if args is None else list(args)
        for before, arg in zip([""] + self.given, self.given):
            if len(arg) > ARGUMENT_MAX:
                named = before if before.startswith("-") else "argument"
                self.error("%s %s: longer than %d characters" % (named, shown(arg), ARGUMENT_MAX))
        return super().parse_known_args(self.given, namespace)

    def error(self, message):
        for arg in sorted(set(getattr(self, "given", ())), key=len, reverse=True):
            for value in (arg, arg.partition("=")[2]):
                if len(value) > QUOTED_MAX:
                    message = message.replace(repr(value), "'%s'" % shown(value)).replace(value, shown(value))
        self.exit(EXIT_BAD_ARGUMENT, "%s: %s\n" % (self.prog, shown(message, LINE_MAX)))


def add_run_options(ap, out_default):
    """The options every testbed's run takes (the lab's script too).
    Numbers stay text here: run_settings() parses them, ASCII digits only."""
    ap.add_argument("--modes", default=",".join(SERIES_MODES), help="comma separated, of: " + " ".join(MODES)
                    + " " + " ".join(MEASURED) + " (default: the series' eleven)")
    ap.add_argument("--loads", default="", help="offered req/s, comma separated (default: found "
                    "from the server's saturation point and --fractions)")
    ap.add_argument("--fractions", default=FRACTIONS,
                    help="offered loads as fractions of the saturation point")
    ap.add_argument("--repeats", default="3", help="runs per cell, interleaved rounds")
    ap.add_argument("--seconds", default="3", help="measurement window per run")
    ap.add_argument("--warmup", default="0.5", help="load before the window opens")
    ap.add_argument("--conns", default="1")
    ap.add_argument("--memcached-cpu", default="2", help="CPU memcached is pinned to")
    ap.add_argument("--service", default="memcached", help="systemd unit of the memcached server")
    ap.add_argument("--probe-start", default="1000")
    ap.add_argument("--probe-max", default="2000000")
    ap.add_argument("--probe-seconds", default="2")
    ap.add_argument("--seed", default="1", help="of the round orders")
    ap.add_argument("--recommend-seconds", default="5",
                    help="the doctor's window for the recommend mode (0.5-60)")
    ap.add_argument("--reruns", default="2", help="re-runs of a disturbed run, at most (0-10)")
    ap.add_argument("--quick", action="store_true",
                    help="a short run: 1 repeat, 2 s windows, 3 loads (checks the machinery, not the modes)")
    ap.add_argument("--step-seconds", default="120",
                    help="with auto among the modes: the step test's time at each load (0: no step test)")
    ap.add_argument("--out", default=out_default, help="directory of the results")


FRACTIONS = "0.1,0.3,0.6,0.9"
QUICK_FRACTIONS = "0.2,0.6,0.9"
# ASCII digits, at most 20 before and after the point: no value the bench
# takes needs more, and int() of a longer one is work (and past 4300
# digits Python's ValueError) rather than a refusal
WHOLE = re.compile(r"[0-9]{1,20}")
DECIMAL = re.compile(r"[0-9]{1,20}(?:\.[0-9]{0,20})?|\.[0-9]{1,20}")


def checked_out(out):
    """--out's value unless it cannot be a directory of results:
    BadArgument naming why."""
    if any(len(part.encode(errors="surrogateescape")) > 255 for part in out.split("/")):
        raise BadArgument("--out %s: accepted a directory whose names are at most 255 bytes each" % shown(out))
    if os.path.lexists(out) and not os.path.isdir(out):
        raise BadArgument("--out %s: not a directory" % shown(out))
    return out


def checked_name(name):
    """--name's value unless it cannot name the result files: BadArgument."""
    if not name or name in (".", "..") or "/" in name or len(name.encode(errors="surrogateescape")) > NAME_MAX:
        raise BadArgument("--name %s: accepted a file name without '/', at most %d bytes"
                          % (shown(name) if name else "''", NAME_MAX))
    return name


def _g(x):
    return "%d" % x if float(x).is_integer() else "%g" % x


def number(option, text, low, high, whole=True, unit=""):
    """text as an int (whole) or float within [low, high]: ASCII digits
    only (no sign, "_", exponent or other scripts' digits)."""
    ok = (WHOLE if whole else DECIMAL).fullmatch(text) and text.isascii()
    value = (int(text) if whole else float(text)) if ok else None
    if value is None or not low <= value <= high:
        raise BadArgument("%s %s: accepted %s to %s%s (ASCII digits)" % (option, shown(text), _g(low), _g(high), unit))
    return value


def numbers(option, text, low, high, whole=True, unit=""):
    """[numbers] of a comma-separated option, each as number() takes it."""
    items = text.split(",")
    try:
        return [number(option, item.strip(), low, high, whole, unit) for item in items]
    except BadArgument:
        raise BadArgument("%s %s: accepted comma-separated %s, %s to %s%s each (ASCII digits)" % (
            option, shown(text), "whole numbers" if whole else "numbers", _g(low), _g(high), unit)) from None


def run_settings(args):
    """The run's settings, parsed once from the run options (args is left
    as it is); BadArgument names the first bad one.  --quick makes a short
    run: 1 repeat, 2 s windows, 3 loads."""
    try:
        modes = parse_modes(args.modes)
    except ValueError as err:
        raise BadArgument(str(err)) from None
    s = types.SimpleNamespace(
        modes=modes, service=args.service, quick=args.quick, out=checked_out(args.out),
        loads=sorted(numbers("--loads", args.loads, 1, 2000000, unit=" requests/s")) if args.loads else [],
        fractions=sorted(numbers("--fractions", QUICK_FRACTIONS if args.quick and args.fractions == FRACTIONS
                                 else args.fractions, 0.01, 2, whole=False)),
        repeats=1 if args.quick else number("--repeats", args.repeats, 1, 100),
        seconds=2.0 if args.quick else number("--seconds", args.seconds, 0.5, 120, False, " seconds"),
        warmup=number("--warmup", args.warmup, 0, 30, False, " seconds"),
        conns=number("--conns", args.conns, 1, 64, unit=" (mcload's limit)"),
        memcached_cpu=None if args.memcached_cpu is None else
        number("--memcached-cpu", args.memcached_cpu, 0, 8191, unit=" (a CPU number)"),
        probe_start=number("--probe-start", args.probe_start, 1, 2000000, unit=" requests/s"),
        probe_max=number("--probe-max", args.probe_max, 1, 2000000, unit=" requests/s"),
        probe_seconds=number("--probe-seconds", args.probe_seconds, 0.5, 120, False, " seconds"),
        seed=number("--seed", args.seed, 0, 2**31 - 1),
        recommend_seconds=number("--recommend-seconds", args.recommend_seconds, 0.5, 60, False, " seconds"),
        reruns=number("--reruns", args.reruns, 0, 10),
        step_seconds=0 if args.quick else number("--step-seconds", args.step_seconds, 0, 3600, unit=" seconds"))
    if s.probe_start > s.probe_max:
        raise BadArgument("--probe-start %d / --probe-max %d: accepted 1 <= start <= max <= 2000000"
                          % (s.probe_start, s.probe_max))
    servervalues.service("--service", args.service)
    return s


def ssh_settings(args):
    """run_settings() plus the two hosts' options of `irqtune-bench run`."""
    s = run_settings(args)
    for host in (args.server, args.client):
        if not host or host.startswith("-") or not (host.isascii() and host.isprintable()) or " " in host:
            raise BadArgument("--server/--client %s: accepted an ssh destination ([user@]host: printable "
                              "ASCII, no blank), not an option" % (shown(host) if host else "''"))
    try:
        ipaddress.IPv4Address(args.server_addr)
    except ValueError:
        raise BadArgument("--server-addr %s: accepted an IPv4 address (mcload's)" % shown(args.server_addr)) from None
    s.__dict__.update(server=args.server, client=args.client, server_addr=args.server_addr, nic=args.nic,
                      port=number("--port", args.port, 1, 65535), ssh_option=list(args.ssh_option),
                      generators=None if args.generators == "auto" else
                      number("--generators", args.generators, 1, 64, unit=" or auto"),
                      remote_command=args.remote_command, mcload=args.mcload, shim=args.shim,
                      name=checked_name(args.name))
    servervalues.arguments(s)
    return s


def local_settings(args, mcload, shim):
    """run_settings() plus `irqtune-bench local`'s own options."""
    s = run_settings(args)
    cpus = sorted(os.sched_getaffinity(0))
    s.memcached_cpu = cpus[-1] if args.memcached_cpu is None else s.memcached_cpu
    s.generator_cpu = (next(c for c in cpus if c != s.memcached_cpu) if args.generator_cpu is None else
                       number("--generator-cpu", args.generator_cpu, 0, 8191, unit=" (a CPU number)"))
    s.mcload, s.shim, s.name = args.mcload or mcload, args.shim or shim, checked_name(args.name)
    servervalues.shim_path("--shim", s.shim)
    return s


def add_local_options(p):
    """`irqtune-bench local`: the testbed on this machine's kernel (netns.py)."""
    p.add_argument("--generator-cpu", help="the load generator's CPU (default: the lowest other than "
                   "--memcached-cpu's)")
    p.add_argument("--mcload", help="the load generator (default: the installed one)")
    p.add_argument("--shim", help="epoll_slice.so (default: the installed one)")
    p.add_argument("--name", default="local-bench", help="base name of the result files")


def add_host_options(p):
    """The two hosts of `run` and `check`."""
    p.add_argument("--server", required=True, help="ssh destination of the server (root)")
    p.add_argument("--client", required=True, help="ssh destination of the client (root); this machine "
                   "itself when it is the client: it must log in to itself too")
    p.add_argument("--server-addr", required=True, help="the server's address on the NIC under test")
    p.add_argument("--nic", help="the server's NIC under test (default: the one holding --server-addr)")
    p.add_argument("--port", default="11211", help="memcached's TCP port")
    p.add_argument("--ssh-option", action="append", default=[], metavar="OPTION",
                   help="an ssh -o option for both hosts (repeatable)")
    p.add_argument("--remote-command", default="irqtune-bench",
                   help="how both hosts start irqtune-bench (default: irqtune-bench)")
    p.add_argument("--mcload", help="the load generator on the client (default: where the "
                   "client's irqtune-bench has it)")
    p.add_argument("--shim", help="epoll_slice.so on the server (default: where the server's "
                   "irqtune-bench has it)")
    p.add_argument("--generators", default="auto", help="load generator processes on the client, "
                   "each with --conns connections (default auto: half the client's CPUs, 1 to 8)")
    p.add_argument("--name", default="irqtune-bench", help="base name of the result files")


def parser():
    ap = Parser(prog="irqtune-bench", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True, parser_class=Parser)
    run = sub.add_parser("run", help="the bench against a server from a client, over ssh")
    check = sub.add_parser("check", help="what a run needs from both hosts, and the fixes")
    for p in (run, check):
        add_host_options(p)
    for p in (run, check):
        add_run_options(p, out_default=".")
    local = sub.add_parser("local", help="the bench on this machine's own kernel: memcached and the "
                           "generator in network namespaces joined by a veth pair")
    add_local_options(local)
    add_run_options(local, out_default=".")
    # memcached on the highest CPU this process may use, unless named
    local.set_defaults(memcached_cpu=None)
    r = sub.add_parser("report", help="table, verdicts and plots of a saved run")
    r.add_argument("json")
    r.add_argument("--out", default=".")
    r.add_argument("--name", default=None, help="base name of the files (default: the JSON's)")
    r.add_argument("--verdicts-json", action="store_true",
                   help="print only the verdicts, as JSON (nothing written)")
    c = sub.add_parser("compare", help="p99 spread per cell of two runs (or of one run's two topologies)")
    c.add_argument("json", nargs="+")
    d = sub.add_parser("docs", help="regenerate the run-derived parts of a markdown file from a saved run")
    d.add_argument("json")
    d.add_argument("markdown")
    d.add_argument("--images", required=True, help="directory of the plots the markdown shows")
    s = sub.add_parser("server-state", help="the read-back, as JSON (on the server)")
    s.add_argument("nic")
    s.add_argument("--service", default="memcached")
    s.add_argument("--pid-file", help="memcached's pid file instead of --service (the netns testbed)")
    s.add_argument("--stats-only", action="store_true")
    sub.add_parser("count", help="instructions per CPU until a line on stdin (on the server)")
    # the internal commands' numbers are text too: internal_numbers()
    f = sub.add_parser("server-facts", help="what check judges on the server, as JSON (on the server)")
    f.add_argument("nic")
    f.add_argument("--service", default="memcached")
    f.add_argument("--port", default="11211")
    f.add_argument("--cpu", default="2")
    i = sub.add_parser("incoming", help="the service's connections on a port and their NAPI ids (on the server)")
    i.add_argument("--service", default="memcached")
    i.add_argument("--port", default="11211")
    h = sub.add_parser("hold", help="connections from given source ports, held until a line on stdin "
                       "(on the client)")
    h.add_argument("addr")
    h.add_argument("port")
    h.add_argument("--source-ports", required=True)
    sub.add_parser("paths", help="where this installation keeps mcload and epoll_slice.so, as JSON")
    return ap


def internal_numbers(args):
    """args of the commands the bench runs on its hosts, their numbers
    parsed (ASCII digits, in range) as the run options' are."""
    if args.command in ("server-facts", "incoming"):
        args.port = number("--port", args.port, 1, 65535)
    if args.command == "server-facts":
        args.cpu = number("--cpu", args.cpu, 0, 8191, unit=" (a CPU number)")
    if args.command == "hold":
        args.port = number("port", args.port, 1, 65535)
        args.source_ports = numbers("--source-ports", args.source_ports, 1, 65535)
    return args


def main(argv=None, mcload=MCLOAD, shim=SHIM):
    ap = parser()
    args = ap.parse_args(argv)
    try:
        return dispatch(args, argv, mcload, shim)
    except BadArgument as err:
        ap.exit(EXIT_BAD_ARGUMENT, "irqtune-bench %s: %s\n" % (args.command, shown(err, LINE_MAX)))
    except KeyboardInterrupt:
        print("irqtune-bench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as err:
        print("irqtune-bench %s: %s" % (args.command, written_error(err)), file=sys.stderr)
        return 1


def dispatch(args, argv, mcload, shim):
    """The exit code of the command args name; BadArgument refusing one."""
    # The orchestrator's commands and the saved runs' are imported here, by
    # the command that runs them, not at the top: the commands the bench
    # runs on its hosts (below) start between a run's two read-backs of the
    # server, inside its CPU figures, and load only what they use.
    if args.command == "local":
        from . import netns, orchestrator
        settings = local_settings(args, mcload, shim)
        return orchestrator.execute(netns.NetnsTestbed(settings), settings, settings.name, " ".join(
            ["irqtune-bench"] + [shown(a, 200) for a in argv or sys.argv[1:]]))
    if args.command in ("check", "run"):
        from . import orchestrator
        settings = ssh_settings(args)
        if args.command == "check":
            return orchestrator.check(settings)
        return orchestrator.run(settings, " ".join(["irqtune-bench"] + [shown(a, 200) for a in argv or sys.argv[1:]]))
    if args.command == "report" and not args.verdicts_json:
        checked_out(args.out)
        checked_name(args.name if args.name is not None else Path(args.json).name.split(".", 1)[0])
    if args.command in ("report", "compare", "docs"):
        from . import saved
        return saved.main(args)
    internal_numbers(args)
    if args.command == "paths":
        # asked over ssh: each host's own installation knows its paths
        print(json.dumps({"mcload": mcload, "shim": shim}))
        return 0
    if args.command == "hold":
        return client.hold(args.addr, args.port, args.source_ports)
    if args.command == "server-facts":
        json.dump(server.facts(args.nic, args.service, args.port, args.cpu), sys.stdout)
        return 0
    if args.command == "incoming":
        json.dump(server.incoming(server.service_pid(args.service), args.port), sys.stdout)
        return 0
    if args.command == "server-state":
        json.dump(server.state(args.nic, args.service, args.stats_only, args.pid_file), sys.stdout)
        return 0
    return server.count_instructions()


if __name__ == "__main__":
    sys.exit(main())
