# SPDX-License-Identifier: GPL-2.0-or-later
"""The metrics' systemd unit, sysusers.d and tmpfiles.d entries and the PCP
entry: `irqtune metrics` runs without root, writes only a directory of its
own, and lands where the distribution's node_exporter reads (issue 35,
items 2 and 9).  The running unit is checked by
tests/integration/test_install_modes.py (the service's command as its user,
node_exporter reading through the link)."""

import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
METRICS = os.path.join(ROOT, "metrics")
USER = "irqtune-metrics"


def service():
    """{(section, key): [values]}: systemd allows repeated keys."""
    values = {}
    with open(os.path.join(METRICS, "irqtune-metrics.service")) as f:
        section = None
        for line in f:
            line = line.strip()
            if line.startswith("["):
                section = line.strip("[]")
            elif "=" in line and not line.startswith("#"):
                key, value = line.split("=", 1)
                values.setdefault((section, key), []).append(value)
    return values


def tmpfiles_lines(text):
    return [l.split() for l in text.splitlines() if l.strip() and not l.startswith("#")]


def test_service_runs_as_its_own_user_and_writes_only_its_directory():
    s = service()
    assert s[("Service", "User")] == [USER] and s[("Service", "Group")] == [USER]
    assert s[("Service", "StateDirectory")] == ["irqtune-metrics"]
    assert s[("Service", "ProtectSystem")] == ["strict"]
    assert s[("Service", "CapabilityBoundingSet")] == [""]
    assert s[("Service", "NoNewPrivileges")] == ["true"]
    assert s[("Service", "Environment")] == \
        ["IRQTUNE_METRICS_FILE=/var/lib/irqtune-metrics/irqtune.prom"]
    assert s[("Service", "ExecStart")] == \
        ["/usr/bin/irqtune metrics --output ${IRQTUNE_METRICS_FILE}"]
    # settings where Debian (/etc/default) and RHEL (/etc/sysconfig) keep them
    assert sorted(s[("Service", "EnvironmentFile")]) == \
        ["-/etc/default/irqtune-metrics", "-/etc/sysconfig/irqtune-metrics"]


def test_sysusers_creates_the_user():
    with open(os.path.join(METRICS, "irqtune-metrics.sysusers")) as f:
        lines = [l.split()[:3] for l in f if l.strip() and not l.startswith("#")]
    assert lines == [["u", USER, "-"]]


@pytest.mark.parametrize("textfile_dir", [None, "/srv/textfiles"])
def test_install_links_the_file_into_the_distributions_textfile_directory(tmp_path, textfile_dir):
    argv = ["make", "-s", "-C", ROOT, "install-metrics", "DESTDIR=%s" % tmp_path]
    if textfile_dir:
        argv.append("METRICS_TEXTFILE_DIR=%s" % textfile_dir)
    subprocess.run(argv, check=True, capture_output=True)
    wanted = textfile_dir or ("/var/lib/prometheus/node-exporter"
                              if os.path.exists("/etc/debian_version")
                              else "/var/lib/node_exporter/textfile_collector")
    link = tmp_path / wanted.lstrip("/") / "irqtune.prom"
    assert os.readlink(link) == "/var/lib/irqtune-metrics/irqtune.prom"
    text = (tmp_path / "usr/lib/tmpfiles.d/irqtune-metrics.conf").read_text()
    assert tmpfiles_lines(text) == [
        ["d", "/var/lib/irqtune-metrics", "0755", USER, USER, "-"],
        ["f", "/var/lib/irqtune-metrics/irqtune.prom", "0644", USER, USER, "-"]]
    assert (tmp_path / "usr/lib/sysusers.d/irqtune-metrics.conf").exists()
    for dirpath, dirnames, filenames in os.walk(tmp_path):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                assert not os.lstat(path).st_mode & 0o022, path
    subprocess.run(argv[:4] + ["uninstall-metrics"] + argv[5:], check=True, capture_output=True)
    assert not os.path.lexists(link)


def fake_bin(tmp_path, uid, user_exists=True):
    """id and setpriv stand-ins recording how the PCP entry runs irqtune."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "id").write_text(
        "#!/bin/sh\n"
        "if [ \"$1\" = -u ]; then echo %d; exit 0; fi\n"
        "exit %d\n" % (uid, 0 if user_exists else 1))
    (bindir / "setpriv").write_text("#!/bin/sh\necho setpriv \"$@\"\n")
    for f in bindir.iterdir():
        f.chmod(0o755)
    return str(bindir)


def run_pcp_entry(tmp_path, uid, user_exists=True):
    env = dict(os.environ, PATH=fake_bin(tmp_path, uid, user_exists) + ":/usr/bin:/bin",
               IRQTUNE="echo irqtune")
    return subprocess.run([os.path.join(METRICS, "irqtune.pcp.sh")], env=env,
                          capture_output=True, text=True)


def test_pcp_entry_started_as_root_drops_to_the_metrics_user(tmp_path):
    p = run_pcp_entry(tmp_path, 0)
    assert p.returncode == 0, p.stderr
    argv = p.stdout.split()
    assert argv[0] == "setpriv"
    assert {"--reuid=" + USER, "--regid=" + USER, "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--no-new-privs"} <= set(argv)
    assert argv[argv.index("--") + 1:] == ["echo", "irqtune", "metrics"]


def test_pcp_entry_as_root_without_the_user_refuses_in_one_line(tmp_path):
    p = run_pcp_entry(tmp_path, 0, user_exists=False)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and USER in p.stderr


def test_pcp_entry_unprivileged_runs_irqtune_as_it_is(tmp_path):
    p = run_pcp_entry(tmp_path, 994)
    assert p.returncode == 0 and p.stdout == "irqtune metrics\n", p.stdout + p.stderr
