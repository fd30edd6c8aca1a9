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
import shlex
import subprocess
import tempfile

from .runner import BenchError


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
            res = subprocess.run(self.argv(argv), capture_output=True, text=True, timeout=timeout, **stdin)
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

    def _out(self, host, argv):
        rc, out, err = host.run(argv, timeout=60)
        if rc != 0:
            raise BenchError("%s on %s: rc %s: %s" % (" ".join(argv), host.target, rc, (err or out).strip()))
        return out.strip()

    def prepare(self, log):
        for role, host in (("server", self.server), ("client", self.client)):
            if self._out(host, ["id", "-u"]) != "0":
                raise BenchError("the bench logs in to the %s (%s) as root: it switches TuneD "
                                 "profiles and reads every process's state" % (role, host.target))
            self.facts[role] = {"kernel": self._out(host, ["uname", "-r"]),
                                "host": self._out(host, ["uname", "-n"])}
        # the generator and the shim are where each host's installation put
        # them (lib or lib64, another prefix), not where ours did
        if self.client_mcload is None:
            self.client_mcload = self.remote_paths(self.client)["mcload"]
        if self.shim is None:
            self.shim = self.remote_paths(self.server)["shim"]
        rc, _, _ = self.client.run(["test", "-x", self.client_mcload])
        if rc != 0:
            raise BenchError("the load generator %s is not on the client (%s): install irqtune-bench "
                             "there, or name it with --mcload" % (self.client_mcload, self.args.client))
        try:
            self.generate(100, 0.2, 0.0, 1, seed=1)
        except BenchError as err:
            raise BenchError("memcached on %s:%d does not answer the client (%s); it must listen on "
                             "that address (memcached -l)" % (self.server_addr, self.args.port, err))
        log("server %s (kernel %s), client %s (kernel %s)" % (
            self.facts["server"]["host"], self.facts["server"]["kernel"],
            self.facts["client"]["host"], self.facts["client"]["kernel"]))

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
        argv = [self.client_mcload, "--host", self.server_addr, "--port", str(self.args.port),
                "--rate", str(rate), "--seconds", str(seconds), "--warmup", str(warmup),
                "--conns", str(conns), "--seed", str(seed)]
        rc, out, err = self.client.run(argv, timeout=seconds + warmup + 60)
        if rc != 0:
            raise BenchError("mcload: %s" % err.strip())
        return json.loads(out)

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
        for host in (self.server, self.client):
            subprocess.run(host.base[:-2] + ["-O", "exit", "--", host.target], capture_output=True)
        self._control.cleanup()
