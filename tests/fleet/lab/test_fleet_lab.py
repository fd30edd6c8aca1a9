# SPDX-License-Identifier: GPL-2.0-or-later
"""The role irqtune.tuning.irqtune rolled out by the administrator's playbook
(ansible/irqtune-rollout.yml) to two generation-7 lab guests over ssh.

Each guest is Linux 7.2 on Debian unstable with systemd, sshd and TuneD
2.27 as services (tests/lab/README.md); the role installs the project from
source (`git archive HEAD` + `make install`) itself.  ssh reaches each
guest through its own network namespace (netns_relay.py as ProxyCommand).
Kernel state is read with the test suites' raw netlink reader
(tests/support/rawnapi.py, through host7.Host7), never with irqtune.

The tests are steps of one rollout and run in file order: apply, no-op,
check mode, a bad value, the canary stop, a NIC the canary lacks, kernel
arguments waiting for a reboot, a failed verify, rollback.
`make fleet-test` runs them; without the lab they skip with the reason.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import labvm
from support.host7 import BOOT_ARGS, KERNEL, Host7, ssh_key

REPO = Path(__file__).resolve().parents[3]
PLAYBOOK = REPO / "ansible" / "irqtune-rollout.yml"
RELAY = Path(__file__).resolve().parent / "netns_relay.py"
VARIABLES = "/etc/tuned/latency-suspend-variables.conf"
SHIPPED = (REPO / "profiles" / "latency-suspend" / "latency-suspend-variables.conf").read_text()
KEYS = ("defer-hard-irqs", "gro-flush-timeout", "irq-suspend-timeout")
# Non-default originals, so that a restore to the kernel defaults cannot pass.
ORIGINAL = {"defer-hard-irqs": 3, "gro-flush-timeout": 7000, "irq-suspend-timeout": 5000000}
RECAP = re.compile(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+"
                   r"failed=(\d+)\s+skipped=(\d+)", re.M)
# One canary batch of everything, and a failure of one host out of two
# tolerated, so that the other one goes on (the playbook's defaults stop).
ONE_BATCH = ["-e", '{"irqtune_batches": ["100%"], "irqtune_max_fail_percentage": 50}']


# QEMU's emulated CPU has no cpufreq driver, so the [cpu] unit that
# latency-suspend inherits (boost) can never verify in a guest.  The guests
# carry an administrator's profile that switches it off, stacked last, as a
# fleet with such hosts would do; every other unit stays.
EMULATED_CPU = "lab-emulated-cpu"
EMULATED_CPU_CONF = "[main]\nsummary=no cpufreq on an emulated CPU (lab)\n\n[cpu]\nenabled=false\n"
# A kernel argument the guests do not boot with, for a stack that waits for
# a reboot (as network-latency's skew_tick=1 does on a fleet host).
PENDING_ARG = "irqtune.fleet_pending=1"


def tuned(defer):
    return {"defer-hard-irqs": defer, "gro-flush-timeout": 20000,
            "irq-suspend-timeout": 20000000}


def values(host):
    return {nid: {k: napi.get(k, 0) for k in KEYS} for nid, napi in host.napis().items()}


class Run:
    def __init__(self, proc):
        self.rc = proc.returncode
        self.output = proc.stdout
        # ansible-core prints "[WARNING]: ..." lines, a module's warnings
        # among them, on stderr (Display._warning: stderr=True); task
        # results and fatal errors go to stdout.
        self.warnings = proc.stderr
        self.recap = {m.group(1): {"ok": int(m.group(2)), "changed": int(m.group(3)),
                                   "unreachable": int(m.group(4)), "failed": int(m.group(5))}
                      for m in RECAP.finditer(proc.stdout)}

    def __repr__(self):     # what a failed assertion shows
        return "rc %d\n%s\n--- stderr ---\n%s" % (self.rc, self.output[-6000:],
                                                   self.warnings[-3000:])


class Fleet:
    """Two booted guests and the ansible-playbook runs against them."""

    def __init__(self, workdir, key, hosts):
        self.workdir = workdir
        self.key = key
        self.hosts = hosts          # {inventory name: Host7}, in inventory order

    def host_vars(self, name, defer, nic=None):
        return {"irqtune_profile": ["latency-suspend", EMULATED_CPU],
                "irqtune_latency_suspend": {"suspend_nics": [nic or self.hosts[name].nic],
                                            "defer_hard_irqs": defer,
                                            "gro_flush_timeout": "20us",
                                            "irq_suspend_timeout": "20ms"}}

    def inventory(self, defers, order=None, nics=None):
        """YAML inventory (JSON is YAML): group irqtune, one host per guest;
        nics: {host: the NIC its variables name} instead of the guest's own."""
        hosts = {}
        for name in order or self.hosts:
            netns = self.hosts[name].g.netns.name
            proxy = "ip netns exec %s %s %s %s 22" % (netns, sys.executable, RELAY,
                                                      labvm.GUEST_IP)
            hosts[name] = dict(self.host_vars(name, defers[name], (nics or {}).get(name)),
                               ansible_host=name, ansible_user="root",
                               ansible_python_interpreter="/usr/bin/python3",
                               ansible_ssh_private_key_file=str(self.key),
                               ansible_ssh_common_args=(
                                   "-o ProxyCommand='%s' -o StrictHostKeyChecking=no "
                                   "-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR" % proxy))
        path = self.workdir / "inventory.yml"
        path.write_text(json.dumps({"irqtune": {"hosts": hosts}}, indent=1))
        return path

    def archive(self):
        """The release the fleet rolls out, made once from HEAD: the archive
        the role installs, and its unpacked tree as the controller's
        irqtune_source_dir (the validation imports the library from it), so
        that nothing committed or edited meanwhile changes a run."""
        path = self.workdir / "irqtune-source.tar"
        if not path.exists():
            subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", "--prefix=irqtune/",
                            "-o", str(path), "HEAD"], check=True)
            subprocess.run(["tar", "-C", str(self.workdir), "-xf", str(path)], check=True)
        return path

    def play(self, defers, *args, order=None, nics=None):
        env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_HOST_KEY_CHECKING="False",
                   ANSIBLE_PIPELINING="True", ANSIBLE_TIMEOUT="120",
                   ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_FORCE_COLOR="0")
        argv = [shutil.which("ansible-playbook"), "-i", str(self.inventory(defers, order, nics)),
                str(PLAYBOOK), "-e", "irqtune_source_archive=%s" % self.archive(),
                "-e", "irqtune_source_dir=%s" % (self.workdir / "irqtune"), *args]
        proc = subprocess.run(argv, cwd=PLAYBOOK.parent, env=env, capture_output=True,
                              text=True, timeout=1800)
        run = Run(proc)
        self.runs = getattr(self, "runs", 0) + 1
        (self.workdir / ("run-%d.log" % self.runs)).write_text(proc.stdout + proc.stderr)
        print(" ".join(args) or "(apply)", run.recap)
        return run


def missing():
    reason = labvm.missing(KERNEL)
    if reason:
        return reason
    for tool in ("ansible-playbook", "ssh", "ssh-keygen", "git"):
        if shutil.which(tool) is None:
            return "%s not found (make fleet-test puts ansible-core on PATH)" % tool
    return None


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    reason = missing()
    if reason:
        pytest.skip(reason)
    workdir = tmp_path_factory.mktemp("fleet")
    key = ssh_key(workdir, "irqtune-fleet-test")
    guests = []
    try:
        hosts = {}
        for name in ("fleet-a", "fleet-b"):
            g = labvm.Guest(kernel=KERNEL, cmdline=BOOT_ARGS, smp=2)
            guests.append(g)
            g.start()
            h = Host7(g)
            h.custom_profile(EMULATED_CPU, EMULATED_CPU_CONF)
            h.admit_ssh_key(key)
            hosts[name] = h
        yield Fleet(workdir, key, hosts)
    finally:
        for g in guests:
            g.shutdown()


@pytest.fixture(scope="module")
def originals(fleet):
    """What each guest had before the first run: its active profile, and
    non-default values on every NAPI of its NIC."""
    before = {}
    for name, h in fleet.hosts.items():
        for nid in h.napis():
            h.napi_set(nid, **ORIGINAL)
        # tuned.service may still be starting on a just booted guest (its
        # first start also picks the recommended profile): wait for it.
        h.sh("for i in $(seq 60); do tuned-adm active 2>&1 | grep -q 'Cannot talk' || exit 0; "
             "sleep 1; done; exit 1")
        rc, out = h.tuned_adm("active")
        # TuneD 2.27 exits 1 when no profile is active (a fresh guest).
        assert rc == 0 or "No current active profile" in out, out
        before[name] = {"active": out, "napis": values(h)}
        assert before[name]["napis"] and all(v == ORIGINAL for v in before[name]["napis"].values())
        assert "latency-suspend" not in out
    return before


def test_first_run_installs_applies_and_verifies(fleet, originals):
    run = fleet.play({"fleet-a": 100, "fleet-b": 50})
    assert run.rc == 0, run
    assert set(run.recap) == {"fleet-a", "fleet-b"}
    for name, defer in (("fleet-a", 100), ("fleet-b", 50)):
        h = fleet.hosts[name]
        assert run.recap[name]["failed"] == 0 and run.recap[name]["changed"] > 0, run
        rc, out = h.tuned_adm("active")
        assert "Current active profile: latency-suspend %s" % EMULATED_CPU in out, out
        napis = values(h)
        assert napis == {nid: tuned(defer) for nid in napis}
        ok, log = h.verify()
        assert ok, log
        assert "\ndefer_hard_irqs=%d\n" % defer in h.g.read_file(VARIABLES)
        assert h.run("test", "-f", "/var/lib/irqtune/source/installed.tar")[0] == 0


def test_second_run_changes_nothing(fleet):
    run = fleet.play({"fleet-a": 100, "fleet-b": 50})
    assert run.rc == 0, run
    assert {name: r["changed"] for name, r in run.recap.items()} == \
        {"fleet-a": 0, "fleet-b": 0}, run


def test_check_mode_reports_a_change_and_changes_nothing(fleet):
    a = fleet.hosts["fleet-a"]
    file_before = a.g.read_file(VARIABLES)
    run = fleet.play({"fleet-a": 60, "fleet-b": 50}, "--check", "--diff")
    assert run.rc == 0, run
    assert run.recap["fleet-a"]["changed"] > 0 and run.recap["fleet-b"]["changed"] == 0, run
    assert "-defer_hard_irqs=100" in run.output and "+defer_hard_irqs=60" in run.output, run
    assert "+active profile: latency-suspend" not in run.output     # same stack, re-applied
    assert a.g.read_file(VARIABLES) == file_before
    napis = values(a)
    assert napis == {nid: tuned(100) for nid in napis}


def test_bad_value_fails_that_host_alone(fleet):
    b = fleet.hosts["fleet-b"]
    file_before = b.g.read_file(VARIABLES)
    run = fleet.play({"fleet-a": 60, "fleet-b": -5}, *ONE_BATCH)
    assert run.rc != 0, run
    assert run.recap["fleet-b"]["failed"] == 1 and run.recap["fleet-b"]["changed"] == 0, run
    assert run.recap["fleet-a"]["failed"] == 0 and run.recap["fleet-a"]["changed"] > 0, run
    assert ("latency-suspend: defer_hard_irqs: invalid value '-5' (accepted: an integer "
            "from 0 to 2147483647)") in run.output, run
    a_napis, b_napis = values(fleet.hosts["fleet-a"]), values(b)
    assert a_napis == {nid: tuned(60) for nid in a_napis}
    assert b_napis == {nid: tuned(50) for nid in b_napis}
    assert b.g.read_file(VARIABLES) == file_before


def test_failed_canary_stops_the_rollout(fleet):
    """The playbook's own batches: the first host is the canary; when it
    fails, the others are not touched."""
    run = fleet.play({"fleet-a": 70, "fleet-b": -5}, order=["fleet-b", "fleet-a"])
    assert run.rc != 0, run
    assert run.recap["fleet-b"]["failed"] == 1, run
    assert "fleet-a" not in run.recap or run.recap["fleet-a"]["changed"] == 0, run
    napis = values(fleet.hosts["fleet-a"])
    assert napis == {nid: tuned(60) for nid in napis}


def test_a_nic_the_canary_lacks_fails_it_naming_the_nic_and_stops_the_rollout(fleet):
    """The typo: suspend_nics names a NIC the host does not have.  TuneD
    would tune nothing and verify nothing; the host fails, naming the value
    and its NICs, and the hosts after the canary are not touched."""
    b = fleet.hosts["fleet-b"]
    run = fleet.play({"fleet-a": 70, "fleet-b": 65}, order=["fleet-b", "fleet-a"],
                     nics={"fleet-b": "ens1f0"})
    assert run.rc != 0, run
    assert run.recap["fleet-b"]["failed"] == 1, run
    said = " ".join(run.output.split())
    assert "devices=ens1f0 matches no network device; devices here: %s" % b.nic in said, run
    assert "fleet-a" not in run.recap or run.recap["fleet-a"]["changed"] == 0, run
    napis = values(fleet.hosts["fleet-a"])
    assert napis == {nid: tuned(60) for nid in napis}


def test_kernel_arguments_for_the_next_boot_pass_the_host_with_a_warning(fleet):
    """A stack with a [bootloader] cmdline on a host not rebooted since:
    TuneD's verify fails for that argument alone, the role names it and
    the host stays in the rollout (irqtune.frontends.verify_report judges, on the
    guest)."""
    b = fleet.hosts["fleet-b"]
    b.custom_profile(EMULATED_CPU, EMULATED_CPU_CONF
                     + "\n[bootloader]\ncmdline_irqtune_fleet=%s\n" % PENDING_ARG)
    try:
        run = fleet.play({"fleet-a": 60, "fleet-b": 55}, *ONE_BATCH)   # b applied again
        ok, log = b.verify()
        assert not ok and "expected '%s'" % PENDING_ARG in log, log     # TuneD's own verify
    finally:
        b.custom_profile(EMULATED_CPU, EMULATED_CPU_CONF)
    assert run.rc == 0, run
    assert run.recap["fleet-b"]["failed"] == 0 and run.recap["fleet-b"]["changed"] > 0, run
    assert run.recap["fleet-a"]["changed"] == 0, run
    said = " ".join(run.warnings.split())   # warnings may be wrapped
    assert "[WARNING]" in said, run
    assert ("'latency-suspend %s' is active; everything else verified. Kernel "
            "command-line arguments that take effect at the next boot (TuneD installed them "
            "in /etc/tuned/bootcmdline): %s" % (EMULATED_CPU, PENDING_ARG)) in said, run
    napis = values(b)
    assert napis == {nid: tuned(55) for nid in napis}


def test_failed_verify_fails_the_host_naming_the_napi(fleet):
    a = fleet.hosts["fleet-a"]
    nid = min(values(a))
    a.napi_set(nid, **{"defer-hard-irqs": 7})        # behind TuneD's back
    run = fleet.play({"fleet-a": 60, "fleet-b": 50}, *ONE_BATCH)
    assert run.rc != 0, run
    assert run.recap["fleet-a"]["failed"] == 1 and run.recap["fleet-b"]["failed"] == 0, run
    assert "tuned-adm verify failed for 'latency-suspend %s'" % EMULATED_CPU in run.output, run
    assert "'NAPI %d defer_hard_irqs' = '7', expected '60'" % nid in run.output, run


def test_rollback_restores_the_originals(fleet, originals):
    run = fleet.play({"fleet-a": 60, "fleet-b": 50}, "-e", "irqtune_state=absent")
    assert run.rc == 0, run
    for name, h in fleet.hosts.items():
        assert run.recap[name]["changed"] > 0, run
        rc, out = h.tuned_adm("active")
        assert out == originals[name]["active"]
        assert values(h) == originals[name]["napis"]
        assert h.g.read_file(VARIABLES) == SHIPPED      # what make install put there
        assert h.run("test", "-e", "/var/lib/irqtune/ansible/tuned-profile.json")[0] != 0
    again = fleet.play({"fleet-a": 60, "fleet-b": 50}, "-e", "irqtune_state=absent")
    assert again.rc == 0 and {r["changed"] for r in again.recap.values()} == {0}, again
