# SPDX-License-Identifier: GPL-2.0-or-later
"""The orchestrating host's two commands, as the command line (cli.py)
and the lab (tests/lab/bench/memcached_modes.py) call them:

  run      execute(): the schedule (runner.py) on a testbed - ssh.py's
           two hosts, or the lab's guest - and its results written
           (report.py): NAME.json after every run, then .txt, .md, plots
  check    check(): the findings (preflight.py) of ssh.py's testbed

Nothing here runs on the server or the client: what does is server.py
and client.py, which this side does not import (bench/.importlinter).
"""

import json
import signal
import sys
import time

from . import preflight, runner, ssh
from . import report as rep
from .files import results_dir, write_file
from .guard import LINE_MAX, TEXT_MAX, BenchError, shown, written_error
from .modes import PROFILE


def logger():
    t_start = time.monotonic()

    def log(msg):
        # what the runner logs holds the remote hosts' answers
        print("[irqtune-bench %5.0fs] %s" % (time.monotonic() - t_start, shown(msg, LINE_MAX)), file=sys.stderr,
              flush=True)
    log.start = t_start
    return log


def check(settings):
    """`irqtune-bench check`: the findings, one per line; 1 when one failed."""
    tb = ssh.SshTestbed(settings)
    try:
        findings = tb.check()
    except BenchError as err:
        print("irqtune-bench check: %s" % shown(err, LINE_MAX), file=sys.stderr)
        return 1
    finally:
        tb.finish()
    # a finding quotes what the hosts answered
    findings = [f._replace(what=shown(f.what, LINE_MAX), fix=f.fix and shown(f.fix, LINE_MAX)) for f in findings]
    print("\n".join(preflight.lines(findings)))
    return 1 if preflight.failed(findings) else 0


def stop_on_signal(signum, frame):
    # SIGTERM and SIGHUP end the bench as Ctrl-C does: through the finally
    # blocks that put the server's files, profile and ntuple rule back
    raise SystemExit(128 + signum)


def execute(tb, args, name, command):
    """Run the schedule on testbed tb and write the results; the exit code.
    command: how the run was started, for the report."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop_on_signal)
    try:
        out = results_dir(args.out)
        rep.check_results(out, name)        # refused before the run, not after it
    except OSError as err:
        print("irqtune-bench: %s" % written_error(err), file=sys.stderr)
        tb.finish()
        return 1
    log = logger()
    report = dict(settings=vars(args), profile=PROFILE, command=command,
                  started=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()))

    def save():
        write_file(out / ("%s.json" % name), json.dumps(report, indent=1) + "\n")
    try:
        failed = runner.run_bench(tb, args, log, report, save)
        report["seconds_total"] = round(time.monotonic() - log.start)
        rep.write_report(report, out, name)
    except BenchError as err:
        print("irqtune-bench: %s" % shown(err, LINE_MAX), file=sys.stderr)
        return 1
    except OSError as err:          # a result not written: the run stopped, the runner put the server back
        print("irqtune-bench: %s" % written_error(err), file=sys.stderr)
        return 1
    finally:
        tb.finish()
    if failed:
        print("irqtune-bench: %d run(s) failed (see %s)" % (len(failed), shown(out / ("%s.json" % name), TEXT_MAX)),
              file=sys.stderr)
        return 1
    return 0


def run(settings, command):
    """`irqtune-bench run` on the two hosts settings name (cli.ssh_settings);
    command: how the run was started, for the report.  The exit code."""
    return execute(ssh.SshTestbed(settings), settings, settings.name, command)
