# SPDX-License-Identifier: GPL-2.0-or-later
"""irqtune.frontends.verify_report: which verify failures only wait for a reboot.

Fixtures (tests/unit/frontends/verify_logs, provenance in each file's header):
tuned-2.20-*.log are TuneD 2.20's daemon log during `tuned-adm verify`
(copied from tests/integration/test_deploy_verify.py runs on Debian 12);
bootcmdline-2.20 is /etc/tuned/bootcmdline as that daemon wrote it;
tuned-2.27-bootloader.log is TuneD 2.27's bootloader plugin's verify
output.  bootloader_verify_lines() makes the installed TuneD's bootloader
plugin log its verify lines here and now, so make check's second unit run
(against 2.27) checks the parser against that version's own code too.
"""

import inspect
import io
import logging
import os
import subprocess

import pytest

from irqtune.frontends import verify_report
from irqtune.frontends.verify_report import NO_REASON, judge, next_boot_args

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "verify_logs")
NETWORK_LATENCY_227 = ["tsc=reliable", "rcupdate.rcu_normal_after_boot=1", "skew_tick=1",
                       "rcutree.nohz_full_patience_delay=1000"]


def fixture(name):
    with open(os.path.join(HERE, name)) as f:
        return f.read()


BOOT = next_boot_args(fixture("bootcmdline-2.20"))


def test_next_boot_arguments_are_read_from_tuneds_bootcmdline():
    assert BOOT == {"skew_tick=1", "irqtune.test_pending=1"}
    assert next_boot_args('TUNED_BOOT_CMDLINE=""\n') == set()
    assert next_boot_args("# no such line\n") == set()
    assert next_boot_args('TUNED_BOOT_CMDLINE="a=\\"b c\\" d"') == {'a="b', 'c"', "d"}


def test_only_pending_boot_arguments_pass_and_are_listed():
    verdict = judge(False, fixture("tuned-2.20-reboot-pending.log"), BOOT)
    assert verdict.ok
    assert verdict.failures == []
    assert verdict.next_boot == ["skew_tick=1", "irqtune.test_pending=1"]


def test_a_napi_failure_beside_pending_arguments_fails_and_shows_its_lines():
    verdict = judge(False, fixture("tuned-2.20-napi-failed.log"), BOOT)
    assert not verdict.ok
    assert [line.split(": ", 1)[1] for line in verdict.failures] == [
        "verify: failed: device vd0: 'NAPI 505 defer_hard_irqs' = '1', expected '100'",
        "verify: failed: device vd0: 'NAPI 506 defer_hard_irqs' = '1', expected '100'"]
    assert verdict.next_boot == ["skew_tick=1", "irqtune.test_pending=1"]


def test_an_argument_not_installed_for_the_next_boot_is_a_failure():
    verdict = judge(False, fixture("tuned-2.20-reboot-pending.log"), {"skew_tick=1"})
    assert not verdict.ok
    assert verdict.next_boot == ["skew_tick=1"]
    assert len(verdict.failures) == 1 and "expected 'irqtune.test_pending=1'" in verdict.failures[0]


def test_tuned_227_lines_missing_and_other_value_both_wait_for_the_boot():
    text = fixture("tuned-2.27-bootloader.log")
    verdict = judge(False, text, set(NETWORK_LATENCY_227))
    assert verdict.ok and sorted(verdict.next_boot) == sorted(NETWORK_LATENCY_227)
    # the running kernel's skew_tick=0 is not what the next boot gets
    verdict = judge(False, text, set(NETWORK_LATENCY_227) - {"skew_tick=1"} | {"skew_tick=0"})
    assert not verdict.ok
    assert [f.split(": ", 1)[1] for f in verdict.failures] == [
        "verify: failed: cmdline arg 'skew_tick=0', expected 'skew_tick=1'"]


def test_a_failed_verify_without_a_reason_is_never_a_pending_reboot():
    verdict = judge(False, "", BOOT)
    assert not verdict.ok and verdict.failures == [NO_REASON]
    error = "2026-11-24 23:38:26,410 ERROR    tuned.daemon.daemon: profile is not applied"
    verdict = judge(False, "2026-11-24 23:38:26,410 INFO     x: y\n" + error + "\n", BOOT)
    assert not verdict.ok and verdict.failures == [error]


def test_a_plugin_that_raised_in_verify_beside_pending_arguments_fails():
    """TuneD's units/manager.py _try_call (2.20 and 2.27): an exception in a
    plugin's verify is an ERROR line and a failed verify, no "verify:
    failed" line - it must not pass because the boot arguments wait."""
    bug = ("2026-11-24 23:38:19,343 ERROR    tuned.units.manager: BUG: Unhandled exception "
           "in verify_tuning: boom")
    verdict = judge(False, fixture("tuned-2.20-reboot-pending.log") + bug + "\n", BOOT)
    assert not verdict.ok and verdict.failures == [bug]
    assert verdict.next_boot == ["skew_tick=1", "irqtune.test_pending=1"]
    # What the Ansible module reports: TuneD's words, without the log's head.
    assert verdict.reasons == ["BUG: Unhandled exception in verify_tuning: boom"]


def test_reasons_are_the_failures_in_tuneds_words():
    verdict = judge(False, fixture("tuned-2.20-napi-failed.log"), BOOT)
    assert verdict.reasons == ["device vd0: 'NAPI 505 defer_hard_irqs' = '1', expected '100'",
                               "device vd0: 'NAPI 506 defer_hard_irqs' = '1', expected '100'"]
    assert judge(False, "", BOOT).reasons == [NO_REASON]


def test_a_passed_verify_passes_whatever_the_log_says():
    verdict = judge(True, fixture("tuned-2.20-napi-failed.log"), BOOT)
    assert verdict.ok and verdict.failures == [] and verdict.next_boot == []


def bootloader_verify_lines(proc_cmdline, value):
    """What the installed TuneD's bootloader plugin logs (in TuneD's log
    format) when verifying cmdline=value against proc_cmdline."""
    import tuned.logs
    from tuned.plugins import plugin_bootloader
    from tuned.profiles.variables import Variables
    from tuned.utils.commands import commands

    plugin = plugin_bootloader.BootloaderPlugin.__new__(plugin_bootloader.BootloaderPlugin)
    plugin._variables = Variables()
    plugin._cmd = commands()
    plugin._cmd.read_file = lambda path, *args, **kwargs: proc_cmdline
    plugin._rpm_ostree = False
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(tuned.logs.TunedLogger._formatter)
    logger = logging.getLogger("tuned.plugins.plugin_bootloader")
    logger.addHandler(handler)
    try:
        args = [True, value, True, False]
        if "instance" in inspect.signature(plugin._cmdline).parameters:    # 2.25+
            args.append(None)
        assert plugin._cmdline(*args) is False
    finally:
        logger.removeHandler(handler)
    return stream.getvalue()


def test_the_installed_tuneds_own_bootloader_lines():
    pytest.importorskip("tuned.plugins.plugin_bootloader")
    text = bootloader_verify_lines("root=/dev/vda1 skew_tick=0 quiet",
                                   "skew_tick=1 isolcpus=io_queue,2-3 quiet")
    assert len(verify_report.failed_lines(text)) == 2, text
    verdict = judge(False, text, {"skew_tick=1", "isolcpus=io_queue,2-3"})
    assert verdict.ok and sorted(verdict.next_boot) == ["isolcpus=io_queue,2-3", "skew_tick=1"]
    assert not judge(False, text, {"skew_tick=1"}).ok


class FakeTunedAdm:
    """tuned-adm as subprocess.run sees it (unit layer); writes log_text to
    the log during verify, as the daemon does."""

    def __init__(self, log, rc, log_text, active="Current active profile: latency-suspend\n"):
        self.log, self.rc, self.log_text, self.active = log, rc, log_text, active

    def __call__(self, argv, **kwargs):
        if argv == ["tuned-adm", "verify"]:
            with open(self.log, "a") as f:
                f.write(self.log_text)
            out = "Verification %s" % ("succeeded" if self.rc == 0 else "failed")
            return subprocess.CompletedProcess(argv, self.rc, out, "")
        assert argv == ["tuned-adm", "active"]
        return subprocess.CompletedProcess(argv, 0, self.active, "")


def run_verify(tmp_path, rc, log_text):
    log = tmp_path / "tuned.log"
    log.write_text(fixture("tuned-2.20-napi-failed.log"))     # before: not this verify's
    (tmp_path / "bootcmdline").write_text(fixture("bootcmdline-2.20"))
    out, err = [], []
    status = verify_report.verify(log=str(log), bootcmdline=str(tmp_path / "bootcmdline"),
                                  run=FakeTunedAdm(str(log), rc, log_text),
                                  out=out.append, err=err.append)
    return status, out, err


def test_verify_reports_the_profile_active_and_the_arguments_for_the_next_boot(tmp_path):
    status, out, err = run_verify(tmp_path, 1, fixture("tuned-2.20-reboot-pending.log"))
    assert status == 0 and err == []
    assert out[0] == "latency-suspend is active; everything else verified."
    assert out[1].endswith("take effect at the next boot (TuneD installed them in %s): "
                           "skew_tick=1 irqtune.test_pending=1" % (tmp_path / "bootcmdline"))


def test_verify_reads_only_what_this_verify_logged(tmp_path):
    """The log already holds a NAPI failure of an earlier verify."""
    status, out, err = run_verify(tmp_path, 0, "")
    assert status == 0 and out == ["latency-suspend is active and verified."]


def test_verify_fails_with_the_failing_lines(tmp_path):
    status, out, err = run_verify(tmp_path, 1, fixture("tuned-2.20-napi-failed.log"))
    assert status == 1 and out == []
    assert err[0].startswith("irqtune verify: tuned-adm verify failed for latency-suspend")
    assert sum("'NAPI 50" in line for line in err) == 2
    assert "skew_tick=1 irqtune.test_pending=1" in err[-1]


def test_verify_without_tuned_says_why(tmp_path):
    status, out, err = run_verify(tmp_path, 1, "")
    assert status == 1 and err[1] == "Verification failed"
