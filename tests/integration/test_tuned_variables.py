# SPDX-License-Identifier: GPL-2.0-or-later
"""Variables files and bad values on the real TuneD daemon (issue 35).

- realtime-virtual-host-irqtune with the first committed layout of its
  variables file (what %config(noreplace) keeps on an upgraded host):
  applies with no ERROR and verify passes.  Its host-wide parent units
  (bootloader, scheduler, sysctl, ...) are switched off in a test child
  profile; the irqtune units select physical NICs ("*"), of which the
  rig's namespace has none, so nothing on the host is touched.  What is
  tested is the daemon's loading of the profile and its variables.
- isolated_cores=0-4294967295: tuned-adm fails with one line naming the
  option, the value and the accepted form, instead of "DBus call ...
  failed (MemoryError)".
- latency-suspend with bad values: one line per value, under the option's
  name and the variable the administrator edited, saying what is not
  applied (the whole [napi] instance for a bad queues=).
"""

import os

import pytest

from support.tuned_daemon import TUNED_ETC
from support.waiting import wait_for

RT = "realtime-virtual-host-irqtune"
RT_TEST = "rt-irqtune-test"
RT_VARIABLES = os.path.join(TUNED_ETC, RT + "-variables.conf")
FIXTURES = os.path.join(os.path.dirname(__file__), "..", "unit", "profile_fixtures")
# Every unit of the realtime parents that acts on the host (TuneD 2.20 to
# 2.28 spell them so; a disabled unit is skipped before its plugin is looked up).
HOST_UNITS = ("bootloader", "cpu", "irqbalance", "rtentsk", "scheduler", "script", "sysctl",
              "sysfs", "vm", "net", "acpi", "video", "selinux")
TUNED = {"defer-hard-irqs": 100, "gro-flush-timeout": 20000, "irq-suspend-timeout": 20000000}
ORIGINAL = {"defer-hard-irqs": 3, "gro-flush-timeout": 5000, "irq-suspend-timeout": 7}
SELECTED = ("va0", "va0p")


@pytest.fixture(scope="module", autouse=True)
def rt_profile_installed():
    if not any(os.path.exists(os.path.join(d, RT, "tuned.conf"))
               for d in ("/usr/lib/tuned", "/usr/lib/tuned/profiles")):
        pytest.fail("%s is not installed: run `make install`" % RT)
    if not any(os.path.exists(os.path.join(d, "realtime-virtual-host", "tuned.conf"))
               for d in ("/usr/lib/tuned", "/usr/lib/tuned/profiles")):
        pytest.skip("TuneD's realtime-virtual-host profile is not installed")


@pytest.fixture(scope="module")
def nics(netns):
    """A NIC for the profile's device units (the namespace has no physical
    one: devices=* would tune nothing, which verify fails)."""
    netns.add_veth("vr0", queues=2)
    yield "vr0,vr0p"
    netns.exec("ip", "link", "del", "vr0", check=False)


@pytest.fixture
def rt(tuned, nics):
    """The test child of realtime-virtual-host-irqtune; its variables file
    is put back as found afterwards."""
    saved = open(RT_VARIABLES).read() if os.path.exists(RT_VARIABLES) else None
    tuned.adm("off", check=False)
    tuned.write_profile(RT_TEST, "[main]\nsummary=%s without host-wide units (tests)\n"
                        "include=%s\n" % (RT, RT) +
                        "".join("[%s]\nenabled=false\n" % unit for unit in HOST_UNITS))
    yield tuned
    tuned.adm("off", check=False)
    if saved is None:
        if os.path.exists(RT_VARIABLES):
            os.unlink(RT_VARIABLES)
    else:
        with open(RT_VARIABLES, "w") as f:
            f.write(saved)


def write_rt_variables(text):
    with open(RT_VARIABLES, "w") as f:
        f.write(text)


def errors_in(text):
    return [line for line in text.splitlines() if " ERROR " in line]


def test_rt_profile_applies_with_the_oldest_variables_file(rt, nics):
    """issue 35: three ERRORs (invalid value '${gsimdelayus}') and a failed
    verify on a host upgraded over the first layout (its NICs named: this
    namespace has only veths)."""
    with open(os.path.join(FIXTURES, RT + "-variables.conf")) as f:
        text = f.read()
    assert "housekeeping_nics=*\n" in text
    write_rt_variables(text.replace("housekeeping_nics=*\n", "housekeeping_nics=%s\n" % nics))
    mark = rt.profile(RT_TEST)
    log = rt.log_since(mark)
    assert errors_in(log) == [], log
    assert "${" not in "\n".join(line for line in log.splitlines() if "irqtune" in line or
                                 "plugin_gsim" in line or "plugin_napi" in line)
    result, verify_log = rt.verify()
    assert result.returncode == 0, (result.stdout, errors_in(verify_log))


def test_rt_profile_refuses_isolated_cores_beyond_any_cpu(rt):
    """issue 35: tuned-adm said "DBus call ... failed (MemoryError)" and
    nothing in TuneD's log named the value."""
    value = "0-4294967295"
    write_rt_variables("isolated_cores=%s\n" % value)
    mark = rt.log_mark()
    result = rt.adm("profile", RT_TEST, check=False)
    line = ("isolated_cores: invalid value '%s' (accepted: a CPU list such as 2-7,10 in "
            "TuneD's syntax (numbers and ranges, ^N or !N to leave CPUs out, 0x masks), "
            "CPUs 0 to 8191)" % value)
    output = result.stdout + result.stderr
    assert result.returncode != 0 and line in output, output
    assert "MemoryError" not in output and "DBus" not in output, output
    wait_for(lambda: "Failed to apply profile" in rt.log_since(mark), what="switch refused")
    log = rt.log_since(mark)
    assert "MemoryError" not in log and "Traceback" not in log
    named = [l for l in errors_in(log) if value in l]
    assert len(named) == 1 and named[0].endswith(line + "; the profile is not loaded"), named
    assert "active profile" in rt.adm("active", check=False).stdout     # the daemon answers


@pytest.fixture(scope="module")
def devices(netns):
    netns.add_veth("va0", queues=2)
    return netns


def test_bad_values_each_one_line_with_variable_and_consequence(tuned, devices):
    """issue 35: suspend_queues=0-99999999 said "the option is not applied"
    while [napi] applied nothing; with two bad opt-in values only the first
    was reported, as busy_poll_usecs; "my unit" became two units."""
    tuned.adm("off", check=False)
    devices.set_napis(SELECTED, ORIGINAL)
    tuned.write_variables("suspend_nics=va*\nsuspend_queues=0-99999999\n"
                          "irq_suspend_timeout=18446744073709551615\n"
                          "optin_services=my unit\noptin_busy_poll_usecs=99999999\n")
    mark = tuned.profile("latency-suspend-test")
    errors = [line.split(" ERROR ", 1)[1].split(": ", 1)[1] for line in
              errors_in(tuned.log_since(mark)) if "instance" in line]
    assert sorted(errors) == sorted([
        "instance napi: irq_suspend_timeout: invalid value '18446744073709551615' (accepted: "
        "a duration: a number of nanoseconds, or a number with unit ns, us, ms or s, at most "
        "1s; or auto (measured from the services in auto_services)), from variable "
        "irq_suspend_timeout; the instance tunes nothing",
        "instance napi: queues: invalid value '0-99999999' (accepted: a list of numbers and "
        "ranges such as 0-3,6, each at most 65535), from variable suspend_queues; the "
        "instance tunes nothing",
        "instance busy_poll_optin: busy_poll_usecs: invalid value '99999999' (accepted: "
        "0..1000000), from variable optin_busy_poll_usecs; no service is opted in",
        "instance busy_poll_optin: services: invalid value 'my unit' (accepted: service unit "
        "names separated by commas, each a name or name.service without spaces (e.g. "
        "memcached, nginx.service)), from variable optin_services; no service is opted in",
    ]), errors
    assert devices.napis_have(SELECTED, ORIGINAL)
    assert not os.path.exists("/etc/systemd/system/my.service.d")
    result, log = tuned.verify()
    assert result.returncode != 0 and "invalid value '0-99999999'" in log
    tuned.write_variables("suspend_nics=va*\n")
    tuned.profile("latency-suspend-test")
    wait_for(lambda: devices.napis_have(SELECTED, TUNED), what="the fixed values applied")
    tuned.off()
