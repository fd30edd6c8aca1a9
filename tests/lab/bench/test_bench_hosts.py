# SPDX-License-Identifier: GPL-2.0-or-later
"""irqtune-bench as an administrator runs it on their own hardware, with
two lab guests as the hosts: a server and a client on one virtual link
(labvm.Link, a bridge), and the lab host's end of that link as the
administrator's machine.  `make lab-bench-hosts`.

Each guest is generation 7 (Linux 7.2, systemd, TuneD 2.27, sshd,
memcached).  Installed as from the packages: the project (`make install`)
on the server, and the bench (`make install-bench`: irqtune_bench,
/usr/bin/irqtune-bench, mcload, epoll_slice.so) on both.  The server's
memcached is opened to its NIC and the guests' host keys are added to a
known_hosts file with ssh-keyscan, the administrator's steps (host key
checking stays on).  Then, from the host's side of the link:

    irqtune-bench check --server root@10.77.0.2 --client root@10.77.0.3 \\
        --server-addr 10.77.0.2
    irqtune-bench run ... --modes <all fourteen> --repeats 1 --seconds 2

check passes, and fails with one line naming the fix for what a user
meets: an unknown host key, memcached stopped, the port closed
(nftables on the server), and - the server rebooted from its disk into
base-systemd, Linux 6.12 without the series as RHEL 10 ships it - a
server kernel without per-NAPI settings, which `run` refuses too.  The
run is the whole bench without --quick: saturation search, every mode
including recommend and auto, steering (virtio-net has no ntuple
filters: source ports), two generator processes, report and plots;
every mode is set on the server and read back before its run, and the
server's TuneD profile, variables and drop-in are put back afterwards.
Latency is printed, never asserted.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from support import labvm
from support.host7 import BOOT_ARGS, KERNEL, SRC, Host7, ssh_key

REPO = Path(__file__).resolve().parents[3]
SERVER_IP, CLIENT_IP = "10.77.0.2", "10.77.0.3"
SERVER_MAC, CLIENT_MAC = "52:54:00:49:52:51", "52:54:00:49:52:52"
# Linux 6.12 without the series (kernel.sh LAB_VARIANT=systemd): napi-get
# but no napi-set, the server kernel a RHEL 10 user may have
OLD_KERNEL = "base-systemd"
MODES = ("base", "defer10", "defer20", "defer50", "defer200", "napibusy", "fullbusy",
         "suspend0", "suspend10", "suspend20", "suspend50", "suspend200", "recommend", "auto")


def missing():
    for kernel in (KERNEL, OLD_KERNEL):
        reason = labvm.missing(kernel)
        if reason:
            return reason
    for tool in ("ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            return "%s not found" % tool
    return None


def boot(link, role, kernel, disk=None):
    """A guest of the testbed: the server keeps its disk (it reboots into
    OLD_KERNEL), the client boots a throw-away snapshot."""
    ip, mac, smp = {"server": (SERVER_IP, SERVER_MAC, 4), "client": (CLIENT_IP, CLIENT_MAC, 2)}[role]
    return labvm.Guest(kernel=kernel, cmdline=BOOT_ARGS, smp=smp, ip=ip, mac=mac, link=link, disk=disk,
                       name="bench-%s-%d" % (role, os.getpid()))


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    reason = missing()
    if reason:
        pytest.skip(reason)
    work = tmp_path_factory.mktemp("bench-hosts")
    key = ssh_key(work, "irqtune-bench-hosts")
    disk = labvm.persistent_disk(KERNEL)
    bed = types.SimpleNamespace(key=key, work=work, disk=disk, guests=[])
    with labvm.Link() as link:
        bed.link = link
        try:
            for role in ("server", "client"):
                g = boot(link, role, KERNEL, disk if role == "server" else None)
                bed.guests.append(g)
                g.start()
                h = Host7(g)
                if role == "server":
                    h.install_project()         # irqtune itself: the server's profiles and preload
                else:
                    h.copy_share()
                h.sh("make -C %s install-bench PYTHON=/usr/bin/python3 "
                     ">/root/make-install-bench.log 2>&1 || { tail -n 30 /root/make-install-bench.log; exit 1; }"
                     % SRC, timeout=600)
                h.admit_ssh_key(key)
                setattr(bed, role, h)
            bed.server.serve_memcached_on_nic()
            scan = subprocess.run(link.exec_argv(["ssh-keyscan", "-T", "20", SERVER_IP, CLIENT_IP]),
                                  capture_output=True, text=True, timeout=120)
            assert scan.returncode == 0 and scan.stdout.count("\n") >= 2, scan.stderr
            (work / "known_hosts").write_text(scan.stdout)
            (work / "unknown_hosts").write_text("")
            yield bed
        finally:
            for g in bed.guests:
                g.shutdown()
            shutil.rmtree(disk.parent, ignore_errors=True)


def tuned_state(h):
    """What the bench must put back: TuneD's profile, how it was chosen,
    the variables file."""
    return (h.tuned_adm("active")[1].strip(), h.tuned_adm("profile_mode")[1].strip(),
            h.g.read_file("/etc/tuned/latency-suspend-variables.conf"))


def bench(bed, command, *args, known="known_hosts", timeout=600):
    key, work = bed.key, bed.work
    argv = bed.link.exec_argv([
        sys.executable, "-m", "irqtune_bench", command,
        "--server", "root@" + SERVER_IP, "--client", "root@" + CLIENT_IP, "--server-addr", SERVER_IP,
        "--ssh-option", "IdentityFile=%s" % key, "--ssh-option", "UserKnownHostsFile=%s" % (work / known),
        "--ssh-option", "LogLevel=ERROR", *args])
    res = subprocess.run(argv, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO / "bench")),
                         capture_output=True, text=True, timeout=timeout)
    print(res.stdout)
    print(res.stderr[-6000:])
    return res


def failing_check(bed, breaks, mends):
    """check's answer while the server is broken by the shell line breaks
    (put right by mends afterwards); it must exit 1."""
    bed.server.sh(breaks)
    try:
        res = bench(bed, "check")
    finally:
        bed.server.sh(mends)
    assert res.returncode == 1
    return res


def test_check_passes_and_names_each_failure_with_its_fix(hosts):
    res = bench(hosts, "check")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "ok    ssh root@10.77.0.2 (server): key login as root, host key known" in res.stdout
    assert "rx queue 2 serves CPU 2; the bench steers the load there with source ports" in res.stdout
    assert "FAIL" not in res.stdout
    # what a new user meets, one line each, with the fix
    res = bench(hosts, "check", known="unknown_hosts")
    assert res.returncode == 1
    assert "FAIL  ssh root@10.77.0.2 (server): the host key of 10.77.0.2 is not known here" in res.stdout
    assert "fix: ssh-keyscan 10.77.0.2 >> ~/.ssh/known_hosts" in res.stdout
    res = failing_check(hosts, "systemctl stop memcached", "systemctl start memcached")
    assert "FAIL  memcached is not active on the server (systemctl: inactive)" in res.stdout
    assert "fix: systemctl enable --now memcached" in res.stdout
    assert "does not answer" not in res.stdout      # what follows from it is not said again
    res = failing_check(hosts,
                        "nft add table inet irqtune_test && nft add chain inet irqtune_test input "
                        "'{ type filter hook input priority 0; }' && "
                        "nft add rule inet irqtune_test input tcp dport 11211 drop",
                        "nft delete table inet irqtune_test")
    assert "FAIL  client: memcached on 10.77.0.2:11211 does not answer (mcload: connect: Connection timed out; " \
        "the server's nftables has an input chain)" in res.stdout
    assert "fix: accept tcp dport 11211 in the server's nftables input chain" in res.stdout


def test_the_whole_bench_over_ssh_sets_and_reads_back_every_mode(hosts):
    server = hosts.server
    before = tuned_state(server)
    results = hosts.work / "results"
    res = bench(hosts, "run", "--modes", ",".join(MODES), "--repeats", "1", "--seconds", "2",
                "--fractions", "0.5", "--generators", "2", "--probe-seconds", "1", "--out", str(results),
                timeout=5400)
    assert res.returncode == 0, res.stderr[-3000:]
    report = json.loads((results / "irqtune-bench.json").read_text())
    runs = report["runs"]
    assert sorted(r["mode"] for r in runs) == sorted(MODES)
    assert not [r for r in runs if r.get("failed")], runs
    assert report["saturation"]["rate"] and report["saturation"]["side"] in ("server", "client")
    for r in runs:
        # the read-back the run was admitted on: every rx NAPI holds the
        # mode (auto's values are the daemon's measured ones: not zero)
        napis = {n["id"]: n for n in r["readback"]["napis"]}
        rx = set(r["readback"]["rx_queues"].values())
        m = report["modes"][r["mode"]]
        for value, attr in (("irq_suspend_timeout_ns", "irq-suspend-timeout"),
                            ("gro_flush_timeout_ns", "gro-flush-timeout"), ("defer_hard_irqs", "defer-hard-irqs")):
            assert rx and all(napis[i][attr] == m[value] or (m[value] == "auto" and napis[i][attr])
                              for i in rx), (r["mode"], attr, r["readback"])
        assert r["readback"]["memcached_cpus"] == [2]
        assert r["measured"] > 0 and r["p99_us"] is not None and r["generators"] == 2
        # steered: the source ports landed on queue 2, and the run's
        # packets came in there
        assert "rx queue 2" in r["steering"] and r["rx_queues_used"] == [2], r
        # no PMU in a TCG guest: the cost is CPU time per request
        assert r["cpu_us_per_request"] > 0
    table = (results / "irqtune-bench.txt").read_text()
    for m in MODES:
        # starred: the cell's runs were all disturbed (a TCG client's
        # generator is milliseconds late), its figures shown all the same
        assert re.search(r"\n%s\*? +\d" % m, table), m
    assert re.search(r"offered \d+: suspend20 against fullbusy \([01] paired rounds\): p99 ", table), table
    assert "instructions not counted; CPU time/request" in table
    # every cell disturbed, drawn hollow; no PMU: cost plotted as CPU time
    assert sorted(p.name for p in results.glob("*.png")) == ["irqtune-bench-cpu.png", "irqtune-bench-p99.png"]
    assert report["nic"] == server.nic
    # what the bench changed on the server is put back
    assert tuned_state(server) == before
    assert server.run("test", "-e", "/etc/systemd/system/memcached.service.d/40-irqtune-bench.conf")[0] != 0


def test_a_server_kernel_without_napi_settings_is_named_before_a_run(hosts):
    """The server rebooted from its disk (irqtune, memcached, the host key
    as they were) into Linux 6.12 without the series."""
    old = hosts.guests[0]
    old.shutdown()
    g = boot(hosts.link, "server", OLD_KERNEL, hosts.disk)
    hosts.guests[0] = g
    g.start()
    hosts.server = Host7(g)
    release = hosts.server.sh("uname -r").strip()
    assert release.startswith("6.12"), release
    hosts.server.sh("for i in $(seq 60); do systemctl is-active -q ssh memcached tuned && exit 0; "
                    "sleep 1; done; systemctl --no-pager status ssh memcached tuned; exit 1")
    res = bench(hosts, "check")
    assert res.returncode == 1
    assert re.search(r"FAIL  server kernel %s has no per-NAPI defer-hard-irqs, gro-flush-timeout, "
                     r"irq-suspend-timeout: modes \S*suspend20" % re.escape(release), res.stdout), res.stdout
    assert res.stdout.count("FAIL") == 1
    assert "fix: boot a kernel with IRQ suspension (Linux 6.13 or later" in res.stdout
    # what works on it is still said: the rest of the checks ran
    assert "ok    ssh root@10.77.0.2 (server)" in res.stdout
    # run makes the same checks first and changes nothing
    before = tuned_state(hosts.server)
    res = bench(hosts, "run", "--modes", "suspend20", "--out", str(hosts.work / "refused"))
    assert res.returncode != 0
    assert "has no per-NAPI defer-hard-irqs" in res.stdout + res.stderr
    assert not (hosts.work / "refused" / "irqtune-bench.json").exists()
    assert tuned_state(hosts.server) == before
