# SPDX-License-Identifier: GPL-2.0-or-later
"""What several of the bench's unit tests (tests/unit/bench) share: the
fake server and testbed the runner's tests drive a whole bench with,
irqtune-bench's command line run as a process, and a memcached stand-in
on the loopback for mcload and the steering.

The fake server answers from bench_fixtures/server-state.json
(2026-11-26): `irqtune-bench server-state` in a generation-7 lab guest
(Linux 7.2, 4 vCPUs, 4-queue virtio-net, memcached pinned to CPU 2 by a
drop-in, no mode set; a kernel without CONFIG_SCHED_INFO, so no per-task
schedstat) before and after mcload's 1000 req/s for 2 s from the host,
mcload's answer, `irqtune-bench count` there (a TCG guest has no
instruction counter) and `ip -j addr show`; and from
bench_fixtures/doctor-memcached.json (2026-11-26): `irqtune doctor
--service memcached --seconds 4 --json` in the same lab, memcached opted
in under latency-suspend and loaded at 8000 req/s.  It plays the kernel:
its NAPIs and memcached's epoll hold what the variables file last asked
for.  The stand-in answers in memcached's text protocol ("STORED\\r\\n"
to the set, a 32-byte VALUE block and END to each get, as memcached 1.6
prints them)."""

import base64
import copy
import json
import re
import socket
import subprocess
import sys
import threading
import types
from pathlib import Path

from irqtune.kernel.values import parse_duration_ns
from irqtune_bench import modes, runner
from support.waiting import wait_for

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parents[1] / "unit" / "bench" / "bench_fixtures"
FIX = json.loads((FIXTURES / "server-state.json").read_text())
DOCTOR = json.loads((FIXTURES / "doctor-memcached.json").read_text())
NIC = FIX["nic"]
ORIGINAL_VARIABLES = "# the administrator's own\n#defer_hard_irqs=100\n"


RUN = ["run", "--server", "root@server", "--client", "root@client", "--server-addr", "192.0.2.1"]
VALUE = b"VALUE irqtune 0 32\r\n" + b"x" * 32 + b"\r\nEND\r\n"


def bench(*argv, cwd=None):
    return subprocess.run([sys.executable, "-m", "irqtune_bench", *argv], capture_output=True, text=True,
                          cwd=cwd or REPO, env={"PYTHONPATH": str(REPO / "bench"), "PATH": "/usr/bin:/bin"},
                          timeout=60)


class FakeServer:
    """Answers the bench's commands; holds files, the active profile and
    what the "kernel" holds after tuned-adm profile."""

    def __init__(self, ignore_mode=None, auto=False):
        self.files = {runner.VARIABLES: ORIGINAL_VARIABLES}
        self.active = "virtual-guest"
        self.auto = auto
        self.ignore_mode = ignore_mode
        self.held = None            # the mode the kernel holds
        self.log = []
        # irqtune doctor's answer: (rc, stdout, stderr)
        self.doctor = (0, json.dumps(DOCTOR), "")
        self.load_running = self.doctor_while = False

    def mode_of_variables(self):
        text = self.files.get(runner.VARIABLES, "")
        m = re.match(r"# irqtune-bench mode (\w+)", text)
        return m.group(1) if m else None

    def state(self):
        st = copy.deepcopy(FIX["before"])
        m = self.held_mode()
        for n in st["napis"]:
            n.update({"defer-hard-irqs": m["defer_hard_irqs"], "gro-flush-timeout": m["gro_flush_timeout_ns"],
                      "irq-suspend-timeout": m["irq_suspend_timeout_ns"]})
        ep = m["epoll"] or {"busy_poll_usecs": 0, "busy_poll_budget": 0, "prefer_busy_poll": 0}
        st["epoll"] = [dict(e, **ep) for e in st["epoll"]]
        dropin = self.files.get(runner.DROPIN % "memcached", "")
        st["slice_ms"] = 1 if "IRQTUNE_BENCH_EPOLL_SLICE_MS=1" in dropin else 0
        st["affinity"] = [2] if "CPUAffinity=2" in dropin else [0, 1, 2, 3]
        return st

    def held_mode(self):
        """The values the kernel holds: those of the variables file the
        profile last applied (base's when it ignored them)."""
        if self.held in (None, "base"):
            return modes.MODES["base"]
        if self.held == "auto":
            # what TuneD's irqtune set after measuring (test_tuned_auto.py's
            # server of 100 us per request: 172us / 1.8ms)
            return modes.mode_ns(100, 172000, 1800000, 0)
        v = dict(line.split("=", 1) for line in self.files[runner.VARIABLES].splitlines()
                 if "=" in line and not line.startswith("#"))
        return modes.mode_ns(int(v["defer_hard_irqs"]),
                             parse_duration_ns("gro_flush_timeout", v["gro_flush_timeout"]),
                             parse_duration_ns("irq_suspend_timeout", v["irq_suspend_timeout"]),
                             int(v["optin_busy_poll_usecs"]) if v["optin_services"] else None,
                             modes.MODES.get(self.held, {}).get("epoll_slice_ms", 0))

    def run(self, argv, timeout=60, input=None):
        self.log.append(argv)
        if argv[:2] == ["irqtune", "doctor"]:
            self.doctor_while = self.load_running
            return self.doctor
        if argv[:2] == ["sh", "-c"] and argv[2] == runner.READ:
            if argv[4] not in self.files:
                return 0, "absent\n", ""
            return 0, "644\n%s" % base64.b64encode(self.files[argv[4]].encode()).decode(), ""
        if argv[:2] == ["sh", "-c"] and argv[2] == runner.WRITE:
            self.files[argv[4]] = base64.b64decode(input).decode()
            return 0, "", ""
        if argv[:3] == ["rm", "-f", "--"]:
            self.files.pop(argv[3], None)
            return 0, "", ""
        if argv[:2] == ["tuned-adm", "profile"]:
            self.active = " ".join(argv[2:])
            wanted = self.mode_of_variables()
            # a kernel that did not take the mode: its defaults (base)
            self.held = "base" if wanted == self.ignore_mode else wanted
            return 0, "", ""
        if argv == ["tuned-adm", "active"]:
            return 0, "Current active profile: %s\n" % self.active, ""
        if argv == ["tuned-adm", "profile_mode"]:
            return 0, "Profile selection mode: %s\n" % ("auto" if self.auto else "manual"), ""
        if argv == ["tuned-adm", "auto_profile"]:
            self.active = "virtual-guest"
            return 0, "", ""
        if argv == ["tuned-adm", "off"]:
            self.active = None
            return 0, "", ""
        if argv[:2] == ["ip", "-j"]:
            return 0, FIX["ip_j_addr"], ""
        if "server-state" in argv:
            st = self.state()
            if "--stats-only" in argv:
                st = {"stats": FIX["after"]["stats"], "napis": st["napis"]}
            return 0, json.dumps(st), ""
        if argv[0] in ("systemctl", "install", "test") or argv[:2] == ["tuned-adm", "profile_info"]:
            return 0, "active\n" if argv[:2] == ["systemctl", "is-active"] else "", ""
        raise AssertionError("unexpected command %s" % argv)


class FakeTestbed:
    server_bench = ["irqtune-bench"]
    shim = "/usr/lib64/irqtune-bench/epoll_slice.so"
    server_addr = "10.77.0.2"
    nic = None
    topologies = ["-"]

    def __init__(self, server, late=None):
        self.server = server
        self.loads = []
        # the generator's p99 lateness per load, in order; then 120 us (the
        # fixture's real run was 16 ms late: a disturbed run)
        self.late = list(late or [])

    def prepare(self, log):
        pass

    def describe(self):
        return {"summary": "a fake"}

    def set_topology(self, t):
        pass

    def load(self, rate, seconds, warmup, conns, seed):
        self.loads.append((self.server.held, rate))
        if seed == 0:       # the recommend mode's measurement: until the doctor has run
            self.server.load_running = True
            wait_for(lambda: self.server.doctor_while, timeout=10, what="the doctor")
            self.server.load_running = False
        return dict(FIX["mcload"], send_late_p99_us=self.late.pop(0) if self.late else 120.0)

    def placement(self):
        return None


def args(**kw):
    a = dict(modes=",".join(modes.SERIES_MODES), loads="500,1000", fractions=[], repeats=2, seconds=1.0,
             warmup=0.1, conns=1, memcached_cpu=2, service="memcached", probe_start=1000,
             probe_max=2000, probe_seconds=1.0, seed=1, recommend_seconds=5.0, reruns=2, step_seconds=0)
    a.update(kw)
    # as cli.run_settings() hands them over
    a["modes"] = modes.parse_modes(a["modes"])
    a["loads"] = sorted(int(x) for x in a["loads"].split(",") if x)
    return types.SimpleNamespace(**a)


def run_fake(server, late=None, **kw):
    tb = FakeTestbed(server, late)
    report = {}
    failed = runner.run_bench(tb, args(**kw), lambda msg: None, report, lambda: None)
    return tb, report, failed


class StandIn:
    """Answers the first `answer` gets, then reads and answers nothing;
    accepts any number of connections and keeps their peers' ports."""

    def __init__(self, answer):
        self.answer = answer
        self.gets = 0
        self.peers = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            conn, peer = self.sock.accept()
            self.peers.append(peer[1])
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn):
        buf = b""
        while True:
            try:
                data = conn.recv(65536)
            except ConnectionResetError:    # mcload --source-ports ends so
                return
            if not data:
                return
            buf += data
            out = []
            while b"\r\n" in buf:
                line, buf = buf.split(b"\r\n", 1)
                if line.startswith(b"set "):
                    buf = buf.split(b"\r\n", 1)[1]
                    out.append(b"STORED\r\n")
                elif line == b"version":
                    out.append(b"VERSION 1.6.21\r\n")
                elif line.startswith(b"get "):
                    self.gets += 1
                    if self.gets <= self.answer:
                        out.append(VALUE)
            if out:
                conn.sendall(b"".join(out))


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for sock in socks:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in socks]
    for sock in socks:
        sock.close()
    return ports
