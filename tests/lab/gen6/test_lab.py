# SPDX-License-Identifier: GPL-2.0-or-later
"""Self-tests of the kernel lab itself: agent protocol, timeouts, the
repository share, the guest userspace other lab tests rely on."""

from support import labvm


def test_run_returns_rc_and_stdout(guest):
    assert guest.run(["sh", "-c", "echo out; echo err >&2; exit 3"]) == (3, "out\n")
    assert guest.last_stderr == "err\n"


def test_run_timeout_kills_process_group(guest):
    res = guest.execute(["sh", "-c", "sleep 100 & sleep 100"], timeout=2)
    assert res["timed_out"] and res["rc"] == -9 and res["seconds"] < 20
    # Neither sleep survives, and the agent still answers.
    rc, out = guest.run(["sh", "-c", "ps -eo comm | grep -c '^sleep$' || true"])
    assert out.strip() == "0"


def test_missing_command_and_stdin(guest):
    assert guest.run(["/nonexistent/tool"])[0] == 127
    assert guest.run(["cat"], input="hello\n") == (0, "hello\n")


def test_large_output(guest):
    rc, out = guest.run(["sh", "-c", "yes x | tr -d '\\n' | head -c 3000000"], timeout=60)
    assert rc == 0 and out == "x" * 3000000


def test_write_and_read_file(guest):
    assert guest.write_file("/tmp/lab-test", "a b\n") == 0
    assert guest.read_file("/tmp/lab-test") == "a b\n"


def test_repo_share_is_read_only(guest):
    rc, _ = guest.run(["test", "-f", labvm.GUEST_REPO + "/tests/support/labvm.py"])
    assert rc == 0
    rc, _ = guest.run(["touch", labvm.GUEST_REPO + "/lab-write-test"])
    assert rc != 0


def test_guest_userspace(guest):
    rc, out = guest.run(["python3", "-c", "import pyroute2, pytest, tuned; print('ok')"])
    assert (rc, out) == (0, "ok\n"), guest.last_stderr
    for tool in ("ethtool", "ip", "tuned", "tuned-adm", "dbus-daemon", "make"):
        assert guest.run(["sh", "-c", "command -v " + tool])[0] == 0, tool


def test_guest_kernel_config(guest):
    rc, out = guest.run(["sh", "-c", "zcat /proc/config.gz"])
    assert rc == 0
    for opt in ("CONFIG_NO_HZ_FULL=y", "CONFIG_CPU_ISOLATION=y", "CONFIG_IRQ_TIME_ACCOUNTING=y",
                "CONFIG_NETDEVSIM=y", "CONFIG_NET_RX_BUSY_POLL=y", "CONFIG_VIRTIO_NET=y"):
        assert opt in out.splitlines(), opt


def test_flood_reaches_guest(guest):
    def rx_packets():
        return int(guest.read_file("/sys/class/net/%s/statistics/rx_packets" % guest.nic))
    before = rx_packets()
    report = guest.flood(seconds=1, count=2000)
    assert 0 < report["sent"] <= 2000
    assert rx_packets() - before > 0
