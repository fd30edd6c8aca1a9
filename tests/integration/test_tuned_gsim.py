# SPDX-License-Identifier: GPL-2.0-or-later
"""The gsim overlay on the real TuneD daemon, on this host's kernel.

The host kernel has no GSIM, so this is the "kernel without GSIM" path
for real: the overlay is stacked on latency-suspend-test (the napi
plugin on veth NAPIs in the rig's namespace, the only host-safe profile
part there is), and the checks are: exactly one warning naming the
missing interface and the kernel patches, the napi part still applies,
verify reports every GSIM option as unsupported (never passed) and
fails, verify --ignore-missing skips them and passes, off restores the
napi part. The GSIM shapes themselves are exercised in tests/unit
(fixtures) and tests/lab (the GSIM kernel in QEMU).
"""

import os
import re

import pytest

from support.commands import run
from support.waiting import wait_for

BASE = "latency-suspend-test"
OVERLAY = "gsim"
TUNED = {"defer-hard-irqs": 100, "gro-flush-timeout": 20000, "irq-suspend-timeout": 20000000}
ORIGINAL = {"defer-hard-irqs": 3, "gro-flush-timeout": 5000, "irq-suspend-timeout": 7}
SELECTED = ("va0", "va0p")
GSIM_OPTIONS = ("delay_us", "target_intr_rate", "hardirq_percent", "irqs")
MISSING = "GSIM (global software interrupt moderation) is not available"


@pytest.fixture(scope="module", autouse=True)
def host_has_no_gsim():
    for path in ("/proc/irq/sw_moderation", "/proc/irq/soft_moderation"):
        if os.path.exists(path):
            pytest.skip("this kernel has GSIM (%s): the no-GSIM path cannot be tested" % path)
    installed = run("/usr/bin/python3", "-Es", "-c", "import tuned.plugins.plugin_gsim",
                    check=False)
    if installed.returncode != 0:
        pytest.fail("plugin_gsim is not installed into TuneD: run `make install` "
                    "(make check does): " + installed.stderr.strip())
    if not any(os.path.exists(os.path.join(d, OVERLAY, "tuned.conf"))
               for d in ("/usr/lib/tuned", "/usr/lib/tuned/profiles", "/etc/tuned")):
        pytest.fail("the gsim profile is not installed: run `make install`")


@pytest.fixture(scope="module")
def devices(netns):
    netns.add_veth("va0", queues=2)
    return netns





@pytest.fixture
def fresh(tuned, devices):
    tuned.adm("off", check=False)
    tuned.write_variables("suspend_nics=va*\n")
    devices.set_napis(SELECTED, ORIGINAL)
    return tuned


def gsim_lines(text):
    return [line for line in text.splitlines() if "plugin_gsim" in line or "gsim" in line]


def test_overlay_without_gsim_warns_once_and_the_rest_applies(fresh, devices):
    mark = fresh.profile(BASE, OVERLAY)
    wait_for(lambda: devices.napis_have(SELECTED, TUNED), what="napi part of the profile applied")
    log = fresh.log_since(mark)
    warnings = [line for line in log.splitlines() if " WARNING " in line and MISSING in line]
    assert len(warnings) == 1, warnings
    assert "/proc/irq/sw_moderation/" in warnings[0] and "/proc/irq/soft_moderation" in \
        warnings[0] and "kernel-patches/gsim" in warnings[0], warnings[0]
    # nothing else from the plugin above INFO: no error, no second warning
    noisy = [line for line in log.splitlines() if "plugin_gsim" in line
             and (" ERROR " in line or " WARNING " in line)]
    assert noisy == warnings, noisy
    assert "active profile" in fresh.adm("active").stdout and OVERLAY in \
        fresh.adm("active").stdout


def test_verify_reports_gsim_unsupported_not_passed(fresh, devices):
    fresh.profile(BASE, OVERLAY)
    wait_for(lambda: devices.napis_have(SELECTED, TUNED), what="napi part applied")
    result, log = fresh.verify()
    assert result.returncode != 0, log
    for option in GSIM_OPTIONS:
        assert re.search(r"verify: failed: 'gsim: %s: unsupported: the kernel has no GSIM "
                         r"interface" % option, log), (option, log)
    assert not [line for line in log.splitlines()
                if "verify: passed" in line and ("gsim" in line or "moderation" in line)]
    # the napi part passes on its own
    assert "verify: passed: device va0: 'NAPI" in log
    assert not [line for line in log.splitlines()
                if "verify: failed" in line and "gsim" not in line], log


def test_verify_ignore_missing_skips_gsim(fresh, devices):
    fresh.profile(BASE, OVERLAY)
    wait_for(lambda: devices.napis_have(SELECTED, TUNED), what="napi part applied")
    mark = fresh.log_mark()
    result = fresh.adm("verify", "--ignore-missing", check=False)
    log = fresh.log_since(mark)
    assert result.returncode == 0, log
    for option in GSIM_OPTIONS:
        assert "verify: skipped, missing: 'gsim %s'" % option in log, (option, log)


def test_off_restores_the_rest(fresh, devices):
    fresh.profile(BASE, OVERLAY)
    wait_for(lambda: devices.napis_have(SELECTED, TUNED), what="napi part applied")
    mark = fresh.off()
    wait_for(lambda: devices.napis_have(SELECTED, ORIGINAL), what="napi originals after off")
    assert not [line for line in fresh.log_since(mark).splitlines()
                if "plugin_gsim" in line and (" ERROR " in line or " WARNING " in line)]
    assert not os.path.exists("/run/irqtune/features/gsim-gsim.json")


def test_bad_overlay_value_still_one_line(fresh, devices):
    """A bad value is reported (option, value, range) before the kernel is
    even looked at; the missing interface is still one warning."""
    fresh.write_profile("irqtune-test-gsim-bad", "[main]\ninclude=%s\n[gsim]\n"
                        "delay_us=900\n" % OVERLAY)
    mark = fresh.profile(BASE, "irqtune-test-gsim-bad")
    wait_for(lambda: devices.napis_have(SELECTED, TUNED), what="napi part applied")
    log = fresh.log_since(mark)
    bad = [line for line in log.splitlines() if "invalid value '900'" in line]
    assert len(bad) == 1 and "delay_us" in bad[0] and "from 0 to 500" in bad[0], bad
    assert len([line for line in log.splitlines() if MISSING in line]) == 1
    result, vlog = fresh.verify()
    assert result.returncode != 0
    assert "invalid value '900'" in vlog
    fresh.off()
