#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""`make lab-bench`: irqtune-bench (bench/irqtune_bench) run inside the
generation-7 lab.  The bench - modes, read-backs, load schedule, JSON,
table, verdicts, plots - is the packaged one; this file is only the lab's
testbed: the server is a Linux 7.2 guest (4-queue virtio-net, TuneD 2.27)
driven through the lab agent, the client is mcload on the host in the
guest's network namespace, and the CPU cost is guest instructions counted
by the QEMU plugin (tests/lab/plugin) over exactly the measurement window.

Topology (--topology): where the host runs the guest's threads.
  pinned  the serving vCPU (memcached's, --memcached-cpu; its rx queue's
          interrupt is affine to it too) alone on one host core; every
          other vCPU, QEMU's main loop, I/O, RCU and worker threads, and
          the generator on the other core(s)
  shared  every thread anywhere (the host scheduler's choice): the
          topology of the runs in docs/benchmarks.md before issue 31
  both    each (mode, load) run once in each topology per round,
          interleaved, for the before/after spread table
QEMU names its vCPU threads ("CPU 2/TCG", -name ...,debug-threads=on);
the bench places them with sched_setaffinity before every run and
records, per run, how long the serving vCPU's thread was runnable but
waited for a host core, and what else ran on its core.

Run by make lab-bench, or as root with the repository's tests/ and bench/
on PYTHONPATH: PYTHONPATH=tests:bench python3 tests/lab/bench/memcached_modes.py
"""

import base64
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from irqtune_bench import cli, orchestrator, placement
from irqtune_bench.guard import BadArgument, BenchError
from support import labvm
from support.host7 import COUNTED_BOOT_ARGS, COUNTED_CPU, GUEST_IP, KERNEL, Host7

TOOLS = labvm.LAB_CACHE / "bench"
# On the shared core QEMU's main loop goes before the generator: a quiet
# host measured (2300 and 6800 req/s, main loop below the generator) the
# loop waiting 5.0-14.5 % of a run, about the generator's own CPU share,
# while the generator's send lateness p99 stayed at 53-64 us.
MAIN_LOOP_PRIORITY = 10
GENERATOR_PRIORITY = 5
GUEST_SHIM = "/usr/local/lib/irqtune-bench/epoll_slice.so"
# the guest runs the bench's server side from the repository share
GUEST_BENCH = ["env", "PYTHONPATH=%s/bench" % labvm.GUEST_REPO, "python3", "-m", "irqtune_bench"]


class GuestServer:
    """The lab guest as the bench's server: commands through the agent."""

    def __init__(self, g):
        self.g = g

    def run(self, argv, timeout=60, input=None):
        try:
            res = self.g.execute(argv, timeout=timeout, input=input)
        except labvm.LabError as err:
            raise BenchError(str(err))
        return res["rc"], res["stdout"], res.get("stderr", "")


def host_cpus():
    """(the serving host core, the other cores) of the CPUs this process
    may use: the highest-numbered one serves."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise SystemExit("lab-bench: --topology pinned needs 2 host CPUs, this process may use %s" % cpus)
    return [cpus[-1]], cpus[:-1]


class LabTestbed:
    def __init__(self, g, args):
        self.g = g
        self.args = args
        self.server = GuestServer(g)
        self.server_bench = GUEST_BENCH
        self.shim = GUEST_SHIM
        self.server_addr = GUEST_IP
        self.nic = g.nic
        self.topologies = {"both": ["shared", "pinned"]}.get(args.topology, [args.topology])
        self.qemu = g.proc.pid      # `ip netns exec` execs QEMU: the same process
        self.all_cpus = sorted(os.sched_getaffinity(0))
        self.serving_cpus, self.other_cpus = host_cpus() if "pinned" in self.topologies else (None, None)
        self.topology = None
        self.generator_cpus = self.all_cpus
        self.first = None

    def prepare(self, log):
        h = Host7(self.g)
        h.install_project()
        h.serve_memcached_on_nic()
        # The image's other servers (nginx, redis) are for other tests; under
        # TCG their timers cost millions of instructions a second.
        h.sh("systemctl stop nginx redis-server")
        shim = (TOOLS / "epoll_slice.so").read_bytes()
        h.sh("install -d -m 0755 %s" % os.path.dirname(GUEST_SHIM))
        rc, _ = self.g.run(["sh", "-c", 'base64 -d > "$1" && chmod 0644 "$1"', "shim", GUEST_SHIM],
                           input=base64.b64encode(shim).decode())
        if rc != 0:
            raise BenchError("copying the epoll shim: %s" % self.g.last_stderr)
        log("project installed in the guest")
        idle0 = self.g.insns()
        time.sleep(2)
        idle1 = self.g.insns()
        self.idle = [round((b - a) / 2) for a, b in zip(idle0, idle1)]
        log("idle guest: %s instructions/s per vCPU" % self.idle)
        self.set_topology(self.topologies[-1])
        self.first = (placement.snapshot(self.qemu), time.monotonic())
        for line in placement.describe(placement.window(self.first[0], self.first[0], 0, [])["threads"]):
            log("  " + line)

    def describe(self):
        return {"summary": "a Linux 7.2 guest under QEMU TCG (%d vCPUs, -cpu %s), topology %s"
                           % (self.g.smp, COUNTED_CPU, self.args.topology),
                "insns": "guest instructions (QEMU plugin) over exactly the window",
                "serving_thread": "the serving vCPU's QEMU thread on the host",
                "kernel": KERNEL, "kernel_info": labvm.kernel_info(KERNEL), "machine": machine(),
                "guest": {"vcpus": self.g.smp, "cpu_model": COUNTED_CPU, "cmdline_extra": COUNTED_BOOT_ARGS,
                          "nic_queues": labvm.NIC_QUEUES},
                "idle_insns_per_s": self.idle,
                "host_cpus": {"serving": self.serving_cpus, "other": self.other_cpus}}

    def set_topology(self, topology):
        snap = placement.snapshot(self.qemu)
        if topology == "pinned":
            wanted = placement.plan(snap, [self.args.memcached_cpu], self.serving_cpus, self.other_cpus)
            self.generator_cpus = self.other_cpus
        else:
            wanted = {tid: self.all_cpus for tid in snap}
            self.generator_cpus = self.all_cpus
        placement.apply(self.qemu, wanted)
        # QEMU's main loop moves every packet (vhost=off), as a NIC's DMA
        # would: pinned, it goes first on its core, so it does not queue
        # behind the other vCPUs (measured: 15-19 % of a run waiting for
        # the core beside three vCPUs and the generator)
        policy = (os.SCHED_FIFO, MAIN_LOOP_PRIORITY) if topology == "pinned" else (os.SCHED_OTHER, 0)
        os.sched_setscheduler(self.qemu, policy[0], os.sched_param(policy[1]))
        self.topology = topology

    def load(self, rate, seconds, warmup, conns, seed):
        argv = [str(TOOLS / "mcload"), "--host", GUEST_IP, "--rate", str(rate), "--seconds", str(seconds),
                "--warmup", str(warmup), "--conns", str(conns), "--counter", str(self.g.insn_sock),
                "--seed", str(seed)]
        cpus = self.generator_cpus

        def placed():
            # the client's side of the link: on the other core, ahead of
            # everything there but the main loop (SCHED_FIFO), so that its
            # sends are on time - it sleeps between them and uses 7-16 %
            # of a core
            os.sched_setaffinity(0, cpus)
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(GENERATOR_PRIORITY))
        snap0, stat0, t0 = placement.snapshot(self.qemu), Path("/proc/stat").read_text(), time.monotonic()
        res = subprocess.run(self.g.netns.exec_argv(argv), capture_output=True, text=True,
                             timeout=seconds + warmup + 60, preexec_fn=placed)
        snap1, stat1, t1 = placement.snapshot(self.qemu), Path("/proc/stat").read_text(), time.monotonic()
        if res.returncode != 0:
            raise BenchError("mcload: %s" % res.stderr.strip())
        out = json.loads(res.stdout)
        serving = [placement.vcpu_threads(snap1)[self.args.memcached_cpu]]
        host = placement.window(snap0, snap1, t1 - t0, serving,
                                self.serving_cpus if self.topology == "pinned" else None,
                                placement.cpu_times(stat0), placement.cpu_times(stat1),
                                os.sysconf("SC_CLK_TCK"))
        host["generator_cpus"] = cpus
        # QEMU's main loop (the process's first thread) moves every packet
        # of the NIC (vhost=off): how long it waited for a host core
        main = next((t for t in host["threads"] if t["tid"] == self.qemu), None)
        host["main_loop_wait_pct"] = (round(100.0 * main["wait_ms"] / (1000.0 * (t1 - t0)), 2)
                                      if main and main["wait_ms"] is not None else None)
        host["threads"] = [t for t in host["threads"] if t["run_ms"] or t["wait_ms"]]
        out.update(insns_scope="window", host=host)
        return out

    def placement(self):
        if not self.first:
            return None
        snap, t0 = self.first
        w = placement.window(snap, placement.snapshot(self.qemu), time.monotonic() - t0, [])
        return {"what": "QEMU's threads on the host over the whole bench, topology %s at the end; "
                        "generator on CPUs %s" % (self.topology, ",".join(map(str, self.generator_cpus))),
                "lines": placement.describe(w["threads"])}

    def finish(self):
        pass


def machine():
    info = {"host_cpus": os.cpu_count(), "host_kernel": os.uname().release}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["host_cpu"] = line.split(":", 1)[1].strip()
                break
        info["host_mem_gib"] = round(int(Path("/proc/meminfo").read_text().split()[1]) / 2**20, 1)
    except (OSError, ValueError, IndexError):
        pass
    res = subprocess.run([labvm.QEMU, "--version"], capture_output=True, text=True)
    info["qemu"] = res.stdout.splitlines()[0] if res.stdout else "?"
    return info


def main(argv=None):
    ap = cli.Parser(prog="lab-bench", description=__doc__.split("\n\n")[0])
    cli.add_run_options(ap, out_default=str(labvm.REPO / "build"))
    ap.add_argument("--topology", choices=("pinned", "shared", "both"), default="pinned",
                    help="where the host runs the guest's threads (see the top of this file)")
    ap.add_argument("--vcpus", default="4", help="the guest's vCPUs (memcached's among them)")
    ap.add_argument("--report", metavar="JSON", help="only write table, verdicts and plots of a saved run")
    args = ap.parse_args(argv)
    if args.report:
        return cli.main(["report", args.report, "--out", args.out, "--name", "lab-bench"])
    try:
        settings = lab_settings(args)
    except BadArgument as err:
        ap.exit(cli.EXIT_BAD_ARGUMENT, "lab-bench: %s\n" % err)
    reason = labvm.missing(KERNEL)
    for tool in ("mcload", "epoll_slice.so"):
        if not reason and not (TOOLS / tool).is_file():
            reason = "%s not built; run `make lab-bench-tools`" % (TOOLS / tool)
    if not reason and not labvm.insn_plugin().is_file():
        reason = "%s not built; run `make lab-plugin`" % labvm.insn_plugin()
    if reason:
        print("lab-bench: %s" % reason, file=sys.stderr)
        return 1
    with labvm.Guest(kernel=KERNEL, cmdline=COUNTED_BOOT_ARGS, cpu=COUNTED_CPU, smp=settings.vcpus,
                     count_insns=True) as g:
        print("[lab-bench] guest up in %.0fs, nic %s" % (g.boot_seconds, g.nic), file=sys.stderr)
        return orchestrator.execute(LabTestbed(g, settings), settings, "lab-bench",
                           "make lab-bench LAB_BENCH_ARGS=\"%s\"" % " ".join(sys.argv[1:] if argv is None else argv))


def lab_settings(args):
    """cli.run_settings() plus the lab's own options."""
    s = cli.run_settings(args)
    s.topology = args.topology
    s.vcpus = cli.number("--vcpus", args.vcpus, 2, 64)
    if not 0 <= s.memcached_cpu < s.vcpus:
        raise BadArgument("--memcached-cpu %d: accepted a vCPU of the guest, 0 to %d (--vcpus)"
                              % (s.memcached_cpu, s.vcpus - 1))
    if s.memcached_cpu == 0:
        raise BadArgument("--memcached-cpu 0: accepted 1 to %d; vCPU 0 stays the guest's housekeeping "
                              "CPU" % (s.vcpus - 1))
    return s


if __name__ == "__main__":
    sys.exit(main())
