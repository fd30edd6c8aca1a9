# SPDX-License-Identifier: GPL-2.0-or-later
"""Names that are not UTF-8, chosen by another user, with the real kernel
(issue 47 item 4): a server running as nobody names itself b"srv\\xff\\xfe"
(prctl PR_SET_NAME), maps a file whose name holds b"\\xff", and receives
over a veth whose end in its namespace is named b"v\\xff0".  `irqtune
doctor --pid` (which reads its /proc/PID/stat, comm and maps, and the
namespace's /proc/net/dev) and `irqtune metrics` run against it; the
metrics' reader of an opted-in service's maps is run on it too.  Before,
both ended in UnicodeDecodeError.
"""

import os
import shutil
import subprocess
import sys

import pytest

from support.fakes.systemd import FakeSystemd
from support.netns import EPOLL_SERVER_LOOP, NetNs, veth_between
from support.waiting import wait_for

from irqtune.frontends import activeprofile, metrics

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMM = b"srv\xff\xfe"
DEVICE = os.fsdecode(b"v\xff0")
SRV, CLI = "irqtune-nl-us", "irqtune-nl-uc"
SERVER_ADDR, CLIENT_ADDR, PORT = "10.250.92.1", "10.250.92.2", 7392

SERVER = r"""
import ctypes, mmap, os, select, socket, sys, tempfile
where = tempfile.mkdtemp(prefix="irqtune-undecodable-")
path = os.path.join(os.fsencode(where), b"map\xff.bin")
with open(path, "wb") as f:
    f.write(bytes(4096))
with open(path, "rb") as f:
    mapped = mmap.mmap(f.fileno(), 4096, prot=mmap.PROT_READ)
ctypes.CDLL(None).prctl(15, b"srv\xff\xfe", 0, 0, 0)      # PR_SET_NAME
ADDR, PORT, READY = sys.argv[1], int(sys.argv[2]), ("ready", where)
""" + EPOLL_SERVER_LOOP


@pytest.fixture(scope="module")
def bed():
    srv, cli = NetNs(SRV), NetNs(CLI)
    server = client = where = None
    try:
        veth_between(srv, cli, (DEVICE, "vuc"), (SERVER_ADDR, CLIENT_ADDR))
        server = srv.popen("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                           sys.executable, "-c", SERVER, SERVER_ADDR, str(PORT),
                           stdout=subprocess.PIPE, text=True, cwd="/")
        said, where = server.stdout.readline().split()
        assert said == "ready"
        pid = server.pid          # ip netns exec and setpriv exec: one pid
        wait_for(lambda: open("/proc/%d/comm" % pid, "rb").read() == COMM + b"\n", timeout=10,
                 what="the server's comm")
        # traffic through the veth NAPI, so that the connection gets a NAPI id
        client = cli.popen(sys.executable, "-c",
                           "import socket, sys, time\n"
                           "s = socket.create_connection((sys.argv[1], int(sys.argv[2])))\n"
                           "[s.sendall(b'x' * 1000) for _ in range(200)]\n"
                           "print('sent', flush=True)\n"
                           "time.sleep(600)\n", SERVER_ADDR, str(PORT),
                           stdout=subprocess.PIPE, text=True)
        assert client.stdout.readline().strip() == "sent"
        yield pid
    finally:
        for proc in (client, server):
            if proc is not None:
                proc.kill()
                proc.wait()
        srv.delete()
        cli.delete()
        if where:
            shutil.rmtree(where, ignore_errors=True)


def irqtune(*args, netns=None):
    argv = [sys.executable, "-m", "irqtune"] + list(args)
    if netns:
        argv = ["ip", "netns", "exec", netns] + argv
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=REPO))


def test_doctor_of_a_process_and_device_named_in_bytes_that_are_not_utf8(bed):
    pid = bed
    result = irqtune("doctor", "--pid", str(pid), "--seconds", "0.5")
    print(result.stdout, result.stderr)
    assert "unexpected error" not in result.stderr
    assert "pid %d ($'srv\\xff\\xfe')" % pid in result.stdout
    assert "($'v\\xff0')" in result.stdout          # the device, found through the socket
    assert result.stdout.splitlines()[-1].startswith("verdict: ")


def test_metrics_in_the_namespace_of_a_device_named_so(bed):
    result = irqtune("metrics", netns=SRV)
    assert result.returncode == 0, result.stderr
    assert "irqtune_device_rx_packets_total{device=" in result.stdout
    assert "xff0" in result.stdout, result.stdout


def test_metrics_of_an_opted_in_service_whose_process_maps_such_a_path(bed, tmp_path,
                                                                      monkeypatch):
    """The process found as the service's main process (systemd answers
    with its pid) maps a path that is not UTF-8: its maps are read."""
    pid = bed
    (tmp_path / "profiles/optin").mkdir(parents=True)
    (tmp_path / "active_profile").write_text("optin\n")
    (tmp_path / "profiles/optin/tuned.conf").write_text(
        "[main]\nsummary=test\n\n[busy_poll_optin]\nservices=srv\n")
    monkeypatch.setattr(activeprofile, "PROFILE_DIRS", (str(tmp_path / "profiles"),))
    families = {f.name: f for f in metrics.collect(
        etc=str(tmp_path), bus=FakeSystemd({"srv.service": {"MainPID": pid}}))}
    assert families["irqtune_optin_preload_loaded"].samples == [
        (dict(profile="optin", unit="busy_poll_optin", service="srv.service"), 0)]
