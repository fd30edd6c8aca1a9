# SPDX-License-Identifier: GPL-2.0-or-later
"""`irqtune-bench check`'s rules (bench/irqtune_bench/preflight.py): one
line per finding, with the fix, FAIL where a run would fail.

Facts as real servers gave them:
- bench_fixtures/server-facts-6.18-veth.json: `irqtune-bench
  server-facts vf0` on this project's Debian 12 host (Linux 6.18, no
  systemd as PID 1, no PMU), on a veth with GRO on in a namespace
  (2026-11-27): napi-get carries the three NAPI values; systemctl answers
  nothing; no memcached listens.
- bench_fixtures/server-state.json (2026-11-26): the lab guest's read-back
  (Linux 7.2, virtio-net, 4 rx queues, queue i's vector on CPU i).
ssh's complaints are OpenSSH's own lines (sshconnect.c, sshconnect2.c;
OpenSSH 9.x as Fedora 41 and RHEL 10 ship it).
"""

import json
import types
from pathlib import Path

import pytest

from irqtune_bench import preflight

HERE = Path(__file__).resolve().parent / "bench_fixtures"
VETH = json.loads((HERE / "server-facts-6.18-veth.json").read_text())
GUEST = json.loads((HERE / "server-state.json").read_text())["before"]


def settings(**kw):
    base = dict(modes=["suspend20", "fullbusy", "base"], service="memcached", server_addr="10.77.0.2",
                port=11211, memcached_cpu=2)
    return types.SimpleNamespace(**dict(base, **kw))


def healthy(**kw):
    """The veth host's facts as a prepared server would give them."""
    facts = dict(VETH, service="active", tuned="active", listening=["0.0.0.0"],
                 rx_queues=GUEST["rx_queues"], queue_irqs=GUEST["queue_irqs"], irq_cpus=GUEST["irq_cpus"])
    facts.update(kw)
    return facts


def levels(findings):
    return [(f.level, f.what.split(":")[0]) for f in findings]


def test_a_prepared_server_passes_and_says_so():
    found = preflight.judge(healthy(), settings(), None, 2)
    assert not preflight.failed(found), preflight.lines(found)
    text = "\n".join(preflight.lines(found))
    assert "rx queue 2 serves CPU 2" in text and "landed on rx queue 2 now" in text
    # no PMU on the host the facts came from: cost on CPU time, said as a note
    assert "note  server: no hardware instruction counter" in text


def test_the_veth_host_as_it_is_fails_with_each_fix():
    lines = "\n".join(preflight.lines(preflight.judge(VETH, settings(), "connect: Connection refused", None)))
    assert "FAIL  TuneD is not active on the server" in lines and "fix: systemctl enable --now tuned" in lines
    assert "FAIL  memcached is not active on the server" in lines
    assert "fix: systemctl enable --now memcached" in lines
    assert "no rx queue's interrupt is on CPU 2" in lines
    # what follows from a stopped memcached is not said twice
    assert "listens" not in lines and "does not answer" not in lines


def test_only_the_first_port_problem_is_named():
    lines = "\n".join(preflight.lines(preflight.judge(healthy(listening=[]), settings(),
                                                      "mcload: connect: Connection refused", None)))
    assert "FAIL  nothing listens on port 11211" in lines and "memcached -l 10.77.0.2 -p 11211" in lines
    assert "does not answer" not in lines
    lines = "\n".join(preflight.lines(preflight.judge(healthy(), settings(),
                                                      "mcload: connect: Connection timed out", None)))
    assert "ok    server: port 11211 listens on 0.0.0.0" in lines
    assert "FAIL  client: memcached on 10.77.0.2:11211 does not answer (mcload: connect: Connection timed out;" \
        in lines


@pytest.mark.parametrize("attr,modes", [
    ("irq-suspend-timeout", "suspend20,suspend200,recommend,auto"),
    ("gro-flush-timeout", "suspend20,fullbusy,suspend200,recommend,auto"),
])
def test_a_kernel_without_a_napi_value_names_the_modes_that_need_it(attr, modes):
    facts = healthy(napi_attrs=[a for a in VETH["napi_attrs"] if a != attr])
    found = preflight.kernel(facts, ["suspend20", "fullbusy", "suspend200", "recommend", "auto", "base"])
    assert [f.level for f in found] == ["FAIL"]
    assert "has no per-NAPI %s: modes %s cannot be set" % (attr, modes) in found[0].what
    assert "6.13" in found[0].fix


def test_a_kernel_without_napi_set_is_one_line():
    """Linux 6.12's napi-get answers id, ifindex, irq and pid only (the
    netdev spec of 6.12, Documentation/netlink/specs/netdev.yaml)."""
    found = preflight.kernel(healthy(napi_attrs=["id", "ifindex", "irq", "pid"]), ["base", "defer20", "suspend20"])
    assert [(f.level, f.what) for f in found] == [
        ("FAIL", "server kernel 6.18.44-fc-v669 has no per-NAPI defer-hard-irqs, gro-flush-timeout, "
                 "irq-suspend-timeout: modes defer20,suspend20 cannot be set")]


def test_base_alone_needs_no_napi_value_and_napi_get_failing_fails_all():
    assert not preflight.failed(preflight.kernel(healthy(napi_attrs=["id"]), ["base"]))
    found = preflight.kernel(dict(VETH, napi_error="No such file or directory"), ["base"])
    assert found[0].level == "FAIL" and "napi-get on vf0 failed (No such file or directory)" in found[0].what


def test_no_epoll_parameters_fails_the_busy_polling_modes_only():
    found = preflight.kernel(healthy(epoll_ioctl=False), ["base", "defer20", "fullbusy", "suspend20"])
    assert levels(found) == [("FAIL", "server kernel 6.18.44-fc-v669 has no epoll busy-poll parameters "
                                      "(EPIOCSPARAMS, Linux 6.9)")]
    assert "modes fullbusy,suspend20 cannot" in found[0].what


@pytest.mark.parametrize("where,ok", [(["0.0.0.0"], True), (["::"], True), (["10.77.0.2"], True),
                                      (["127.0.0.1"], False), ([], False)])
def test_memcached_must_listen_on_the_server_address(where, ok):
    f = preflight.listener(healthy(listening=where), "10.77.0.2", 11211, "memcached")
    assert (f.level == "ok") == ok
    if where == ["127.0.0.1"]:
        assert "listens on 127.0.0.1 only, not on --server-addr 10.77.0.2" in f.what


@pytest.mark.parametrize("firewall,fix", [
    ({"firewalld": True, "open": False}, "firewall-cmd --add-port=11211/tcp && firewall-cmd --permanent"),
    ({"firewalld": False, "nft_input": True}, "accept tcp dport 11211 in the server's nftables input chain"),
    ({"firewalld": False, "nft_input": False}, "check the route and any firewall"),
])
def test_an_unreachable_port_names_the_firewall(firewall, fix):
    f = preflight.reach(healthy(firewall=firewall), "10.77.0.2", 11211, "mcload: connect: Connection timed out")
    assert f.level == "FAIL" and fix in f.fix and "Connection timed out" in f.what


@pytest.mark.parametrize("error,what,fix", [
    ("Host key verification failed.\r\n", "the host key of srv is not known here (checking stays on)",
     "ssh-keyscan srv >> ~/.ssh/known_hosts after comparing the fingerprint"),
    ("root@srv: Permission denied (publickey,gssapi-keyex,gssapi-with-mic).\r\n", "no key login",
     "ssh-copy-id root@srv"),
    ("ssh: connect to host srv port 22: Connection refused\r\n", "no ssh server answers",
     "systemctl enable --now sshd on srv"),
    ("ssh: Could not resolve hostname srv: Name or service not known\r\n", "the name srv does not resolve",
     "use the host's address"),
])
def test_each_ssh_failure_has_its_fix(error, what, fix):
    f = preflight.ssh_login("server", "root@srv", None, "ssh root@srv: " + error)
    assert f.level == "FAIL" and what in f.what and fix in f.fix


def test_a_login_that_is_not_root_fails():
    f = preflight.ssh_login("client", "bench@cli", "1000", None)
    assert f.level == "FAIL" and f.fix == "name root: --client root@cli"
    assert preflight.ssh_login("client", "root@cli", "0", None).level == "ok"


def test_the_serving_queue_is_the_one_whose_vector_is_on_the_cpu_alone():
    for cpu in range(4):
        assert preflight.serving_queue(healthy(), cpu) == cpu
    assert preflight.serving_queue(healthy(irq_cpus=dict(GUEST["irq_cpus"], **{"36": [2, 3]})), 2) is None


def test_steering_says_how():
    assert "an ntuple rule" in preflight.steering(healthy(ntuple="off"), 2, None).what
    assert "source ports found to land there" in preflight.steering(healthy(), 2, 0).what
    assert "ntuple filters off [fixed]" in preflight.steering(healthy(), 2, 0).what
