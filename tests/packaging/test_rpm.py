# SPDX-License-Identifier: GPL-2.0-or-later
"""rpmbuild on the committed tree, and what each package holds."""

import glob
import os
import shutil
import subprocess

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SITE = "/usr/lib/python3.%d/site-packages"


def rpm_q(path, *query):
    return subprocess.run(["rpm", "-qp", *query, path], check=True, capture_output=True,
                          text=True).stdout.split("\n")


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    if not shutil.which("rpmbuild"):
        pytest.skip("rpmbuild is not installed")
    top = tmp_path_factory.mktemp("rpm")
    subprocess.run(["make", "-C", ROOT, "rpm", "RPMTOP=%s" % top],
                   check=True, capture_output=True, text=True)
    found = {}
    for path in glob.glob(str(top / "RPMS/*/*.rpm")):
        found[rpm_q(path, "--qf", "%{NAME}")[0]] = path
    return found


def test_packages_and_architectures(packages):
    assert set(packages) == {"tuned-plugins-irqtune", "tuned-profiles-irqtune",
                             "irqtune-kernel-patches", "irqtune-preload"}
    for name, path in packages.items():
        arch = rpm_q(path, "--qf", "%{ARCH}")[0]
        assert (arch == "noarch") == (name != "irqtune-preload"), (name, arch)


def test_plugin_package_puts_library_and_plugins_where_tuned_looks(packages):
    files = rpm_q(packages["tuned-plugins-irqtune"], "-l")
    site = [f for f in files if f.endswith("/site-packages/irqtune/napi.py")]
    assert site, files
    plugins = os.path.dirname(site[0]).replace("/irqtune", "/tuned/plugins")
    assert plugins + "/plugin_napi.py" in files
    assert plugins + "/irqtune_common.py" in files
    requires = rpm_q(packages["tuned-plugins-irqtune"], "--requires")
    assert "tuned" in requires and "python3-pyroute2" in requires


def test_profile_package(packages):
    path = packages["tuned-profiles-irqtune"]
    files = rpm_q(path, "-l")
    assert any(f.endswith("/latency-suspend/tuned.conf") for f in files), files
    assert "/etc/tuned/latency-suspend-variables.conf" in rpm_q(path, "-c")
    assert any(r.startswith("tuned-plugins-irqtune = 0.") for r in rpm_q(path, "--requires"))


def test_kernel_patch_package(packages):
    files = rpm_q(packages["irqtune-kernel-patches"], "-l")
    for series in ("gsim", "housekeeping-vectors"):
        assert "/usr/share/irqtune/kernel-patches/%s/series" % series in files
        assert any(f.endswith("0000-cover-letter.patch") and series in f for f in files)


def test_preload_package(packages):
    files = rpm_q(packages["irqtune-preload"], "-l")
    assert any(f.endswith("/irqtune/libirqtune-busypoll.so") for f in files), files
    assert "/usr/bin/irqtune-busypoll-run" in files
