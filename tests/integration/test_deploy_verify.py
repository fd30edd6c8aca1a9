# SPDX-License-Identifier: GPL-2.0-or-later
"""`irqtune verify` (the verify step of `make deploy`) against the real TuneD
daemon, on a host that has not rebooted since the profile was chosen.

The profile under test adds a [bootloader] cmdline argument that is not in
/proc/cmdline: TuneD installs it for the next boot (/etc/tuned/bootcmdline)
and `tuned-adm verify` fails on it and on network-latency's skew_tick=1
(the parent's [bootloader], enabled again here), as after a fresh `make
deploy`.  That alone must pass, listing the
argument; any other failure (a NAPI value changed behind TuneD's back, an
argument TuneD did not install for the next boot) must still fail.
"""

import os
import re
import subprocess

import pytest

from support.waiting import wait_for

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROFILE = "irqtune-test-reboot"
PENDING = "irqtune.test_pending=1"
TUNED = {"defer-hard-irqs": 100, "gro-flush-timeout": 20000}
BOOTCMDLINE = "/etc/tuned/bootcmdline"


@pytest.fixture(scope="module")
def devices(netns):
    netns.add_veth("vd0", queues=2)
    yield netns
    netns.exec("ip", "link", "del", "vd0", check=False)


@pytest.fixture
def pending_profile(tuned, devices):
    assert PENDING not in open("/proc/cmdline").read().split()
    tuned.adm("off", check=False)
    tuned.write_variables("suspend_nics=vd*\n")
    tuned.write_profile(PROFILE, "[main]\ninclude=latency-suspend-test\n"
                        "[bootloader]\nenabled=true\ncmdline=%s\n" % PENDING)
    tuned.profile(PROFILE)
    wait_for(lambda: devices.napis_have(("vd0", "vd0p"), TUNED), what="profile values on vd0")
    yield tuned
    tuned.adm("off", check=False)


def irqtune_verify(tuned):
    """`irqtune verify` as make deploy runs it (this tree's library)."""
    return subprocess.run(["/usr/bin/python3", "-m", "irqtune", "verify", "--log", tuned.log_path],
                          cwd=REPO, capture_output=True, text=True, timeout=120)


def test_tuned_adm_verify_alone_fails_on_the_pending_argument(pending_profile):
    """The reproduction: TuneD's own verify cries wolf."""
    result, log = pending_profile.verify()
    assert result.returncode != 0
    assert "verify: failed: cmdline arg 'irqtune.test_pending' is missing, expected '%s'" \
        % PENDING in log, log
    assert PENDING in open(BOOTCMDLINE).read()


def test_only_a_pending_boot_argument_passes_and_is_listed(pending_profile):
    result = irqtune_verify(pending_profile)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "%s is active" % PROFILE in result.stdout, result.stdout
    listed = re.search(r"take effect at the next boot .*: (.*)$", result.stdout, re.MULTILINE)
    assert listed, result.stdout
    # with [bootloader] enabled, the parent network-latency's skew_tick=1 too
    assert {PENDING, "skew_tick=1"} <= set(listed[1].split()), result.stdout


def test_a_napi_changed_behind_tuneds_back_still_fails(pending_profile, devices):
    victim = devices.napis("vd0")[0]["id"]
    devices.set_napis(("vd0",), {"defer-hard-irqs": 1})
    result = irqtune_verify(pending_profile)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "tuned-adm verify failed for %s" % PROFILE in result.stderr, result.stderr
    assert re.search(r"verify: failed: device vd0: 'NAPI %d defer_hard_irqs' = '1', "
                     r"expected '100'" % victim, result.stderr), result.stderr
    assert PENDING in result.stderr            # still said, beside the failure
    assert "cmdline arg" not in result.stderr  # but not as a failure


def test_an_argument_tuned_did_not_install_for_the_next_boot_fails(pending_profile):
    """Without the argument in TuneD's next-boot command line nothing says a
    reboot will bring it: a failure, not a pending argument."""
    text = open(BOOTCMDLINE).read()
    try:
        with open(BOOTCMDLINE, "w") as f:
            f.write(text.replace(PENDING, ""))
        result = irqtune_verify(pending_profile)
    finally:
        with open(BOOTCMDLINE, "w") as f:
            f.write(text)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "cmdline arg 'irqtune.test_pending' is missing" in result.stderr, result.stderr


def test_verify_without_a_daemon_fails(tuned):
    tuned.stop()
    try:
        result = irqtune_verify(tuned)
        assert result.returncode == 1, result.stdout + result.stderr
        assert "tuned-adm verify failed" in result.stderr, result.stderr
    finally:
        tuned.start()
