# SPDX-License-Identifier: GPL-2.0-or-later
"""What a failed or interrupted bench leaves on the server (issue 47 item
8): every change the bench makes there - the ntuple feature and rule,
the drop-in and its directory, daemon-reload, the variables file, the
profile, the service's restart - registers its undo before it is made;
SIGTERM, SIGINT and SIGHUP wait while a change or the put-back is under
way; the put-back runs every undo even when one fails and names each
that failed, one line each, and the bench exits non-zero.

The server is test_bench_runner's stand-in that records commands (the
unit layer), here also answering ethtool; the ssh testbed is the real
SshTestbed with that server and without ssh."""

import json
import os
import signal
import types

import pytest

from irqtune_bench import orchestrator, runner, ssh
from irqtune_bench.guard import BenchError

from support.bench import FIX, NIC, ORIGINAL_VARIABLES, FakeServer, FakeTestbed, args

PROFILE_BEFORE = "virtual-guest"
RULE_INSERT = ["ethtool", "-N", NIC, "flow-type", "tcp4", "dst-ip", "10.77.0.2", "dst-port", "11211",
               "action", "2"]


class EthtoolServer(FakeServer):
    """The stand-in server, with ntuple: what `ethtool -K/-N` did, and
    hooks that fail a command or send this process a signal while one
    runs (as a SIGTERM from `kill` arrives while ssh waits)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.ntuple = "off"
        self.rules = set()
        self.fail = {}              # command prefix (tuple) -> (rc, stdout, stderr), once
        self.fail_always = {}       # the same, every time
        self.signal_on = {}         # command prefix (tuple) -> signal, once

    def _hooked(self, argv):
        for table in (self.signal_on,):
            for prefix in list(table):
                if tuple(argv[:len(prefix)]) == prefix:
                    os.kill(os.getpid(), table.pop(prefix))
        for prefix in list(self.fail_always):
            if tuple(argv[:len(prefix)]) == prefix:
                return self.fail_always[prefix]
        for prefix in list(self.fail):
            if tuple(argv[:len(prefix)]) == prefix:
                return self.fail.pop(prefix)
        return None

    def run(self, argv, timeout=60, input=None):
        hooked = self._hooked(argv)
        if hooked is not None:
            self.log.append(argv)
            return hooked
        if argv[:2] == ["ethtool", "-K"]:
            self.log.append(argv)
            self.ntuple = argv[-1]
            return 0, "", ""
        if argv[:2] == ["ethtool", "-N"] and argv[3] == "delete":
            self.log.append(argv)
            self.rules.discard(argv[4])
            return 0, "", ""
        if argv[:2] == ["ethtool", "-N"]:
            self.log.append(argv)
            self.rules.add("1023")
            return 0, "Added rule with ID 1023\n", ""
        return super().run(argv, timeout, input)


class FakeSsh(ssh.SshTestbed):
    """SshTestbed - its prepare, steering and finish - over the stand-in
    server; the checks found the lab guest's facts (an ntuple-capable NIC
    with the feature off), the load is the fixture's."""

    def __init__(self, server, settings, late_load=None):
        super().__init__(settings)
        self.server = server
        self.client = types.SimpleNamespace(base=["true", "--", "client"], target="client")
        self.server.base = ["true", "--", "server"]
        self.server.target = "server"
        self.late_load = late_load

    def check(self):
        self.facts = {"server": {"host": "s", "kernel": "7.2"}, "client": {"host": "c", "kernel": "7.2", "cpus": 2},
                      "server_facts": dict(FIX["before"], ntuple=self.server.ntuple)}
        self.nic = NIC
        return []

    def _out(self, host, argv):
        rc, out, err = host.run(argv, timeout=60)
        if rc != 0:
            raise BenchError("%s on %s: rc %s: %s" % (" ".join(argv), host.target, rc, (err or out).strip()))
        return out.strip()

    def load(self, rate, seconds, warmup, conns, seed):
        if self.late_load:
            self.late_load()
        return dict(FIX["mcload"], send_late_p99_us=120.0)


def settings(tmp_path, **kw):
    s = args(modes="suspend20", loads="500", repeats=1, **kw)
    s.__dict__.update(server="root@s", client="root@c", server_addr="10.77.0.2", nic=None, port=11211,
                      ssh_option=[], generators=1, remote_command="irqtune-bench", mcload="/m", shim=FakeTestbed.shim,
                      name="run", out=str(tmp_path), quick=False, fractions=[])
    return s


@pytest.fixture
def handlers():
    """orchestrator.execute installs its SIGTERM/SIGHUP handlers; put pytest's back."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    yield
    for s, h in saved.items():
        signal.signal(s, h)


def execute(server, tmp_path, **kw):
    tb = FakeSsh(server, settings(tmp_path), **kw)
    return orchestrator.execute(tb, tb.args, "run", "irqtune-bench run")


def put_back(server):
    """The server as the bench found it."""
    assert server.files == {runner.VARIABLES: ORIGINAL_VARIABLES}
    assert server.active == PROFILE_BEFORE
    assert server.ntuple == "off" and server.rules == set()


def test_a_whole_ssh_run_changes_and_puts_back(tmp_path, handlers, capsys):
    server = EthtoolServer()
    assert execute(server, tmp_path) == 0
    put_back(server)
    assert ["ethtool", "-N", NIC, "delete", "1023"] in server.log
    last_profile = max(i for i, a in enumerate(server.log) if a == ["tuned-adm", "profile", PROFILE_BEFORE])
    assert ["systemctl", "restart", "--", "memcached"] in server.log[last_profile:]


def test_a_refused_rule_insert_switches_ntuple_off_again(tmp_path, handlers, capsys):
    """issue 47 item 8: the error was raised inside Steering's constructor,
    whose undo never ran: ntuple stayed on."""
    server = EthtoolServer()
    server.fail[tuple(RULE_INSERT[:4])] = (1, "", "rmgr: Cannot insert RX class rule: Operation not supported")
    assert execute(server, tmp_path) == 1
    assert server.log[-2:] == [RULE_INSERT, ["ethtool", "-K", NIC, "ntuple", "off"]] or \
        ["ethtool", "-K", NIC, "ntuple", "off"] in server.log[server.log.index(RULE_INSERT):]
    put_back(server)
    assert "Cannot insert RX class rule" in capsys.readouterr().err


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_during_the_rule_insert_waits_for_it_then_puts_back(tmp_path, handlers, capsys, signum):
    """The rule the insert made is deleted and ntuple switched off
    again: the signal took effect after the change, its undo known."""
    server = EthtoolServer()
    server.signal_on[tuple(RULE_INSERT[:4])] = signum
    with pytest.raises((SystemExit, KeyboardInterrupt)) as stop:
        execute(server, tmp_path)
    assert stop.type is KeyboardInterrupt if signum == signal.SIGINT else stop.value.code == 128 + signum
    assert ["ethtool", "-N", NIC, "delete", "1023"] in server.log
    put_back(server)


def test_a_second_sigterm_during_the_restore_waits_for_it(tmp_path, handlers, capsys):
    """issue 47 item 8: a SIGTERM stops the bench during a load; a second
    one arrives while the restore writes the variables file back - the
    drop-in, daemon-reload, profile, restart and steering's undo still
    run, then the bench ends (143)."""
    server = EthtoolServer()

    def first():
        server.signal_on[("sh", "-c", runner.WRITE, "write", runner.VARIABLES)] = signal.SIGTERM
        os.kill(os.getpid(), signal.SIGTERM)
    with pytest.raises(SystemExit) as stop:
        execute(server, tmp_path, late_load=first)
    assert stop.value.code == 128 + signal.SIGTERM
    put_back(server)
    tail = server.log[[i for i, a in enumerate(server.log) if a[:2] == ["sh", "-c"] and a[-1] == "644"][0]:]
    assert ["systemctl", "daemon-reload"] in tail and ["tuned-adm", "profile", PROFILE_BEFORE] in tail
    assert ["systemctl", "restart", "--", "memcached"] in tail


def test_every_undo_runs_when_the_first_fails_and_the_failure_is_named(tmp_path, handlers, capsys):
    """issue 47 item 8: the restore's first write failed and the drop-in,
    daemon-reload, profile and restart were all skipped."""
    server = EthtoolServer()
    tb = FakeSsh(server, settings(tmp_path))
    real = server.run

    def failing_restore(argv, timeout=60, input=None):
        if argv[:5] == ["sh", "-c", runner.WRITE, "write", runner.VARIABLES] and \
                base64_text(input) == ORIGINAL_VARIABLES:
            server.log.append(argv)
            return 1, "", "No space left on device"
        return real(argv, timeout, input)
    server.run = failing_restore
    assert orchestrator.execute(tb, tb.args, "run", "irqtune-bench run") == 1
    err = capsys.readouterr().err
    failed = [line for line in err.splitlines() if "put back FAILED" in line]
    assert len(failed) == 1 and runner.VARIABLES in failed[0] and "No space left on device" in failed[0], err
    assert server.files == {runner.VARIABLES: server.files[runner.VARIABLES]}      # the drop-in is gone
    assert server.active == PROFILE_BEFORE and server.ntuple == "off" and server.rules == set()
    after = server.log[max(i for i, a in enumerate(server.log) if a[:5] == ["sh", "-c", runner.WRITE, "write",
                                                                          runner.VARIABLES]):]
    assert [a for a in after if a[0] in ("rm", "systemctl", "tuned-adm")] == [
        ["rm", "-f", "--", runner.DROPIN % "memcached"], ["systemctl", "daemon-reload"],
        ["tuned-adm", "profile", PROFILE_BEFORE], ["systemctl", "restart", "--", "memcached"]]


def base64_text(data):
    import base64
    return base64.b64decode(data).decode() if data else None


def test_each_failed_undo_is_named_on_its_own_line(tmp_path, handlers, capsys):
    """Every command of the put-back fails: each undo is tried and named."""
    server = EthtoolServer()
    tb = FakeSsh(server, settings(tmp_path))
    real = server.run
    state = {"restoring": False}

    def failing(argv, timeout=60, input=None):
        if state["restoring"] and argv[0] in ("sh", "rm", "systemctl", "tuned-adm", "ethtool"):
            server.log.append(argv)
            return 1, "", "refused"
        return real(argv, timeout, input)
    server.run = failing
    tb.placement = lambda: state.update(restoring=True)
    assert orchestrator.execute(tb, tb.args, "run", "irqtune-bench run") == 1
    failed = [line for line in capsys.readouterr().err.splitlines() if "put back FAILED" in line]
    named = " ".join(failed)
    for what in (runner.VARIABLES, runner.DROPIN % "memcached", "daemon-reload", "profile", "restart",
                 "ntuple rule", "delete 1023", "ntuple feature"):
        assert what in named, (what, failed)
    assert len(failed) == 7, failed


def test_a_steering_rule_refused_leaves_its_undo_in_the_log():
    """Steering alone (the unit the constructor is): the feature it
    switched on is in the undo log, though the constructor raised."""
    from test_bench_steering import StandInTestbed
    tb = StandInTestbed("off", lands=None)
    tb.undo = runner.UndoLog()

    def refused(host, argv):
        tb.commands.append(argv)
        if argv[:2] == ["ethtool", "-N"]:
            raise BenchError("ethtool -N: rc 1: rmgr: Cannot insert RX class rule")
        return ""
    tb._out = refused
    with pytest.raises(BenchError):
        ssh.Steering(tb, lambda msg: None)
    tb.server = types.SimpleNamespace(run=lambda argv, timeout: (tb.commands.append(argv), (0, "", ""))[1])
    assert tb.undo.put_back(lambda msg: None) == []
    assert tb.commands[-1] == ["ethtool", "-K", "ens3", "ntuple", "off"]
    assert ["ethtool", "-N", "ens3", "delete"] not in [a[:4] for a in tb.commands]


def test_a_signal_outside_a_change_is_not_held():
    """Between changes a signal acts at once (the bench stops mid-load)."""
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):
            pass


def test_a_signal_inside_a_change_acts_after_it():
    log = runner.UndoLog()
    done = []
    with pytest.raises(KeyboardInterrupt):
        with log.change("thing", "the thing", lambda: done.append("undone")):
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):
                pass
            done.append("made")
    assert done == ["made"]
    assert log.put_back(lambda msg: None) == [] and done == ["made", "undone"]
