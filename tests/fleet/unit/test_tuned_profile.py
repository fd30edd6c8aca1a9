# SPDX-License-Identifier: GPL-2.0-or-later
"""tuned_profile's decisions against a stand-in for tuned-adm (the real
daemon is exercised by tests/fleet/lab).  How a failed verify is judged is
irqtune.frontends.verify_report's; the verifies below log what real TuneD daemons
logged (tests/unit/frontends/verify_logs/, whose headers say where from)."""

import json
from pathlib import Path

import pytest

from ansible_collections.irqtune.tuning.plugins.modules import tuned_profile as tp

# What tuned-adm verify makes TuneD log (TuneD 2.27 format, consts.py
# STR_VERIFY_PROFILE_DEVICE_VALUE_FAIL, as the napi plugin logs it).
FAILED_LINE = ("2026-11-22 12:00:01,002 ERROR    tuned.plugins.plugin_napi: verify: failed: "
               "device eth1: 'napi 8193 defer-hard-irqs' = '0', expected '100'\n")
PASSED_LINE = ("2026-11-22 12:00:01,001 INFO     tuned.plugins.plugin_napi: verify: passed: "
               "device eth1: 'napi 8194 defer-hard-irqs' = '100'\n")
VERIFY_LOGS = Path(__file__).resolve().parents[2] / "unit" / "frontends" / "verify_logs"
# TUNED_BOOT_CMDLINE="skew_tick=1 irqtune.test_pending=1", as TuneD 2.20 wrote it.
PENDING = ["skew_tick=1", "irqtune.test_pending=1"]


def fixture(name):
    """A verify_logs fixture without its header (what the daemon logged)."""
    text = (VERIFY_LOGS / name).read_text()
    return "".join(line for line in text.splitlines(True) if not line.startswith("# "))


class FakeTunedAdm:
    def __init__(self, log, active="balanced", mode="auto", verify_ok=True):
        self.log, self.active, self.mode, self.verify_ok = log, active, mode, verify_ok
        self.verify_log = None      # else what a failing verify logs, in place of FAILED_LINE
        self.calls = []

    def __call__(self, argv):
        assert argv[0] == "tuned-adm"
        cmd = argv[1:]
        self.calls.append(" ".join(cmd))
        if cmd == ["active"]:
            if not self.active:
                return 0, "No current active profile.\n", ""
            return 0, "Current active profile: %s\n" % self.active, ""
        if cmd == ["profile_mode"]:
            return 0, "Profile selection mode: %s\n" % self.mode, ""
        if cmd[0] == "profile":
            self.active, self.mode = " ".join(cmd[1:]), "manual"
            return 0, "", ""
        if cmd == ["off"]:
            self.active, self.mode = "", "manual"
            return 0, "", ""
        if cmd == ["auto_profile"]:
            self.active, self.mode = "balanced", "auto"
            return 0, "", ""
        if cmd == ["verify"]:
            failed = FAILED_LINE if self.verify_log is None else self.verify_log
            with open(self.log, "a") as stream:
                stream.write(PASSED_LINE + ("" if self.verify_ok else failed))
            if self.verify_ok:
                return 0, "Verfication succeeded, ...\n", ""
            return 1, "Verification failed, current system settings differ ...\n", ""
        raise AssertionError(argv)


@pytest.fixture
def env(tmp_path):
    log = tmp_path / "tuned.log"
    log.write_text("2026-11-22 11:00:00,000 INFO     tuned.daemon: old line: verify: failed: "
                   "'from an earlier run'\n")
    fake = FakeTunedAdm(str(log))
    bootcmdline = tmp_path / "bootcmdline"
    bootcmdline.write_text((VERIFY_LOGS / "bootcmdline-2.20").read_text())
    return {"fake": fake, "bootcmdline": bootcmdline,
            "tuned": tp.Tuned(fake, str(log), bootcmdline_file=str(bootcmdline)),
            "state": str(tmp_path / "s.json"),
            "vars": [{"path": "/etc/tuned/latency-suspend-variables.conf",
                      "content": "defer_hard_irqs=100\n"}]}


def present(env, profiles=("latency-suspend", "gsim"), check=False, variables=None):
    env["fake"].calls.clear()
    return tp.present(env["tuned"], list(profiles), variables or env["vars"], env["state"],
                      check)


def test_apply_records_previous_then_nothing_changes(env):
    first = present(env)
    assert first["changed"] and first["active"] == "latency-suspend gsim"
    assert env["fake"].calls == ["active", "profile_mode", "profile latency-suspend gsim",
                                 "active", "verify"]
    state = json.load(open(env["state"]))
    assert (state["previous"], state["previous_mode"]) == ("balanced", "auto")

    second = present(env)
    assert not second["changed"] and env["fake"].calls == ["active", "verify"]


def test_changed_variables_reapply_the_same_stack(env):
    present(env)
    env["vars"][0]["content"] = "defer_hard_irqs=50\n"
    again = present(env)
    assert again["changed"] and "profile latency-suspend gsim" in env["fake"].calls
    assert json.load(open(env["state"]))["previous"] == "balanced"   # still the first one


def test_check_mode_changes_nothing(env):
    result = present(env, check=True)
    assert result["changed"] and env["fake"].calls == ["active", "profile_mode"]
    assert env["fake"].active == "balanced"
    with pytest.raises(FileNotFoundError):
        open(env["state"])


def test_check_mode_sees_variables_not_written_yet(env):
    present(env)
    env["vars"][0]["content"] = "defer_hard_irqs=50\n"
    result = present(env, check=True)
    assert result["changed"] and env["fake"].calls == ["active"]
    applied = [{"path": "/etc/tuned/latency-suspend-variables.conf",
                "content": "defer_hard_irqs=100\n"}]
    assert not present(env, check=True, variables=applied)["changed"]


def test_failed_verify_reports_only_new_differences(env):
    env["fake"].verify_ok = False
    result = present(env)
    assert result["failed"]
    assert result["differences"] == ["device eth1: 'napi 8193 defer-hard-irqs' = '0', "
                                     "expected '100'"]
    assert "napi 8193" in result["msg"]


def test_rollback_to_auto_mode_previous(env):
    present(env)
    env["fake"].calls.clear()
    result = tp.absent(env["tuned"], ["latency-suspend", "gsim"], env["state"], False)
    assert result["changed"] and result["active"] == "balanced"
    assert env["fake"].calls == ["active", "auto_profile", "active"]
    with pytest.raises(FileNotFoundError):
        open(env["state"])
    again = tp.absent(env["tuned"], ["latency-suspend", "gsim"], env["state"], False)
    assert not again["changed"]


def test_rollback_to_off_when_nothing_was_active(env):
    env["fake"].active = ""
    present(env)
    result = tp.absent(env["tuned"], ["latency-suspend"], env["state"], False)
    assert result["changed"] and env["fake"].active == ""
    assert "off" in env["fake"].calls


def test_rollback_without_record_switches_off_only_our_profiles(env):
    env["fake"].active = "throughput-performance gsim"
    result = tp.absent(env["tuned"], ["gsim"], env["state"], check_mode=True)
    assert result["changed"] and env["fake"].active == "throughput-performance gsim"
    tp.absent(env["tuned"], ["gsim"], env["state"], False)
    assert env["fake"].active == ""
    env["fake"].active = "balanced"
    assert not tp.absent(env["tuned"], ["gsim"], env["state"], False)["changed"]


def failing_verify(env, log_text):
    env["fake"].verify_ok, env["fake"].verify_log = False, log_text
    return present(env)


def test_arguments_for_the_next_boot_alone_pass_and_are_returned(env):
    """A host not rebooted since its stack (with a [bootloader] cmdline) was
    chosen: everything else verified, the host stays in the rollout."""
    result = failing_verify(env, fixture("tuned-2.20-reboot-pending.log"))
    assert not result.get("failed") and "differences" not in result
    assert result["reboot_pending_args"] == PENDING
    assert result["active"] == "latency-suspend gsim"
    warning = tp.pending_warning("latency-suspend gsim", result["reboot_pending_args"],
                                 str(env["bootcmdline"]))
    assert warning.endswith("at the next boot (TuneD installed them in %s): "
                            "skew_tick=1 irqtune.test_pending=1" % env["bootcmdline"])


def test_tuned_227_missing_and_other_valued_arguments_wait_for_the_boot(env):
    env["bootcmdline"].write_text('TUNED_BOOT_CMDLINE="skew_tick=1 tsc=reliable '
                                  'rcupdate.rcu_normal_after_boot=1 '
                                  'rcutree.nohz_full_patience_delay=1000"\n')
    result = failing_verify(env, fixture("tuned-2.27-bootloader.log"))
    assert not result.get("failed")
    assert sorted(result["reboot_pending_args"]) == sorted(
        ["skew_tick=1", "tsc=reliable", "rcupdate.rcu_normal_after_boot=1",
         "rcutree.nohz_full_patience_delay=1000"])


def test_a_napi_failure_beside_pending_arguments_fails_the_host(env):
    result = failing_verify(env, fixture("tuned-2.20-napi-failed.log"))
    assert result["failed"]
    assert result["differences"] == [
        "device vd0: 'NAPI 505 defer_hard_irqs' = '1', expected '100'",
        "device vd0: 'NAPI 506 defer_hard_irqs' = '1', expected '100'"]
    assert result["reboot_pending_args"] == PENDING
    assert result["msg"].startswith("tuned-adm verify failed for 'latency-suspend gsim': "
                                    "device vd0: 'NAPI 505 defer_hard_irqs'")


def test_arguments_tuned_did_not_install_for_the_next_boot_fail(env):
    """Missing from /proc/cmdline and not in bootcmdline: no reboot brings
    them (a bootloader plugin that could not write it, an edited file)."""
    env["bootcmdline"].write_text('TUNED_BOOT_CMDLINE="skew_tick=1"\n')
    result = failing_verify(env, fixture("tuned-2.20-reboot-pending.log"))
    assert result["failed"] and result["reboot_pending_args"] == ["skew_tick=1"]
    assert result["differences"] == ["cmdline arg 'irqtune.test_pending' is missing, "
                                     "expected 'irqtune.test_pending=1'"]
    env["bootcmdline"].unlink()
    result = failing_verify(env, fixture("tuned-2.20-reboot-pending.log"))
    assert result["failed"] and "reboot_pending_args" not in result
    assert len(result["differences"]) == 2


def test_a_failed_verify_that_logged_nothing_fails_with_what_tuned_adm_said(env):
    result = failing_verify(env, "")
    assert result["failed"] and "reboot_pending_args" not in result
    assert result["differences"] == ["Verification failed, current system settings differ ..."]


def test_verify_without_the_irqtune_library_says_what_to_do(env, monkeypatch):
    monkeypatch.setattr(tp, "verify_report", None)
    monkeypatch.setattr(tp, "VERIFY_REPORT_IMPORT_ERROR", "No module named 'irqtune'",
                        raising=False)
    with pytest.raises(tp.TunedError, match="verify needs the irqtune library.*No module "
                       "named 'irqtune'.*irqtune_install_method"):
        present(env)
    # Without verify (and for rollback) the library is not needed.
    assert not tp.present(env["tuned"], ["latency-suspend"], env["vars"], env["state"],
                          False, verify=False).get("failed")
