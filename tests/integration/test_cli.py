# SPDX-License-Identifier: GPL-2.0-or-later
"""The installed `irqtune` command (make install puts it in BINDIR) against
real veth NAPIs in a namespace, with a PATH whose first python3 is not the
one the library was installed for (as with pyenv or a virtualenv)."""

import os
import shutil
import subprocess

import pytest


@pytest.fixture
def foreign_python_first(tmp_path):
    """A PATH whose python3 is a stub that fails, then the system's."""
    stub = tmp_path / "python3"
    stub.write_text("#!/bin/sh\necho 'not the Python irqtune lives in' >&2\nexit 3\n")
    stub.chmod(0o755)
    return "%s:%s" % (tmp_path, os.environ.get("PATH", "/usr/bin:/bin"))


def test_status_lists_every_napi_of_the_device(netns, foreign_python_first):
    command = shutil.which("irqtune", path="/usr/local/bin:/usr/bin")
    assert command, "make install did not put irqtune on PATH"
    netns.add_veth("vcli", queues=2)
    try:
        result = subprocess.run(["ip", "netns", "exec", netns.name, "irqtune", "status", "vcli"],
                                capture_output=True, text=True, timeout=60,
                                env=dict(os.environ, PATH=foreign_python_first))
        assert result.returncode == 0, result.stderr
        rows = [line.split() for line in result.stdout.splitlines()
                if line.split()[:1] == ["vcli"]]
        assert len(rows) == 2, result.stdout      # one NAPI per rx queue of veth
    finally:
        netns.exec("ip", "link", "del", "vcli", check=False)


def test_status_rows_show_what_the_kernel_holds_for_each_napi(netns):
    """Each NAPI gets distinct values (set without the library); every row of
    `python3 -m irqtune status` must carry its NAPI's id and those values."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    netns.add_veth("vcls", queues=3)
    try:
        with netns.entered():
            from support.rawnapi import RawGenl
            nl = RawGenl()
            try:
                for i, napi in enumerate(sorted(nl.napis("vcls"), key=lambda n: n["id"])):
                    nl.set(napi["id"], defer_hard_irqs=11 + i, gro_flush_timeout=5000 + i)
            finally:
                nl.close()
        expected = {n["id"]: n for n in netns.napis("vcls")}
        assert len(expected) == 3
        result = subprocess.run(["ip", "netns", "exec", netns.name, "/usr/bin/python3", "-m",
                                 "irqtune", "status", "vcls"], cwd=repo,
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        # Inside a netns the global busy_poll sysctl is invisible: not "missing".
        assert "kernel: PREEMPT_RT: no, busy polling: cannot tell (not in the initial network " \
               "namespace)" in lines, result.stdout
        assert not [l for l in lines if l.startswith("missing:")], result.stdout
        header = [l.split() for l in lines if l.split()[:2] == ["device", "napi"]][0]
        rows = {int(r[1]): dict(zip(header[2:], r[2:])) for r in
                (line.split() for line in result.stdout.splitlines()) if r[:1] == ["vcls"]}
        assert set(rows) == set(expected), result.stdout
        for napi_id, row in rows.items():
            for column in ("defer-hard-irqs", "gro-flush-timeout"):
                assert row[column] == str(expected[napi_id][column]), (napi_id, column, result.stdout)
    finally:
        netns.exec("ip", "link", "del", "vcls", check=False)


def test_watch_of_a_device_removed_meanwhile_ends_in_one_line(netns):
    """`status --watch` on a veth that is deleted while it is watched: one
    line naming the device, exit 1, no traceback."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    netns.add_veth("vgone", queues=2)
    proc = netns.popen("/usr/bin/python3", "-m", "irqtune", "status", "--watch",
                       "--interval", "0.2", "vgone", cwd=repo, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    try:
        header = proc.stdout.readline()     # the first sample was printed
        assert header.split()[:2] == ["device", "napi"], (header, proc.stderr.read())
        netns.exec("ip", "link", "del", "vgone")
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        netns.exec("ip", "link", "del", "vgone", check=False)
    lines = err.splitlines()
    assert proc.returncode == 1, (proc.returncode, err)
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("irqtune status: "), lines
