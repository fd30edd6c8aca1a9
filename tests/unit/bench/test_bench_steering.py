# SPDX-License-Identifier: GPL-2.0-or-later
"""The connection on the served queue (issue 41 item 2): the server
reads the NAPI its service's connections arrived on (server.incoming,
SO_INCOMING_NAPI_ID through pidfd_getfd, here on this process's own
loopback connections, where the kernel records no NAPI: 0); the client
holds connections from chosen ports (client.hold); Steering keeps the
ports whose connections landed on the wanted NAPI, or adds an ntuple
rule and deletes it again.  The testbed under Steering is a stand-in
(the unit layer); the real hosts are the lab's two guests."""

import io
import json
import os
import socket
import types
from pathlib import Path

import pytest

from irqtune_bench import client, server
from irqtune_bench.guard import BenchError
from irqtune_bench.ssh import Steering

from support.bench import StandIn, free_ports

GUEST = json.loads((Path(__file__).resolve().parent / "bench_fixtures" / "server-state.json").read_text())["before"]


def test_incoming_reads_each_connection_of_a_process():
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    mine = socket.socket()
    mine.bind(("127.0.0.1", free_ports(1)[0]))
    mine.connect(("127.0.0.1", port))
    accepted, _ = listener.accept()
    mine.sendall(b"version\r\n")
    accepted.recv(64)
    try:
        # the accepted connection, not the listening socket (no peer)
        found = server.incoming(os.getpid(), port)
        assert found == [{"peer": ["127.0.0.1", mine.getsockname()[1]], "napi_id": 0}]
    finally:
        for s in (mine, accepted, listener):
            s.close()


def test_hold_keeps_the_ports_it_could_connect_from():
    standin = StandIn(10 ** 9)
    free, taken = free_ports(1)[0], socket.create_server(("0.0.0.0", 0))
    out = io.StringIO()
    assert client.hold("127.0.0.1", standin.port, [free, taken.getsockname()[1]],
                       stdin=io.StringIO("done\n"), stdout=out) == 0
    assert out.getvalue() == "held %d\n" % free and standin.peers == [free]
    taken.close()


class StandInTestbed:
    """What Steering uses of SshTestbed: facts, args, generators, the
    landing probe and the server's commands (recorded)."""

    def __init__(self, ntuple, lands):
        self.facts = {"server_facts": dict(GUEST, ntuple=ntuple)}
        self.args = types.SimpleNamespace(memcached_cpu=2, port=11211, conns=2)
        self.generators = 2
        self.nic, self.server_addr = "ens3", "10.77.0.2"
        self.lands = lands
        self.commands = []
        self.server = types.SimpleNamespace(run=lambda argv, timeout: self.commands.append(argv))

    def landing(self, ports):
        return {p: self.lands(p) for p in ports}

    def _out(self, host, argv):
        self.commands.append(argv)
        return "Added rule with ID 1023" if argv[:2] == ["ethtool", "-N"] else ""


def test_source_ports_are_the_ones_that_landed_on_the_served_napi():
    tb = StandInTestbed("off [fixed]", lands=lambda p: 9 + p % 4)       # NAPIs 9-12, queue 2 is NAPI 11
    st = Steering(tb, lambda msg: None)
    assert len(st.found) == 4 and all(9 + p % 4 == 11 for p in st.found)
    assert st.ports(1, 2) == st.found[2:] and "rx queue 2 (NAPI 11" in st.how
    assert tb.commands == []


def test_no_port_landing_there_is_said():
    with pytest.raises(BenchError, match="0 of 512 source ports tried land on rx queue 2 .NAPI 11."):
        Steering(StandInTestbed("off [fixed]", lands=lambda p: 9), lambda msg: None)


def test_an_ntuple_rule_is_added_and_deleted_with_the_feature_put_back():
    tb = StandInTestbed("off", lands=None)
    st = Steering(tb, lambda msg: None)
    assert st.ports(0, 2) is None and st.how == "ntuple rule 1023: tcp4 dst-port 11211 -> rx queue 2"
    st.undo()
    assert tb.commands == [["ethtool", "-K", "ens3", "ntuple", "on"],
                           ["ethtool", "-N", "ens3", "flow-type", "tcp4", "dst-ip", "10.77.0.2", "dst-port",
                            "11211", "action", "2"],
                           ["ethtool", "-N", "ens3", "delete", "1023"],
                           ["ethtool", "-K", "ens3", "ntuple", "off"]]
    st.undo()
    assert len(tb.commands) == 4
