# SPDX-License-Identifier: GPL-2.0-or-later
"""The testbed of two real hosts: the server with the NIC under test, the
client that runs the load generator, both reached over ssh as root from
the administrator's machine (which may be the client itself).

Every remote command is an argument vector; ssh hands the remote shell a
command line, so each argument is quoted with shlex.quote and nothing the
remote shell sees is assembled from input otherwise.  One ssh master
connection per host (ControlMaster) keeps the read-backs cheap.

CPU cost: instructions per CPU counted with perf on the server
(`irqtune-bench count`) over the whole load run (connect, warm-up, window
and drain), divided by every request answered in it; a server whose CPU
or kernel offers no instruction counter (a virtual machine without a
PMU) leaves the cost columns empty.
"""

import json
import random
import shlex
import subprocess
import sys
import tempfile

from . import preflight, servervalues, stats
from .guard import BadArgument, BenchError
from .runner import NIC, UndoLog, nic_of_address


class SshHost:
    def __init__(self, target, options, control_dir):
        self.target = target
        self.base = ["ssh", "-o", "BatchMode=yes", "-o", "ControlMaster=auto",
                     "-o", "ControlPath=%s/%%C" % control_dir, "-o", "ControlPersist=300"]
        for opt in options:
            self.base += ["-o", opt]
        self.base += ["--", target]

    def argv(self, argv):
        return self.base + [" ".join(shlex.quote(str(a)) for a in argv)]

    def run(self, argv, timeout=60, input=None):
        # without input, stdin is /dev/null: ssh would forward ours (a
        # terminal's keystrokes) to a command that does not read it
        stdin = {"input": input} if input is not None else {"stdin": subprocess.DEVNULL}
        try:
            # a session of its own: a terminal's Ctrl-C reaches the bench,
            # which lets a change of the server finish (runner.signals_held),
            # not ssh in the middle of it; interrupted, run() kills it
            res = subprocess.run(self.argv(argv), capture_output=True, text=True, timeout=timeout,
                                 start_new_session=True, **stdin)
        except subprocess.TimeoutExpired:
            return -9, "", "timed out after %ss on %s" % (timeout, self.target)
        if res.returncode == 255:
            raise BenchError("ssh %s: %s" % (self.target, res.stderr.strip()[-500:]))
        return res.returncode, res.stdout, res.stderr

    def popen(self, argv):
        return subprocess.Popen(self.argv(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)


class SshTestbed:
    topologies = ["-"]

    def __init__(self, args):
        self.args = args
        self._control = tempfile.TemporaryDirectory(prefix="irqtune-bench-ssh-")
        self.server = SshHost(args.server, args.ssh_option, self._control.name)
        self.client = SshHost(args.client, args.ssh_option, self._control.name)
        self.server_bench = shlex.split(args.remote_command)
        self.client_mcload = args.mcload
        self.shim = args.shim
        self.server_addr = args.server_addr
        self.nic = args.nic
        self.facts = {}
        self.generators = 1
        self.steer = None
        # the steering's changes; the bench's own join them (runner.Bench)
        self.undo = UndoLog()
        self.log = lambda msg: print("irqtune-bench: %s" % msg, file=sys.stderr, flush=True)

    def _out(self, host, argv):
        rc, out, err = host.run(argv, timeout=60)
        if rc != 0:
            raise BenchError("%s on %s: rc %s: %s" % (" ".join(argv), host.target, rc, (err or out).strip()))
        return out.strip()

    def check(self):
        """`irqtune-bench check`'s findings (preflight.py); with no failed
        one, self.facts, self.nic and self.generators are known."""
        a = self.args
        found = []
        for role, host in (("server", self.server), ("client", self.client)):
            try:
                found.append(preflight.ssh_login(role, host.target, self._out(host, ["id", "-u"]), None))
            except BenchError as err:
                found.append(preflight.ssh_login(role, host.target, None, str(err)))
        if preflight.failed(found):
            return found
        for role, host in (("server", self.server), ("client", self.client)):
            self.facts[role] = {"kernel": self._out(host, ["uname", "-r"]), "host": self._out(host, ["uname", "-n"])}
        missing = self.installed()
        if missing:
            return found + missing
        if self.nic is None:
            self.nic = nic_of_address(self._out(self.server, ["ip", "-j", "addr", "show"]), self.server_addr)
            if not self.nic:
                return found + [preflight.Finding(preflight.FAIL, "no interface of the server holds --server-addr %s"
                                                  % self.server_addr, "name the server's address on the NIC under test")]
            try:
                servervalues.interface("the interface holding %s" % self.server_addr, self.nic)
            except BadArgument as err:
                self.nic = None
                return found + [preflight.Finding(preflight.FAIL, str(err), "rename it, or name another with --nic")]
        facts = self.facts["server_facts"] = json.loads(self._out(self.server, self.server_bench + [
            "server-facts", self.nic, "--service", a.service, "--port", str(a.port), "--cpu", str(a.memcached_cpu)]))
        cpus = int(self._out(self.client, ["nproc"]))
        self.generators = a.generators or max(1, min(8, cpus // 2))
        self.facts["client"].update(cpus=cpus, generators=self.generators)
        try:
            self.generate(100, 0.2, 0.0, 1, seed=1)
            unreached = None
        except BenchError as err:
            unreached = str(err)
        landed = None
        if unreached is None and preflight.serving_queue(facts, a.memcached_cpu) is not None:
            napi = self.landing([24999]).get(24999)
            landed = next((int(q) for q, n in facts["rx_queues"].items() if n == napi), None)
        return found + preflight.judge(facts, a, unreached, landed)

    def installed(self):
        """Findings for irqtune-bench missing on either host (the server's
        read-back and counter, the client's mcload)."""
        out = []
        try:
            if self.shim is None:
                self.shim = self.remote_paths(self.server)["shim"]
            if self.client_mcload is None:
                self.client_mcload = self.remote_paths(self.client)["mcload"]
        except BenchError as err:
            out.append(preflight.Finding(preflight.FAIL, str(err), "dnf install ./irqtune-bench-*.rpm there"))
        if not out and self.client.run(["test", "-x", self.client_mcload])[0] != 0:
            out.append(preflight.Finding(preflight.FAIL, "the load generator %s is not on the client (%s)"
                                         % (self.client_mcload, self.args.client),
                                         "dnf install ./irqtune-bench-*.rpm on the client, or name it with --mcload"))
        return out

    def prepare(self, log):
        self.log = log
        findings = self.check()
        for line in preflight.lines(findings):
            log(line)
        bad = preflight.failed(findings)
        if bad:
            raise BenchError("%d check(s) failed (irqtune-bench check shows them): %s"
                             % (len(bad), "; ".join(f.what for f in bad)))
        self.steer = Steering(self, log)
        log("server %s (kernel %s), client %s (kernel %s, %d CPUs: %d generator processes)" % (
            self.facts["server"]["host"], self.facts["server"]["kernel"], self.facts["client"]["host"],
            self.facts["client"]["kernel"], self.facts["client"]["cpus"], self.generators))

    def landing(self, ports):
        """{local port: NAPI id the server saw its connection arrive on}
        of the ports the client could hold a connection from."""
        a = self.args
        holder = self.client.popen(self.server_bench + ["hold", self.server_addr, str(a.port),
                                                        "--source-ports", ",".join(map(str, ports))])
        try:
            first = holder.stdout.readline().split()
            if not first or first[0] != "held":
                raise BenchError("irqtune-bench hold on the client: %s" % holder.stderr.read().strip()[-300:])
            held = [int(p) for p in first[1].split(",")] if len(first) > 1 else []
            seen = json.loads(self._out(self.server, self.server_bench + [
                "incoming", "--service", a.service, "--port", str(a.port)]))
        finally:
            holder.communicate("done\n", timeout=30)
        napi = {c["peer"][1]: c["napi_id"] for c in seen}
        return {p: napi.get(p) for p in held}

    def remote_paths(self, host):
        rc, out, err = host.run(self.server_bench + ["paths"], timeout=60)
        try:
            return json.loads(out)
        except ValueError:
            raise BenchError("%s on %s: %s (is irqtune-bench installed there?)"
                             % (" ".join(self.server_bench + ["paths"]), host.target, (err or out).strip()[-300:]))

    def describe(self):
        s, c = self.facts.get("server", {}), self.facts.get("client", {})
        return {"summary": "server %s (kernel %s) from client %s (kernel %s) over ssh"
                           % (s.get("host"), s.get("kernel"), c.get("host"), c.get("kernel")),
                "insns": "perf instruction counters over the whole load run, per answered request",
                "serving_thread": "memcached's threads", "facts": self.facts}

    def set_topology(self, topology):
        pass

    def generate(self, rate, seconds, warmup, conns, seed):
        """self.generators mcload processes on the client, each with conns
        connections (from the steered source ports, when steering needs
        them) and its share of the rate; their figures combined."""
        procs = []
        for i in range(self.generators):
            argv = [self.client_mcload, "--host", self.server_addr, "--port", str(self.args.port),
                    "--rate", "%.3f" % (rate / self.generators), "--seconds", str(seconds),
                    "--warmup", str(warmup), "--conns", str(conns), "--seed", str(seed * 100 + i)]
            ports = self.steer.ports(i, conns) if self.steer else None
            procs.append(self.client.popen(argv + (["--source-ports", ",".join(map(str, ports))] if ports else [])))
        results = []
        for proc in procs:
            try:
                out, err = proc.communicate(timeout=seconds + warmup + 60)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
            if proc.returncode != 0:
                # mcload names itself in every complaint
                raise BenchError(err.strip()[-300:] or "mcload: exit %d" % proc.returncode)
            results.append(json.loads(out))
        res = stats.combine(results)
        if self.steer:
            res["steering"] = self.steer.how
        return res

    def load(self, rate, seconds, warmup, conns, seed):
        counter = self.server.popen(self.server_bench + ["count"])
        try:
            first = counter.stdout.readline().strip()
            res = self.generate(rate, seconds, warmup, conns, seed)
            out, _ = counter.communicate("stop\n", timeout=60)
        finally:
            if counter.poll() is None:
                counter.kill()
                counter.wait()
        if first == "ready" and out.strip():
            counted = json.loads(out.strip().splitlines()[-1])
            res.update(insns=counted["insns"], insns_scope="run", insns_seconds=counted["seconds"])
        return res

    def placement(self):
        return None

    def finish(self):
        # what the bench's put-back has not done already (when its
        # preparation failed, the steering's); the failures are logged
        self.undo.put_back(self.log)
        for host in (self.server, self.client):
            subprocess.run(host.base[:-2] + ["-O", "exit", "--", host.target], capture_output=True)
        self._control.cleanup()


class Steering:
    """The load's connections on the rx queue serving --memcached-cpu: an
    ntuple rule (flow-type tcp4 dst-ip dst-port -> queue) when the NIC
    offers one, deleted again by undo() (and the feature switched back
    off when the bench switched it on) - each undo registered in the
    testbed's undo log before its change, so that a refused rule or a
    signal during its insert leaves no feature on; otherwise source ports
    whose connections the server saw arrive on that queue's NAPI.  how
    says which, for every run's record."""

    SEARCH = range(20000, 30000)
    TRIES = 512

    def __init__(self, tb, log):
        self.tb, self.log = tb, log
        facts, a = tb.facts["server_facts"], tb.args
        self.queue = preflight.serving_queue(facts, a.memcached_cpu)
        self.napi = facts["rx_queues"][str(self.queue)]
        self.rule = None
        self.found = []
        self.changes = getattr(tb, "undo", None) or UndoLog()
        if facts.get("ntuple") in ("on", "off"):
            self.add_rule(facts["ntuple"])
        else:
            self.search(a.conns * tb.generators)

    def add_rule(self, feature):
        tb, a = self.tb, self.tb.args
        if feature == "off":
            with self.changes.change("ntuple-feature", "the ntuple feature of %s (off again)" % tb.nic,
                                     lambda: tb._out(tb.server, ["ethtool", "-K", tb.nic, "ntuple", "off"]), NIC):
                tb._out(tb.server, ["ethtool", "-K", tb.nic, "ntuple", "on"])
        with self.changes.change("ntuple-rule", "the ntuple rule on %s" % tb.nic, self.delete_rule, NIC):
            out = tb._out(tb.server, ["ethtool", "-N", tb.nic, "flow-type", "tcp4", "dst-ip", tb.server_addr,
                                      "dst-port", str(a.port), "action", str(self.queue)])
            words = out.split()
            # ethtool says "Added rule with ID N"; without it, the rule is not known
            self.rule = words[-1] if words[-1:] and words[-1].isdigit() else "unknown"
        self.how = "ntuple rule %s: tcp4 dst-port %d -> rx queue %d" % (self.rule, a.port, self.queue)
        self.log("steering: " + self.how)

    def delete_rule(self):
        rule, self.rule = self.rule, None
        if rule == "unknown":
            raise BenchError("ethtool -N printed no rule ID: see ethtool -n %s" % self.tb.nic)
        if rule is not None:
            self.tb._out(self.tb.server, ["ethtool", "-N", self.tb.nic, "delete", rule])

    def search(self, n):
        rng = random.Random()
        tried = 0
        while len(self.found) < n and tried < self.TRIES:
            batch = [p for p in rng.sample(self.SEARCH, 16) if p not in self.found]
            tried += len(batch)
            landed = self.tb.landing(batch)
            self.found += [p for p, napi in sorted(landed.items()) if napi == self.napi][:n - len(self.found)]
        if len(self.found) < n:
            raise BenchError("steering: %d of %d source ports tried land on rx queue %d (NAPI %d); found %d of "
                             "the %d needed (see ethtool -n %s rx-flow-hash tcp4)"
                             % (len(self.found), tried, self.queue, self.napi, len(self.found), n, self.tb.nic))
        self.how = ("source ports %s: their connections arrive on rx queue %d (NAPI %d, SO_INCOMING_NAPI_ID); "
                    "%d ports tried" % (",".join(map(str, self.found)), self.queue, self.napi, tried))
        self.log("steering: " + self.how)

    def ports(self, generator, conns):
        """The source ports of one generator process, None with a rule."""
        return self.found[generator * conns:(generator + 1) * conns] or None

    def undo(self):
        """Put back what the steering changed; the names of what failed."""
        return self.changes.put_back(self.log)
