# SPDX-License-Identifier: GPL-2.0-or-later
"""`irqtune verify`: TuneD's verify, with the kernel command-line arguments
that only a reboot applies told apart from real failures.

`tuned-adm verify` fails as long as an argument of a [bootloader] cmdline
(e.g. network-latency's skew_tick=1) is not in /proc/cmdline - on every
host that has not rebooted since the profile was chosen, after everything
else applied correctly.  Its result is only an exit code; the reasons are
TuneD's log lines written meanwhile ("verify: failed: ...", the format of
tuned.consts STR_VERIFY_PROFILE_*, unchanged from 2.20 to 2.27).  A
failing "cmdline arg" line whose expected argument TuneD has installed for
the next boot (TUNED_BOOT_CMDLINE in /etc/tuned/bootcmdline, which its
bootloader plugin writes on every apply, with or without a grub.cfg to
patch) waits for a reboot; every other failure is one, and so is a failed
verify that logged no reason at all.
"""

import os
import re
import shlex
import stat
import subprocess
from dataclasses import dataclass, field

from ..kernel.errors import describe_os_error
from ..kernel.kfs import KernelFs
from ..kernel.names import LINE_MAX, SHOWN_PATH_MAX, shown

TUNED_LOG = "/var/log/tuned/tuned.log"
BOOT_CMDLINE_FILE = "/etc/tuned/bootcmdline"       # tuned.consts.BOOT_CMDLINE_FILE
BOOT_CMDLINE_VAR = "TUNED_BOOT_CMDLINE"            # tuned.consts.BOOT_CMDLINE_TUNED_VAR

# tuned.consts.STR_VERIFY_PROFILE_CMDLINE_FAIL(_MISSING), logged by the
# bootloader plugin for each argument /proc/cmdline lacks or holds with
# another value.
_CMDLINE_FAIL = re.compile(r"verify: failed: cmdline arg '[^']*'(?: is missing)?, expected '(?P<arg>[^']*)'$")
_FAILED = "verify: failed: "
NO_REASON = "(no reason in the log)"
# A log record's head: "2026-11-24 23:58:01,123 ERROR    tuned.plugins.x: "
_RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (?P<level>[A-Z]+) +(?P<logger>\S+): (?P<message>.*)$")


@dataclass
class Verdict:
    """What a failed (or passed) verify means: the arguments waiting for
    the next boot, the log lines of real failures, and whether the
    profile is in effect apart from the former."""

    passed: bool                      # tuned-adm verify's own answer
    next_boot: list = field(default_factory=list)
    failures: list = field(default_factory=list)

    @property
    def ok(self):
        """Nothing wrong but arguments a reboot applies."""
        return self.passed or (not self.failures and bool(self.next_boot))

    @property
    def reasons(self):
        """The failures without the log's head: what differs, in TuneD's
        words ("device eth1: 'NAPI 8193 defer_hard_irqs' = '0', expected
        '100'")."""
        return [reason(line) for line in self.failures]


def reason(line):
    """A failure line as TuneD worded it, without time, level and logger."""
    record = _RECORD.match(line)
    if not record:
        return line
    message = record["message"]
    return message[len(_FAILED):] if message.startswith(_FAILED) else message


def next_boot_args(bootcmdline_text):
    """The arguments TuneD installed for the next boot, from the text of
    /etc/tuned/bootcmdline (a shell fragment: VAR="value")."""
    for line in bootcmdline_text.splitlines():
        name, sep, value = line.strip().partition("=")
        if sep and name == BOOT_CMDLINE_VAR:
            try:
                return set(" ".join(shlex.split(value)).split())
            except ValueError:      # unbalanced quotes: not what TuneD writes
                return set(value.strip('"').split())
    return set()


def failed_lines(log_text):
    """The log records of a verify that report a failure, as logged: its
    "verify: failed" lines and any other error (a plugin that raised, say:
    TuneD's "BUG: Unhandled exception in verify_tuning")."""
    out = []
    for line in log_text.splitlines():
        record = _RECORD.match(line)
        if record and (record["message"].startswith(_FAILED)
                       or record["level"] in ("ERROR", "CRITICAL")):
            out.append(line)
    return out


def judge(passed, log_text, next_boot):
    """The Verdict on tuned-adm verify's exit (passed) and the log lines it
    caused; next_boot: the arguments TuneD installed for the next boot."""
    verdict = Verdict(passed)
    if passed:
        return verdict
    for line in failed_lines(log_text):
        arg = _CMDLINE_FAIL.search(line)
        if arg and arg["arg"] in next_boot:
            if arg["arg"] not in verdict.next_boot:
                verdict.next_boot.append(arg["arg"])
        else:
            verdict.failures.append(line)
    if not verdict.failures and not verdict.next_boot:
        # Failed without logging why (a daemon that is not running or has no
        # profile): never taken for a pending reboot.
        verdict.failures = [NO_REASON]
    return verdict


class LogTail:
    """What a log file gains from now on (a file rotated meanwhile is read
    from its start)."""

    def __init__(self, path):
        self.path = path
        self.stat = self._stat()

    def _stat(self):
        try:
            return os.stat(self.path)
        except OSError:
            return None

    def read(self):
        now = self._stat()
        offset = 0
        if self.stat is not None and now is not None and now.st_ino == self.stat.st_ino \
                and now.st_size >= self.stat.st_size:
            offset = self.stat.st_size
        try:
            with open(self.path, "rb") as f:
                f.seek(offset)
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""


def active_profile(run=subprocess.run):
    out = run(["tuned-adm", "active"], capture_output=True, text=True).stdout
    found = re.search(r"^Current active profile: (.*)$", out, re.MULTILINE)
    return found[1].strip() if found else None


def check(run_verify, log=TUNED_LOG, bootcmdline=BOOT_CMDLINE_FILE):
    """The Verdict on one tuned-adm verify, run by run_verify() ->
    (exit status, what it printed); the log is read from where it stood
    before.  A failure TuneD logged no reason for is what tuned-adm said.
    The one judgement of `irqtune verify` and of the Ansible module
    irqtune.tuning.tuned_profile (which runs tuned-adm its own way)."""
    tail = LogTail(log)
    returncode, said = run_verify()
    verdict = judge(returncode == 0, tail.read(),
                    next_boot_args(KernelFs.read_optional(bootcmdline) or ""))
    if verdict.failures == [NO_REASON] and said.strip():
        verdict.failures = said.strip().splitlines()
    return verdict


def unreadable(path):
    """Why the log at path cannot be read (a regular file only: a FIFO
    would block), or None."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return "not a regular file"
        with open(path, "rb"):
            return None
    except OSError as e:
        return describe_os_error(e, with_path=False)


def verify(log=TUNED_LOG, bootcmdline=BOOT_CMDLINE_FILE, run=subprocess.run, out=print, err=print):
    """Run tuned-adm verify and report (see the module); returns the exit
    status: 0 when the profile is in effect apart from arguments for the
    next boot, 1 otherwise, 2 when the log cannot be read (its lines are
    the only reasons a failure has)."""
    problem = unreadable(log)
    if problem:
        err("irqtune verify: --log %s: %s (accepted: the log file TuneD writes, default %s)"
            % (shown(log, SHOWN_PATH_MAX, quote=True), problem, TUNED_LOG))
        return 2

    def run_verify():
        result = run(["tuned-adm", "verify"], capture_output=True, text=True)
        return result.returncode, result.stdout + result.stderr

    try:
        verdict = check(run_verify, log, bootcmdline)
    except OSError as e:
        err("irqtune verify: cannot run tuned-adm: %s" % describe_os_error(e))
        return 1
    profile = shown(active_profile(run) or "the profile")
    if verdict.passed:
        out("%s is active and verified." % profile)
        return 0
    pending = ("kernel command-line arguments that take effect at the next boot (TuneD "
               "installed them in %s): %s" % (bootcmdline, " ".join(verdict.next_boot)))
    if verdict.ok:
        out("%s is active; everything else verified." % profile)
        out(shown(pending, LINE_MAX))
        return 0
    err("irqtune verify: tuned-adm verify failed for %s (from %s):"
        % (profile, shown(log, SHOWN_PATH_MAX, quote=True)))
    for line in verdict.failures:       # TuneD's log lines: anything a value held
        err(shown(line, LINE_MAX))
    if verdict.next_boot:
        err(shown(pending, LINE_MAX))
    return 1
