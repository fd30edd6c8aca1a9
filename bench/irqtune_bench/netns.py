# SPDX-License-Identifier: GPL-2.0-or-later
"""The testbed on this machine's own kernel (`irqtune-bench local`, `make
bench-local`): no second host, no emulation - real microseconds and real
CPU time of the kernel that runs it.

  root namespace                      namespace irqtune-bench
  memcached (1 worker) on the         mcload on the generator CPU
  serving CPU, its veth irqb-srv      veth irqb-cli, 198.18.0.2
  198.18.0.1, NAPI threaded and       NAPI threaded, on the generator CPU
  on the serving CPU
               <------- veth pair, one queue each way ------->

The server's end stays in the root namespace because that is where the
administrator's TuneD tunes NICs: irqtune applies latency-suspend (each
mode's variables) to irqb-srv exactly as to a NIC.  198.18.0.0/15 is the
range RFC 2544 reserves for benchmarks, so it collides with no network
the machine is on.  GRO is on at both ends because a veth has a NAPI only
with GRO (or XDP); TSO is off because a TSO segment crosses a veth as one
GSO packet that TCP takes without the receiving NAPI, and its socket then
has no NAPI id for epoll to busy-poll.  Each end's NAPI runs threaded,
pinned beside the work it stands in for: the server's softirq work on the
serving CPU, the client's on the generator's.

memcached is the bench's own process (never the host's memcached.service):
started per mode with the epoll opt-in the way a host without systemd
opts a program in - irqtune-busypoll-run with the mode's busy_poll_usecs -
and fullbusy's epoll shim preloaded beside it; its pid file under
/run/irqtune-bench is what auto_services names.

Cost is the CPU time of the server's work - memcached's threads and the
server NAPI's thread, from their schedstat - per answered request, beside
the serving CPU's busy time (/proc/stat).  Both CPUs' other work (time
busy that none of the bench's tasks used) is measured per run and
reported; a run is disturbed by the generator's lateness alone: the
other work on its CPU follows the mode (RULE).
"""

import contextlib
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import placement
from .files import write_file
from .guard import BenchError
from .runner import NIC, UndoLog, signals_held

NAMESPACE = "irqtune-bench"
SERVER_DEV, CLIENT_DEV = "irqb-srv", "irqb-cli"
SERVER_ADDR, CLIENT_ADDR, PREFIX = "198.18.0.1", "198.18.0.2", 30
RUN_DIR = Path("/run/irqtune-bench")
PID_FILE = RUN_DIR / "memcached.pid"
MEMCACHED = "/usr/bin/memcached"
BUSYPOLL_RUN = "/usr/bin/irqtune-busypoll-run"
# A run is disturbed when the generator was late.  The other work on the
# generator's CPU is reported, not judged: on a quiet machine (the
# validation run of 2026-11-28) it was 0 % at 40K req/s and 1-15 % above,
# and by mode - suspend200 0-3 %, fullbusy and keepbusy 7-15 % - because
# the server's replies wake the client NAPI's thread there by IPI: the
# mode's own work.  A rule on it would select by mode.
RULE = {"send_late_p99_us": 250.0}
GENERATOR_PRIORITY = 5


class LocalHost:
    """The server's commands, run here as root (argument vectors), with
    this package on PYTHONPATH for the bench's own server side."""

    target = "this machine"

    def __init__(self):
        self.env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))

    def run(self, argv, timeout=60, input=None):
        stdin = {"input": input} if input is not None else {"stdin": subprocess.DEVNULL}
        try:
            res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=self.env,
                                 start_new_session=True, **stdin)
        except subprocess.TimeoutExpired:
            return -9, "", "timed out after %ss" % timeout
        except FileNotFoundError as err:
            return 127, "", "%s: not installed" % err.filename
        return res.returncode, res.stdout, res.stderr


def napi_threads(dev):
    """pids of the kernel threads napi/DEV-ID of a device."""
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                comm = Path("/proc", name, "comm").read_text().strip()
            except OSError:
                continue
            if comm.startswith("napi/%s-" % dev):
                out.append(int(name))
    return sorted(out)


def snapshots(pids):
    """{pid: placement.snapshot()} of pids; {} for one that ended."""
    snaps = {}
    for pid in pids:
        try:
            snaps[pid] = placement.snapshot(pid)
        except FileNotFoundError:
            snaps[pid] = {}
    return snaps


def delta(before, after, key, comm=""):
    """The growth of a per-thread counter (placement.snapshot()'s run_ns,
    slices, voluntary, nonvoluntary) between two snapshots() of the same
    pids, over the threads in both whose name starts with comm."""
    total = 0
    for pid, threads in after.items():
        for tid, t in threads.items():
            b = before.get(pid, {}).get(tid)
            if b and t["comm"].startswith(comm) and t[key] is not None and b[key] is not None:
                total += t[key] - b[key]
    return total


def napi_polls(script, dev):
    """{"poller", "thread", "share"} of `perf script -F comm,trace` lines
    of napi:napi_poll ("COMM napi poll on napi struct 0x... for device
    DEV work N budget B"): the packets DEV's NAPI thread polled, and those
    polled in any other task (the busy-polling application)."""
    out = {"poller": 0, "thread": 0}
    for line in script.splitlines():
        words = line.split()
        if "device" not in words or "work" not in words:
            continue
        if words[words.index("device") + 1] != dev:
            continue
        work = int(words[words.index("work") + 1])
        out["thread" if words[0].startswith("napi/") else "poller"] += work
    total = out["poller"] + out["thread"]
    out["share"] = round(out["poller"] / total, 4) if total else None
    return out


class NetnsTestbed:
    topologies = ["-"]
    rule = RULE
    # the doctor starts in about a second here (runner.recommend_at)
    doctor_margin = 10

    def __init__(self, args):
        self.args = args
        self.server = LocalHost()
        # the server side is this package, run by this Python
        self.server_bench = [sys.executable, "-m", "irqtune_bench"]
        self.mcload, self.shim = args.mcload, args.shim
        self.server_addr, self.nic, self.port = SERVER_ADDR, SERVER_DEV, 11211
        self.serving_cpu, self.generator_cpu = args.memcached_cpu, args.generator_cpu
        self.pid_file = str(PID_FILE)
        self.memcached = None
        self.served = None          # memcached's pid, kept after it ends for placement()
        self.undo = UndoLog()
        self.tmp = tempfile.TemporaryDirectory(prefix="irqtune-bench-")
        self.facts = {}
        self.first = None
        self.log = lambda msg: print("irqtune-bench: %s" % msg, file=sys.stderr, flush=True)

    def sh(self, argv, timeout=60):
        rc, out, err = self.server.run(argv, timeout=timeout)
        if rc != 0:
            raise BenchError("%s: rc %s: %s" % (" ".join(argv), rc, (err or out).strip()[-300:]))
        return out

    # -- set-up and tear-down ------------------------------------------------

    def prepare(self, log):
        self.log = log
        cpus = sorted(os.sched_getaffinity(0))
        for what, cpu in (("--memcached-cpu", self.serving_cpu), ("--generator-cpu", self.generator_cpu)):
            if cpu not in cpus:
                raise BenchError("%s %d: this process may use CPUs %s" % (what, cpu, cpus))
        if self.serving_cpu == self.generator_cpu:
            raise BenchError("--memcached-cpu and --generator-cpu name the same CPU %d" % self.serving_cpu)
        # the shim is the runner's to check (Bench.prepare), for the modes that slice
        for path in (self.mcload, MEMCACHED, BUSYPOLL_RUN):
            if not os.access(path, os.X_OK):
                raise BenchError("%s is not installed (make bench-tools; memcached; make install)" % path)
        if os.path.exists("/sys/class/net/%s" % SERVER_DEV) or os.path.exists("/run/netns/%s" % NAMESPACE):
            raise BenchError("%s or the namespace %s exists already: another bench runs, or one was killed "
                             "(ip link del %s; ip netns del %s)" % (SERVER_DEV, NAMESPACE, SERVER_DEV, NAMESPACE))
        self.build()
        self.facts = {"kernel": os.uname().release, "cpus": cpus, "serving_cpu": self.serving_cpu,
                      "generator_cpu": self.generator_cpu, "napi_threads": self.pin_napi_threads()}
        log("testbed: %s (%s) <-> %s in namespace %s (%s), NAPIs threaded: server on CPU %d, client on CPU %d"
            % (SERVER_DEV, SERVER_ADDR, CLIENT_DEV, NAMESPACE, CLIENT_ADDR, self.serving_cpu, self.generator_cpu))
        self.first = self.all_tasks()

    def build(self):
        """The namespace, the veth pair, addresses, offloads, threaded NAPIs:
        each undo registered before its change (deleting the namespace and
        the server's end takes everything else with it)."""
        with self.undo.change("netns", "the namespace %s" % NAMESPACE,
                              lambda: self.sh(["ip", "netns", "del", NAMESPACE]), NIC):
            self.sh(["ip", "netns", "add", NAMESPACE])
        with self.undo.change("veth", "the veth pair %s" % SERVER_DEV,
                              lambda: self.sh(["ip", "link", "del", SERVER_DEV]), NIC):
            self.sh(["ip", "link", "add", SERVER_DEV, "numtxqueues", "1", "numrxqueues", "1", "type", "veth",
                     "peer", "name", CLIENT_DEV, "netns", NAMESPACE, "numtxqueues", "1", "numrxqueues", "1"])
        inside = ["ip", "netns", "exec", NAMESPACE]
        for pre, dev, addr in (([], SERVER_DEV, SERVER_ADDR), (inside, CLIENT_DEV, CLIENT_ADDR)):
            self.sh(pre + ["ip", "addr", "add", "%s/%d" % (addr, PREFIX), "dev", dev])
            self.sh(pre + ["ethtool", "-K", dev, "gro", "on", "tso", "off"])
            self.sh(pre + ["ip", "link", "set", dev, "up"])
            self.sh(pre + ["sh", "-c", 'echo 1 > "/sys/class/net/$1/threaded"', "threaded", dev])
        self.sh(inside + ["ip", "link", "set", "lo", "up"])

    def pin_napi_threads(self):
        """Each end's NAPI thread on its CPU; {device: [pids]}."""
        out = {}
        for dev, cpu in ((SERVER_DEV, self.serving_cpu), (CLIENT_DEV, self.generator_cpu)):
            pids = napi_threads(dev)
            if not pids:
                raise BenchError("no NAPI thread napi/%s-* (threaded NAPI on a veth with GRO needs Linux 5.13+)"
                                 % dev)
            for pid in pids:
                os.sched_setaffinity(pid, {cpu})
            out[dev] = pids
        return out

    def finish(self):
        self.stop_memcached()
        self.undo.put_back(self.log)
        self.tmp.cleanup()

    # -- the server process ---------------------------------------------------

    def serve(self, m):
        """memcached (re)started for mode m: the opt-in of its epoll
        instances through irqtune-busypoll-run when the mode has one, the
        epoll shim when it slices epoll_wait, pinned to the serving CPU;
        its pid file written once it listens."""
        self.stop_memcached()
        argv = [MEMCACHED, "-u", "memcache", "-l", SERVER_ADDR, "-p", str(self.port), "-U", "0", "-t", "1",
                "-c", "1024"]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LD_PRELOAD", "IRQTUNE_"))}
        if m["epoll_slice_ms"]:
            env.update(LD_PRELOAD=self.shim, IRQTUNE_BENCH_EPOLL_SLICE_MS=str(m["epoll_slice_ms"]))
        if m["epoll"]:
            e = m["epoll"]
            argv = [BUSYPOLL_RUN, "--usecs", str(e["busy_poll_usecs"]), "--budget", str(e["busy_poll_budget"]),
                    "--prefer", str(e["prefer_busy_poll"]), "--log", "none", "--"] + argv
        cpu = self.serving_cpu
        self.undo.register("memcached", "the bench's memcached", self.stop_memcached)
        # its complaints go to a file: a pipe nobody reads would stop it once full
        errors = os.path.join(self.tmp.name, "memcached.err")
        with open(errors, "wb") as err:
            self.memcached = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                              stderr=err, preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
                                              start_new_session=True)
        deadline = time.monotonic() + 10
        while not self.listening():
            if self.memcached.poll() is not None or time.monotonic() > deadline:
                said = Path(errors).read_bytes().decode(errors="replace").strip()[-300:]
                self.stop_memcached()
                raise BenchError("memcached did not start: %s" % (said or "not listening after 10 s"))
            time.sleep(0.05)
        # auto_services reads it as root: a root-owned directory, written
        # through the bench's one writer (a new file renamed into place)
        RUN_DIR.mkdir(mode=0o755, exist_ok=True)
        os.chmod(RUN_DIR, 0o755)
        write_file(PID_FILE, "%d\n" % self.memcached.pid, 0o644)
        self.served = self.memcached.pid

    def listening(self):
        try:
            socket.create_connection((SERVER_ADDR, self.port), timeout=0.5).close()
            return True
        except OSError:
            return False

    def stop_memcached(self):
        proc, self.memcached = self.memcached, None
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        try:
            PID_FILE.unlink()
        except FileNotFoundError:
            pass

    # -- runs -----------------------------------------------------------------

    def describe(self):
        return {"summary": "this machine's kernel %s: memcached on CPU %d behind veth %s, mcload on CPU %d "
                           "in namespace %s" % (self.facts.get("kernel"), self.serving_cpu, SERVER_DEV,
                                                 self.generator_cpu, NAMESPACE),
                "cost": "CPU time of memcached's threads and the server NAPI's thread "
                                       "(schedstat) per answered request",
                "serving_thread": "memcached's worker and the server NAPI's thread", "facts": self.facts,
                "rule": RULE}

    def set_topology(self, topology):
        pass

    def counted(self):
        """The schedstat snapshots of the server's and the generator CPU's tasks."""
        server = ([self.memcached.pid] if self.memcached else []) + napi_threads(SERVER_DEV)
        return {"server": snapshots(server), "client_napi": snapshots(napi_threads(CLIENT_DEV)),
                "stat": Path("/proc/stat").read_text(), "t": time.monotonic()}

    @contextlib.contextmanager
    def generator(self, rate, seconds, warmup, conns, seed):
        """mcload in the client's namespace on the generator CPU, SCHED_FIFO
        (its sends on time), for the block; killed when the block ends
        early - a timeout, or a signal ending the bench, which waits
        until the generator is started and known (runner.signals_held)."""
        argv = ["ip", "netns", "exec", NAMESPACE, self.mcload, "--host", SERVER_ADDR, "--port", str(self.port),
                "--rate", "%.3f" % rate, "--seconds", str(seconds), "--warmup", str(warmup),
                "--conns", str(conns), "--seed", str(seed)]
        cpu = self.generator_cpu

        def placed():
            os.sched_setaffinity(0, {cpu})
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(GENERATOR_PRIORITY))
        proc = None
        try:
            with signals_held():
                proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        preexec_fn=placed)
            yield proc
        finally:
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.communicate()

    def load(self, rate, seconds, warmup, conns, seed):
        before = self.counted()
        # mcload's CPU time: the children's rusage grows by it when it is
        # reaped (ip netns exec execs it: one process)
        gen0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        with self.generator(rate, seconds, warmup, conns, seed) as proc:
            out, err = proc.communicate(timeout=seconds + warmup + 60)
        after = self.counted()
        gen1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        after["generator_ms"] = 1000.0 * (gen1.ru_utime + gen1.ru_stime - gen0.ru_utime - gen0.ru_stime)
        if proc.returncode != 0:
            raise BenchError(err.strip()[-300:] or "mcload: exit %d" % proc.returncode)
        res = json.loads(out)
        res.update(self.figures(before, after))
        return res

    def figures(self, before, after):
        secs = after["t"] - before["t"]
        cpu0, cpu1 = placement.cpu_times(before["stat"]), placement.cpu_times(after["stat"])

        def busy_ms(cpu):
            return (cpu1[cpu]["busy"] - cpu0[cpu]["busy"]) * 1000.0 / os.sysconf("SC_CLK_TCK")
        server_ms = delta(before["server"], after["server"], "run_ns") / 1e6
        client_ms = delta(before["client_napi"], after["client_napi"], "run_ns") / 1e6
        gen_ms = after["generator_ms"]
        # where the poller was: memcached's worker asleep in epoll_wait (it
        # found nothing and blocked) or preempted, and the server NAPI's
        # thread run instead (a flush timer or a packet woke it)
        server, napi = (before["server"], after["server"]), "napi/%s-" % SERVER_DEV
        return {"server_task_ms": round(server_ms, 1),
                "serving_core_busy_pct": round(100.0 * busy_ms(self.serving_cpu) / (1000.0 * secs), 2),
                "serving_core_other_pct": round(100.0 * max(0.0, busy_ms(self.serving_cpu) - server_ms)
                                                / (1000.0 * secs), 2),
                "generator_core_other_pct": round(100.0 * max(0.0, busy_ms(self.generator_cpu) - client_ms - gen_ms)
                                                  / (1000.0 * secs), 2),
                "worker_sleeps": delta(*server, "voluntary", "mc-worker"),
                "worker_preempted": delta(*server, "nonvoluntary", "mc-worker"),
                "napi_thread_runs": delta(*server, "slices", napi)}

    def poller_share(self, rate, conns, seed, seconds=2.0):
        """Who took the server NAPI's packets, by tracing it for `seconds`
        of a load at rate: {"poller": packets polled in memcached's
        threads (the busy loop and the poll that ends it - which
        BusyPollRxPackets does not count), "thread": packets the NAPI's
        own thread polled, "share": the poller's share}; None without perf.
        A separate window after the run's: tracing every poll costs the
        serving CPU time the run's figures must not include."""
        perf = shutil.which("perf")
        if not perf:
            return None
        data = os.path.join(self.tmp.name, "napi.data")
        with self.generator(rate, seconds + 1.0, 0.5, conns, seed) as proc:
            time.sleep(0.5)
            res = subprocess.run([perf, "record", "-q", "-o", data, "-e", "napi:napi_poll", "--filter",
                                  "work > 0", "-a", "--", "sleep", "%g" % seconds], capture_output=True, text=True,
                                 timeout=seconds + 60)
            proc.communicate(timeout=seconds + 60)
        if res.returncode != 0:
            return {"failed": res.stderr.strip()[-200:]}
        out = subprocess.run([perf, "script", "-i", data, "-F", "comm,trace"], capture_output=True, text=True,
                             timeout=120).stdout
        return napi_polls(out, SERVER_DEV)

    def all_tasks(self):
        """{(pid, tid): (comm, allowed cpus, run ns)} of every task now."""
        out = {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                snap = placement.snapshot(int(name))
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                continue
            for tid, t in snap.items():
                out[(int(name), tid)] = (t["comm"], tuple(t["cpus"]), t["run_ns"] or 0)
        return out

    def placement(self):
        """What else ran over the whole bench: every task that may run on
        the serving or the generator CPU, by CPU time, the bench's own
        (this process, memcached's worker, the NAPI threads) left out;
        memcached's helper threads (mc-lrumaint, ...) share its CPU and
        are listed by name."""
        if not self.first:
            return None
        now = self.all_tasks()
        rows = []
        for key, (comm, cpus, ns) in now.items():
            ran = ns - self.first.get(key, (None, None, 0))[2]
            if ran <= 0 or not ({self.serving_cpu, self.generator_cpu} & set(cpus)):
                continue
            # the bench's own: this process, memcached's threads, the NAPIs' threads
            if key[0] == os.getpid() or (key[0] == self.served and comm == "mc-worker") \
                    or comm.startswith(("napi/" + SERVER_DEV, "napi/" + CLIENT_DEV)):
                continue
            rows.append((ran, key[1], comm, cpus))
        rows.sort(reverse=True)
        lines = ["%7s  %-18s %-8s %10s" % ("tid", "task", "allowed", "run ms")]
        lines += ["%7d  %-18s %-8s %10.1f" % (tid, comm[:18], ",".join(map(str, cpus)), ran / 1e6)
                  for ran, tid, comm, cpus in rows[:15]]
        return {"what": "other tasks that may run on CPU %d (serving) or CPU %d (generator), by CPU time over "
                        "the whole bench (top 15 of %d)" % (self.serving_cpu, self.generator_cpu, len(rows)),
                "lines": lines}
