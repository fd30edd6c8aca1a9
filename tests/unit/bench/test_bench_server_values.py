# SPDX-License-Identifier: GPL-2.0-or-later
"""Values the bench writes into the server's files (issue 47 item 9):
--nic goes into latency-suspend's variables file (suspend_nics=), the
service into it (optin_services=) and into the drop-in's directory name,
the shim's path into the drop-in (Environment="LD_PRELOAD=..."), each
mode's values into the variables file.  Each is checked for what its
file accepts and refused in one line before anything is changed -
whether it came from an argument, from the server (the NIC holding
--server-addr, the shim's path it reports) or from the doctor there
(the recommend mode's values)."""

import base64
import copy
import json

import pytest

from irqtune_bench import cli, runner
from irqtune_bench.guard import BadArgument, BenchError

from support.bench import DOCTOR, FIX, RUN, FakeServer, FakeTestbed, args, bench

LONG = "x" * 300


def settings_of(option, value):
    """(--nic=-eth0: a value starting with - is an option's, not a value, to argparse)"""
    return cli.ssh_settings(cli.parser().parse_args(RUN + ["%s=%s" % (option, value)]))


@pytest.mark.parametrize("option,value", [
    ("--nic", "eth0\nExecStartPre=/bin/sh"),        # issue 47: a line of the operator's making
    ("--nic", 'eth0"'), ("--nic", "eth 0"), ("--nic", "eth0/1"), ("--nic", "eth0:1"), ("--nic", ""),
    ("--nic", "."), ("--nic", ".."), ("--nic", "sixteen-chars-xx"), ("--nic", "-eth0"), ("--nic", "eth0,eth1"),
    ("--nic", "eth*"), ("--nic", "eth\x1b0"), ("--nic", "\u0435th0"),
    ("--service", "memcached\nExecStartPre=/bin/sh"), ("--service", 'memcached"'), ("--service", "mem cached"),
    ("--service", "memcached,redis"), ("--service", "memcached.socket"), ("--service", "." + LONG),
    ("--service", LONG), ("--service", "a$b"), ("--service", "m%i"),
    ("--shim", "/usr/lib64/x.so\nExecStartPre=/bin/sh"), ("--shim", '/usr/lib64/x.so"'),
    ("--shim", "lib/x.so"), ("--shim", "/usr/lib 64/x.so"), ("--shim", "/usr/lib64/%h.so"),
    ("--shim", "/usr/lib64/x.so:/tmp/y.so"), ("--shim", "/usr/lib64/x\\.so"),
], ids=lambda v: ascii(v)[:40])
def test_a_value_its_file_does_not_accept_is_refused_in_one_line(option, value):
    with pytest.raises(BadArgument) as refused:
        settings_of(option, value)
    message = str(refused.value)
    assert message.startswith(option + " ") and "accepted" in message, message
    assert "\n" not in message and len(message) < 400, message


@pytest.mark.parametrize("option,value", [
    ("--nic", "ens3"), ("--nic", "enp0s31f6"), ("--nic", "fifteen-chars-x"), ("--nic", "eth0.100"),
    ("--nic", "br_lan-1"), ("--service", "memcached"), ("--service", "memcached.service"),
    ("--service", "memcached@11211"), ("--service", "foo\\x2dbar"),
    ("--shim", "/usr/lib64/irqtune-bench/epoll_slice.so"),
    ("--shim", "/opt/irqtune_bench-1.2/lib/epoll_slice.so"),
], ids=lambda v: ascii(v)[:40])
def test_the_values_real_servers_use_are_taken(option, value):
    settings_of(option, value)


def test_the_refusal_is_one_line_exit_2_before_any_host_is_contacted():
    res = bench(*RUN, "--nic", "eth0\nExecStartPre=/bin/sh -c id")
    assert res.returncode == 2, res
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("irqtune-bench run: --nic eth0\\"), res.stderr
    assert "accepted" in res.stderr


def test_the_lab_script_checks_the_service_too():
    ns = cli.parser().parse_args(RUN + ["--service", "memcached\nExecStartPre=/bin/sh"])
    with pytest.raises(BadArgument, match="--service"):
        cli.run_settings(ns)


def no_change(server):
    """Nothing was written, installed, reloaded or switched."""
    changes = [a for a in server.log if a[:3] == ["sh", "-c", runner.WRITE] or a[0] == "install"
               or a[:2] in (["tuned-adm", "profile"], ["systemctl", "daemon-reload"], ["systemctl", "restart"])]
    assert changes == [], changes


def test_a_nic_name_the_server_gives_is_checked_before_any_change():
    """The NIC found from --server-addr: the server's `ip -j addr show`."""
    server = FakeServer()
    crafted = json.loads(FIX["ip_j_addr"])
    for link in crafted:
        if any(a.get("local") == "10.77.0.2" for a in link.get("addr_info", [])):
            link["ifname"] = "ens3\nsuspend_nics=*"
    real = server.run
    server.run = lambda argv, timeout=60, input=None: (0, json.dumps(crafted), "") if argv[:2] == ["ip", "-j"] \
        else real(argv, timeout, input)
    with pytest.raises(BenchError, match=r"ens3\\.*suspend_nics=\*: accepted an interface name"):
        runner.run_bench(FakeTestbed(server), args(modes="base", loads="500", repeats=1), lambda m: None, {},
                         lambda: None)
    no_change(server)
    assert server.files == {runner.VARIABLES: "# the administrator's own\n#defer_hard_irqs=100\n"}


def test_a_shim_path_the_server_gives_is_checked_before_any_change():
    server = FakeServer()
    tb = FakeTestbed(server)
    tb.shim = '/usr/lib64/x.so"\nExecStartPre=/bin/sh -c id\n#'
    with pytest.raises(BenchError, match="accepted"):
        runner.run_bench(tb, args(modes="fullbusy", loads="500", repeats=1), lambda m: None, {}, lambda: None)
    no_change(server)


@pytest.mark.parametrize("key,value", [
    ("defer_hard_irqs", "100\nextra=1"), ("gro_flush_timeout_ns", "20us\nextra=1"), ("irq_suspend_timeout_ns", -1),
    ("defer_hard_irqs", 2 ** 40), ("gro_flush_timeout_ns", 1.5), ("irq_suspend_timeout_ns", None),
])
def test_recommended_values_are_checked_before_they_are_written(key, value):
    """The doctor on the server answers the recommend mode's values: a
    value the variables file does not take fails that mode, named."""
    server = FakeServer()
    doctor = copy.deepcopy(DOCTOR)
    doctor["recommend"][key] = value
    server.doctor = (0, json.dumps(doctor), "")
    written = []
    real = server.run

    def recorded(argv, timeout=60, input=None):
        if argv[:3] == ["sh", "-c", runner.WRITE]:
            written.append(base64.b64decode(input).decode())
        return real(argv, timeout, input)
    server.run = recorded
    report = {}
    failed = runner.run_bench(FakeTestbed(server), args(modes="suspend20,recommend", loads="500", repeats=1),
                              lambda m: None, report, lambda: None)
    assert {r["mode"] for r in failed} == {"recommend"}
    assert key in report["recommend"][0]["failed"], report["recommend"]
    assert not any("# irqtune-bench mode recommend" in text for text in written), written
