# SPDX-License-Identifier: GPL-2.0-or-later
"""The RPMs' files under TuneD 2.27 and systemd (issue: packages that run on
the TuneD RHEL 10 and Fedora ship).

The packages are built on the host with `make rpm` from the committed
tree, for the guest's Python layout (TuneD 2.27 lives in Debian's
/usr/lib/python3/dist-packages; the 2.23+ profile layout; RHEL's
/usr/lib64), unpacked with rpm2cpio and copied over a freshly booted guest
that has no other irqtune installation: what runs is exactly what the
packages carry.  Debian has no rpm database for them, so this is `rpm -i
--nodeps` without the bookkeeping.
"""

import subprocess
from pathlib import Path

import pytest

from support.host7 import BOOT_ARGS, KERNEL, NON_DEFAULT_ORIGINALS, SUSPEND_VALUES, Host7, napi_values

REPO = Path(__file__).resolve().parents[3]
TOP = REPO / "build" / "rpm-guest7"
SHARE = "/irqtune/build/rpm-guest7/root"
DEFINES = ('--define "python3_sitelib /usr/lib/python3/dist-packages" '
           '--define "tuned_profile_dir /usr/lib/tuned/profiles" --define "_libdir /usr/lib64"')
VARS = "latency-suspend"
# Every package irqtune.spec builds (irqtune-bench since issue 31).
PACKAGES = sorted(["irqtune-bench", "irqtune-kernel-patches", "irqtune-metrics", "irqtune-preload",
                   "python3-irqtune", "tuned-plugins-irqtune", "tuned-profiles-irqtune",
                   "tuned-profiles-irqtune-realtime"])


@pytest.fixture(scope="module")
def unpacked():
    """build/rpm-guest7/root: every built RPM unpacked (rpm2cpio | cpio)."""
    subprocess.run(["rm", "-rf", str(TOP)], check=True)
    build = subprocess.run(["make", "-C", str(REPO), "rpm", "RPMTOP=%s" % TOP,
                            "RPM_DEFINES=%s" % DEFINES], capture_output=True, text=True)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    root = TOP / "root"
    root.mkdir()
    rpms = sorted(TOP.glob("RPMS/*/*.rpm"))
    assert sorted(p.name.rsplit("-", 2)[0] for p in rpms) == PACKAGES, rpms
    for rpm in rpms:
        subprocess.run("rpm2cpio %s | cpio -idm --quiet" % rpm, shell=True, cwd=root, check=True)
    return root


@pytest.fixture
def h(lab, unpacked):
    """A fresh guest (never `make install`ed) with the packages' files."""
    g = lab.boot(kernel=KERNEL, cmdline=BOOT_ARGS)
    host = Host7(g)
    assert host.run("test", "-e", "/usr/lib/python3/dist-packages/irqtune")[0] != 0
    host.sh("cp -a %s/. / && systemctl restart tuned && systemctl is-active tuned" % SHARE)
    yield host
    host.off()
    g.shutdown()       # nobody else may get a guest with these files


def test_latency_suspend_from_the_packaged_files(h, unpacked):
    for rel in ("usr/lib/python3/dist-packages/tuned/plugins/plugin_napi.py",
                "usr/lib/tuned/profiles/latency-suspend/tuned.conf",
                "etc/tuned/latency-suspend-variables.conf",
                "usr/lib64/irqtune/libirqtune-busypoll.so", "usr/bin/irqtune"):
        assert (unpacked / rel).exists(), rel
        assert h.run("cmp", "/" + rel, "%s/%s" % (SHARE, rel))[0] == 0, rel
    napis = h.napis()
    for nid in napis:
        h.napi_set(nid, **NON_DEFAULT_ORIGINALS)
    rc, out = h.tuned_adm("list")
    assert rc == 0 and "latency-suspend" in out and "realtime-virtual-host-irqtune" in out, out
    log = h.profile(h.lab_profile(), variables={VARS: {"suspend_nics": h.nic,
                                                       "optin_services": "memcached",
                                                       "optin_restart": "true"}})
    assert "Traceback" not in log, log
    assert all(napi_values(n) == SUSPEND_VALUES for n in h.napis().values()), h.napis()
    ok, vlog = h.verify()
    assert ok, vlog
    # the packaged preload, found by the plugin at RHEL's path
    assert "/usr/lib64/irqtune/libirqtune-busypoll.so" in h.main_pid_maps("memcached")
    rc, out = h.run("irqtune", "status", h.nic)
    assert rc == 0 and out.count(h.nic) >= len(napis), out
    h.off()
    assert all(napi_values(n) == NON_DEFAULT_ORIGINALS for n in h.napis().values()), h.napis()
    assert "libirqtune-busypoll" not in h.main_pid_maps("memcached")
