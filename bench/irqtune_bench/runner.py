# SPDX-License-Identifier: GPL-2.0-or-later
"""The bench's schedule, on any testbed: switch the server to each mode
the way an administrator does (latency-suspend's variables file,
`tuned-adm profile`, the busy-poll opt-in), read back what is in effect
before every run, run the load, derive the figures.

A testbed (ssh.SshTestbed for two real hosts, the lab's LabTestbed for
its QEMU guest) supplies:

  server          run(argv, timeout=, input=) -> (rc, stdout, stderr) on the server, as root
  server_bench    argv that starts irqtune-bench's server side there
  shim            path of epoll_slice.so on the server (fullbusy)
  server_addr     the address the generator sends to
  nic             the server's NIC under test, or None (found from server_addr)
  topologies      the placements it can run in (["-"] when it has none)
  describe()      {"summary": ..., "insns": ..., "serving_thread": ...} for the report
  prepare(log)    its own set-up before the bench's (the lab: install the project)
  set_topology(t) put the threads in placement t before a run
  load(rate, seconds, warmup, conns, seed) -> mcload's JSON, plus "insns"
                  ([per CPU], with "insns_scope": "window" when counted over
                  exactly the measurement window, "run" when over the whole
                  load run) and "host" (placement.window() of the run) if it can
  placement()     {"what": ..., "lines": [...]}: where its threads ran, or None
  finish()        its own tear-down

Loads: the server's saturation point is found first (base mode, offered
rate raised 1.5x per probe until the achieved rate falls below 95 % of it
or the median latency exceeds 10x the lightest probe's, then two bisection
steps), then the offered loads are fractions of it.

Every (mode, load, topology) cell runs --repeats times; rounds interleave:
each round sets every mode once (shuffled order) and runs each load once
per topology (shuffled order).
"""

import base64
import contextlib
import json
import os
import random
import signal
import subprocess
import threading
import time

from . import placement, servervalues
from .guard import BadArgument, BenchError, shown
from .modes import AUTO, MODE_AUTO, MODES, PROFILE, RECOMMEND, WHO_SETS, check, recommended, variables_of
from .report import saturation_text

DROPIN = "/etc/systemd/system/%s.service.d/40-irqtune-bench.conf"
VARIABLES = "/etc/tuned/%s-variables.conf" % PROFILE
# The remote files the bench changes go through text channels (ssh's
# captured output, the lab's agent), so their bytes travel as base64: a
# CR, a CRLF or a byte that is not UTF-8 comes back exactly.  Path and
# mode are arguments, never part of the script.
# writes stdin (base64) to $1 with mode $2, atomically
WRITE = ('umask 077 && base64 -d > "$1.irqtune-bench" && chmod "$2" "$1.irqtune-bench" '
         '&& mv -f "$1.irqtune-bench" "$1"')
# prints "absent", or the file's mode (octal) and its bytes in base64
READ = ('if [ -e "$1" ] || [ -L "$1" ]; then stat -c %a -- "$1" && base64 -w 0 -- "$1"; '
        'else echo absent; fi')


# -- the server's changes and their undos -----------------------------------

HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_held = []


@contextlib.contextmanager
def signals_held():
    """SIGINT, SIGTERM and SIGHUP wait while the block runs (a change to the
    server and the registration of its undo, or the put-back), then act
    as they would have - once, after it.  Python runs signal handlers in
    the main thread only: elsewhere, and inside a hold, this holds nothing
    more."""
    if _held or threading.current_thread() is not threading.main_thread():
        yield
        return
    pending = []
    previous = {s: signal.signal(s, lambda signum, frame: pending.append(signum)) for s in HELD_SIGNALS}
    _held.append(True)
    try:
        yield
    finally:
        _held.pop()
        for s, handler in previous.items():
            signal.signal(s, signal.SIG_DFL if handler is None else handler)
        if pending:
            handler = previous[pending[0]]
            if callable(handler):
                handler(pending[0], None)
            elif handler != signal.SIG_IGN:
                signal.raise_signal(pending[0])


# the order of the put-back: the files first, then what reads them
FILES, RELOAD, PROFILE_SWITCH, SERVICE, NIC = range(5)


class UndoLog:
    """The bench's changes to the server, each undo registered before its
    change is made (once per key: the first undo puts back what was there
    before the bench).  put_back() runs every undo - by phase, files
    first, then daemon-reload, the profile, the service's restart, the
    NIC's steering; newest first within a phase - even when one fails,
    logs each that failed in one line and returns their names."""

    def __init__(self):
        self.undos = {}             # key -> (phase, order, what, undo)

    def register(self, key, what, undo, phase=FILES):
        if key not in self.undos:
            self.undos[key] = (phase, len(self.undos), what, undo)

    @contextlib.contextmanager
    def change(self, key, what, undo, phase=FILES):
        """The block makes the change: its undo is registered first, and
        signals wait until the change is made (or failed)."""
        with signals_held():
            self.register(key, what, undo, phase)
            yield

    def put_back(self, log):
        failed = []
        with signals_held():
            undos, self.undos = sorted(self.undos.values(), key=lambda u: (u[0], -u[1])), {}
            for _, _, what, undo in undos:
                try:
                    undo()
                except Exception as err:        # every undo runs, whatever one raised
                    failed.append(what)
                    log("put back FAILED: %s: %s" % (what, shown(str(err), 300)))
        return failed


class Bench:
    """The server side of the bench: modes, read-backs, restore."""

    def __init__(self, tb, args, log):
        self.tb = tb
        self.args = args
        self.log = log
        self.service = args.service
        self.cpu = args.memcached_cpu
        self.dropin = DROPIN % servervalues.service_base(self.service)
        self.saved = None
        self.nic = tb.nic
        # the fixed modes, auto, and recommend once measured
        self.modes = dict(MODES, **{AUTO: MODE_AUTO})
        # the testbed's, when it changes the server too (ssh: the steering)
        self.undo = getattr(tb, "undo", None) or UndoLog()
        # a testbed that runs memcached itself (netns.py) instead of a
        # systemd service: no drop-in, the opt-in at its start, a pid file
        self.own = getattr(tb, "serve", None) is not None
        # recommend's values per load (the doctor run at each), once measured
        self.recommended = {}

    def whose(self):
        """The server-state / incoming arguments naming memcached."""
        return ["--pid-file", self.tb.pid_file] if self.own else ["--service", self.service]

    def slicing(self):
        """The modes of the run that preload the epoll shim."""
        return [m for m in self.args.modes if m in self.modes and self.modes[m]["epoll_slice_ms"]]

    def sh(self, argv, timeout=120, input=None):
        rc, out, err = self.tb.server.run(argv, timeout=timeout, input=input)
        if rc != 0:
            raise BenchError("%s: rc %s: %s" % (" ".join(argv), rc, (err or out).strip()[-800:]))
        return out

    def save_file(self, path):
        """(mode, bytes) of a server file the bench will change, None when
        there is none."""
        out = self.sh(["sh", "-c", READ, "read", path], timeout=30).split()
        if out == ["absent"]:
            return None
        if len(out) not in (1, 2) or not out[0].isdigit():
            raise BenchError("reading %s on the server: unexpected answer %r" % (path, " ".join(out)[:200]))
        return out[0], base64.b64decode(out[1] if len(out) == 2 else "")

    def write(self, path, data, mode="0644"):
        """Write data (str or bytes) to a server file with mode."""
        if isinstance(data, str):
            data = data.encode()
        self.sh(["sh", "-c", WRITE, "write", path, mode], input=base64.b64encode(data).decode())

    def put_back(self, path, saved):
        """A file as save_file() found it: bytes and mode, or absent."""
        if saved is None:
            self.sh(["rm", "-f", "--", path], timeout=30)
        else:
            self.write(path, saved[1], saved[0])

    def check_values(self):
        """The values the bench would write into the server's files, checked
        before any change: the NIC, the service, the shim fullbusy preloads."""
        try:
            servervalues.interface("--nic" if self.tb.nic else "the interface holding %s"
                                   % self.tb.server_addr, self.nic)
            if not self.own:
                servervalues.service("--service", self.service)
            if self.slicing():
                servervalues.shim_path("the epoll shim", self.tb.shim)
        except BadArgument as err:
            raise BenchError(str(err)) from None

    def prepare(self):
        """Check the server, find its NIC, remember what the bench changes."""
        sb = self.tb.server_bench
        if self.nic is None:
            out = self.sh(["ip", "-j", "addr", "show"])
            self.nic = nic_of_address(out, self.tb.server_addr)
            if not self.nic:
                raise BenchError("no interface of the server holds %s (--server-addr)" % self.tb.server_addr)
        self.check_values()
        if not self.own:
            rc, out, err = self.tb.server.run(["systemctl", "is-active", "--", self.service], timeout=30)
            if out.strip() != "active":
                raise BenchError("service %s is not active on the server (%s)"
                                 % (self.service, out.strip() or err.strip()))
        rc, out, err = self.tb.server.run(["tuned-adm", "profile_info", PROFILE], timeout=60)
        if rc != 0:
            raise BenchError("TuneD on the server does not know the profile %s: %s (install irqtune's "
                             "profiles and start tuned)" % (PROFILE, (out + err).strip()[-300:]))
        if self.slicing():
            rc, _, _ = self.tb.server.run(["test", "-f", self.tb.shim], timeout=30)
            if rc != 0:
                raise BenchError("the epoll shim %s is not on the server (%s need it)"
                                 % (self.tb.shim, ", ".join(self.slicing())))
        if not self.own:        # the testbed's own memcached starts with the first mode
            self.sh(sb + ["server-state", self.nic] + self.whose())     # the read-back works
        rc, out, _ = self.tb.server.run(["tuned-adm", "active"], timeout=60)
        active = tuned_active(out)
        rc, out, _ = self.tb.server.run(["tuned-adm", "profile_mode"], timeout=60)
        self.saved = {"active": active, "auto": "mode: auto" in out, "variables": self.save_file(VARIABLES)}
        if not self.own:
            self.saved.update(dropin=self.save_file(self.dropin), dropin_dir=self.tb.server.run(
                ["test", "-d", os.path.dirname(self.dropin)], timeout=30)[0] == 0)
        self.log("server: NIC %s, %s active, TuneD profile before the bench: %s%s"
                 % (self.nic, self.service, " ".join(active or ["none"]),
                    " (chosen by TuneD)" if self.saved["auto"] else ""))

    def write_dropin(self, m):
        lines = ["# irqtune-bench (removed when the bench ends)", "[Service]", "CPUAffinity=%d" % self.cpu]
        if m["epoll_slice_ms"]:
            lines += ['Environment="LD_PRELOAD=%s"' % self.tb.shim,
                      "Environment=IRQTUNE_BENCH_EPOLL_SLICE_MS=%d" % m["epoll_slice_ms"]]
        # what reads the drop-in: systemd, and the service when it restarts
        self.undo.register("restart", "the restart of %s" % self.service, self.restart, SERVICE)
        self.undo.register("daemon-reload", "systemctl daemon-reload", self.daemon_reload, RELOAD)
        directory = os.path.dirname(self.dropin)
        if not self.saved["dropin_dir"]:
            with self.undo.change("dropin-dir", "the directory %s" % directory, lambda: self.sh(
                    ["rmdir", "--ignore-fail-on-non-empty", "--", directory], timeout=30)):
                self.sh(["install", "-d", "-m", "0755", directory])
        with self.undo.change("dropin", "the drop-in %s" % self.dropin,
                              lambda: self.put_back(self.dropin, self.saved["dropin"])):
            self.write(self.dropin, "\n".join(lines) + "\n")
        with signals_held():
            self.daemon_reload()

    def daemon_reload(self):
        self.sh(["systemctl", "daemon-reload"], timeout=60)

    def restart(self):
        self.sh(["systemctl", "restart", "--", self.service], timeout=120)

    def put_back_profile(self):
        """The profile that was active, or TuneD's own choice, or none."""
        if self.saved["auto"]:
            self.sh(["tuned-adm", "auto_profile"], timeout=300)
        elif self.saved["active"]:
            self.sh(["tuned-adm", "profile"] + self.saved["active"], timeout=300)
        else:
            self.sh(["tuned-adm", "off"], timeout=300)

    def mode(self, name, load=None):
        """The values of mode name (recommend's: the doctor's at load)."""
        m = self.recommended.get(load) if name == RECOMMEND else self.modes.get(name)
        if m is None:
            raise BenchError("mode %s has no values%s: the doctor recommended none (see the log)"
                             % (name, "" if load is None else " at %d req/s" % load))
        return m

    def set_mode(self, name, load=None):
        """The mode through the project (profile variables, opt-in) and the
        bench's own drop-in (pinning, fullbusy's epoll slices), or the
        testbed's own memcached started with the mode's opt-in."""
        m = self.mode(name, load)
        try:
            servervalues.mode_values("mode %s:" % name, m)
        except BadArgument as err:
            raise BenchError(str(err)) from None
        t0 = time.monotonic()
        if not self.own:
            self.write_dropin(m)
        values = variables_of(m, self.nic, self.service, pid_file=self.tb.pid_file if self.own else None)
        with self.undo.change("variables", "the variables file %s" % VARIABLES,
                              lambda: self.put_back(VARIABLES, self.saved["variables"])):
            self.write(VARIABLES, "# irqtune-bench mode %s\n" % name
                       + "".join("%s=%s\n" % kv for kv in values.items()))
        with self.undo.change("profile", "the profile %s" % ("TuneD chose" if self.saved["auto"] else " ".join(
                self.saved["active"] or ["off"])), self.put_back_profile, PROFILE_SWITCH):
            self.sh(["tuned-adm", "profile", PROFILE], timeout=300)
        if self.own:
            self.tb.serve(m)
            return time.monotonic() - t0
        if not m["epoll"]:
            # no opt-in: restart so memcached runs without whatever preload
            # and pinning the previous mode left
            with signals_held():
                self.restart()
        self.sh(["systemctl", "is-active", "--", self.service])
        return time.monotonic() - t0

    def state(self, stats_only=False):
        argv = self.tb.server_bench + ["server-state", self.nic] + self.whose()
        out = self.sh(argv + (["--stats-only"] if stats_only else []), timeout=60)
        return json.loads(out)

    def finish(self):
        """Put back what the bench changed (the undo log: the variables
        file, the drop-in, the profile that was active, the service's
        restart, the testbed's steering); the names of the undos that
        failed, each logged."""
        changed = bool(self.undo.undos)
        failed = self.undo.put_back(self.log)
        if changed and not failed and self.saved:
            self.log("server: variables file, drop-in and profile %s put back"
                     % ("(automatic)" if self.saved["auto"] else " ".join(self.saved["active"] or ["off"])))
        return failed


def nic_of_address(ip_json, address):
    """The interface holding address, from the server's `ip -j addr show`
    (read here, on the orchestrating host)."""
    for link in json.loads(ip_json or "[]"):
        for a in link.get("addr_info", []):
            if a.get("local") == address:
                return link["ifname"]
    return None


def tuned_active(text):
    """[profiles] `tuned-adm active` names, without the post-loaded one
    (it stays loaded across profile switches by itself); None for none."""
    active, post = None, []
    for line in text.splitlines():
        if line.startswith("Current active profile:"):
            active = line.split(":", 1)[1].split()
        elif line.startswith("Current post-loaded profile:"):
            post = line.split(":", 1)[1].split()
    if active and post and active[-len(post):] == post:
        active = active[:-len(post)]
    return active or None


# -- counters ---------------------------------------------------------------

def parse_stats(s, irq_numbers, nic=None):
    """The counters of one server-state snapshot; rx_packets: the NIC's
    (every device's but lo's when it is not named)."""
    out = {"cpu": {}, "irqs": {}, "rxq": {}}
    for line in s["/proc/stat"].splitlines():
        f = line.split()
        if f and f[0].startswith("cpu") and f[0][3:].isdigit():
            v = [int(x) for x in f[1:]]
            out["cpu"][int(f[0][3:])] = (sum(v) - v[3] - v[4], sum(v))
    lines = s["/proc/interrupts"].splitlines()
    ncpu = len(lines[0].split())
    for line in lines[1:]:
        f = line.split()
        if f and f[0].rstrip(":").isdigit() and int(f[0].rstrip(":")) in irq_numbers:
            out["irqs"][int(f[0].rstrip(":"))] = sum(int(x) for x in f[1:1 + ncpu])
    for line in s["/proc/softirqs"].splitlines():
        if line.split()[:1] == ["NET_RX:"]:
            out["net_rx"] = sum(int(x) for x in line.split()[1:])
    nl = [l.split() for l in s["/proc/net/netstat"].splitlines() if l.startswith("TcpExt:")]
    out["busy_poll_rx"] = int(dict(zip(nl[0][1:], nl[1][1:]))["BusyPollRxPackets"])
    rx_total = 0
    for line in s["/proc/net/dev"].splitlines():
        name, _, fields = line.partition(":")
        if fields and (name.strip() == nic if nic else name.strip() != "lo"):
            rx_total += int(fields.split()[1])
    out["rx_packets"] = rx_total
    out["rxq"] = {int(q): n for q, n in s["rxq"].items()}
    return out


def serving_queues(rxq, irqs):
    """The rx queues that carried at least 10 % of the run's packets (per
    queue statistics), else of its queue interrupts."""
    basis = rxq if sum(rxq.values()) > 0 else irqs
    total = sum(basis.values())
    return sorted(q for q, n in basis.items() if total and n >= 0.1 * total)


USER_HZ = 100      # /proc/stat's unit on every Linux architecture


def derive(res, st0, st1, cpu, nic=None):
    """Per-run figures from the generator's answer and two server snapshots."""
    irq_of_queue = {int(q): irq for q, irq in st0["queue_irqs"].items()}
    a = parse_stats(st0["stats"], set(irq_of_queue.values()), nic)
    b = parse_stats(st1["stats"], set(irq_of_queue.values()), nic)
    rxq = {q: b["rxq"].get(q, 0) - a["rxq"].get(q, 0) for q in b["rxq"]}
    irqs = {q: b["irqs"].get(irq, 0) - a["irqs"].get(irq, 0) for q, irq in irq_of_queue.items()}
    queues = serving_queues(rxq, irqs)
    serving = {cpu}
    for q in queues:
        serving.update(st0["irq_cpus"].get(str(irq_of_queue.get(q)), []))
    serving = sorted(serving)
    busy = {c: b["cpu"][c][0] - a["cpu"][c][0] for c in b["cpu"]}
    total = {c: max(1, b["cpu"][c][1] - a["cpu"][c][1]) for c in b["cpu"]}
    answered = max(1, res["measured"])
    out = {
        "rx_queues_used": queues, "serving_cpus": serving,
        "cpu_pct_serving": round(100.0 * sum(busy.get(c, 0) for c in serving)
                                 / sum(total.get(c, 1) for c in serving), 1),
        "cpu_pct_guest": round(100.0 * sum(busy.values()) / sum(total.values()), 1),
        "irqs_per_request": round(sum(irqs.values()) / answered, 4),
        "net_rx_per_request": round((b["net_rx"] - a["net_rx"]) / answered, 4),
        "busy_share": round((b["busy_poll_rx"] - a["busy_poll_rx"]) / max(1, b["rx_packets"] - a["rx_packets"]), 3),
        # CPU time per request on the serving CPUs, whatever the CPU offers:
        # /proc/stat's busy ticks (USER_HZ, 100 a second) between the two
        # read-backs, over every request answered in the load run
        "cpu_us_per_request": round(sum(busy.get(c, 0) for c in serving) * 1e6 / USER_HZ
                                    / max(1, res.get("answered", answered)), 2),
    }
    if res.get("server_task_ms") is not None:
        # the testbed counts the server's own tasks (netns.py): that is the
        # cost; the serving CPU's busy time per request stays beside it
        out["serving_cpu_us_per_request"] = out["cpu_us_per_request"]
        out["cpu_us_per_request"] = cost_per_request(res)
        served = max(1, res.get("answered") or answered) / 1000.0
        for key in ("worker_sleeps", "worker_preempted", "napi_thread_runs"):
            if res.get(key) is not None:
                out[key + "_per_kreq"] = round(res[key] / served, 2)
    # one generator (single-threaded) at a CPU's limit: the client, not the
    # server, set how much load arrived
    out["client_bound"] = res.get("gen_cpu_pct", 0) >= CLIENT_BOUND_PCT
    ins = res.get("insns")
    if ins:
        # counted over exactly the window: per measured request; over the
        # whole load run (warm-up and drain included): per answered request
        per = answered if res.get("insns_scope", "window") == "window" else max(1, res["answered"])
        secs = res["window_s"] if res.get("insns_scope", "window") == "window" else res.get("insns_seconds")
        out["insns_per_cpu"] = ins
        out["ipr_serving"] = round(sum(ins[c] for c in serving if c < len(ins)) / per)
        out["ipr_guest"] = round(sum(ins) / per)
        if secs:
            out["minsn_per_s_guest"] = round(sum(ins) / secs / 1e6, 1)
    host = res.get("host")
    if host:
        out["serving_wait_pct"] = host["serving_wait_pct"]
        out["serving_cpu_other_ms"] = host["serving_cpu_other_ms"]
        if host["serving_cpu_other_ms"] is not None and host.get("seconds"):
            out["serving_core_other_pct"] = round(host["serving_cpu_other_ms"] / (10.0 * host["seconds"]), 2)
        out["main_loop_wait_pct"] = host.get("main_loop_wait_pct")
    out["held"] = {"before": held(st0), "after": held(st1)}
    t0, t1 = st0["stats"].get("service_threads"), st1["stats"].get("service_threads")
    if t0 and t1:
        secs = st1["stats"]["monotonic"] - st0["stats"]["monotonic"]
        w = placement.window({int(k): v for k, v in t0.items()}, {int(k): v for k, v in t1.items()},
                             secs, [int(k) for k in t1])
        out["service_wait_pct"] = w["serving_wait_pct"]
        if not host:
            out["serving_wait_pct"] = w["serving_wait_pct"]
    return out


def held(st):
    """[[defer-hard-irqs, gro-flush-timeout ns, irq-suspend-timeout ns], ...]:
    the distinct values the NIC's NAPIs held in a read-back (auto's are
    whatever TuneD's irqtune measured and set)."""
    return [list(v) for v in sorted({(n.get("defer-hard-irqs"), n.get("gro-flush-timeout"),
                                      n.get("irq-suspend-timeout")) for n in st.get("napis", [])})]


CLIENT_BOUND_PCT = 90.0


# A run is disturbed - and run again, up to --reruns times - when its
# generator was late, the serving vCPU's host core did other work, or
# QEMU's main loop (which moves every packet of the virtio-net NIC)
# waited for a CPU, beyond these bounds.  Fixed here, before any run, and
# written into every run's JSON ("rule").
DISTURBED = {"send_late_p99_us": 250.0, "serving_core_other_pct": 1.0, "main_loop_wait_pct": 5.0}


def disturbed(run, rule=DISTURBED):
    """Why a run counts as disturbed under rule ([] when it does not); a
    figure the testbed cannot measure (None, absent) does not count."""
    return ["%s %s > %s" % (k, run[k], limit) for k, limit in rule.items()
            if run.get(k) is not None and run[k] > limit]


# -- schedule ---------------------------------------------------------------

def saturation(bench, tb, args, log):
    """Highest offered rate the server keeps up with in base mode, the
    probes, and which side ran out first: "client" when the generators
    were at their CPUs' limit at the first rate not kept up."""
    bench.set_mode("base")
    tb.set_topology(tb.topologies[-1])
    probes = []
    rate, good, bad, ref_p50, side = args.probe_start, None, None, None, None

    def probe(r):
        res = tb.load(r, args.probe_seconds, args.warmup, args.conns, seed=len(probes) + 1)
        ok = (res["qps"] >= 0.95 * r and res["lost"] == 0 and res["p50_us"] is not None
              and (ref_p50 is None or res["p50_us"] <= 10 * ref_p50))
        probes.append({"offered": r, "qps": res["qps"], "p50_us": res["p50_us"], "p99_us": res["p99_us"],
                       "lost": res["lost"], "send_late_p99_us": res["send_late_p99_us"],
                       "gen_cpu_pct": res["gen_cpu_pct"], "kept_up": ok,
                       "client_bound": res["gen_cpu_pct"] >= CLIENT_BOUND_PCT})
        log("saturation probe %6d req/s: qps %.0f p50 %s us p99 %s us -> %s"
            % (r, res["qps"], res["p50_us"], res["p99_us"], "kept up" if ok else "saturated"))
        return ok, res

    while rate <= args.probe_max:
        ok, res = probe(rate)
        if ref_p50 is None:
            if not ok:
                raise BenchError("the server does not keep up with %d req/s (--probe-start)" % rate)
            ref_p50 = res["p50_us"]
        if not ok:
            bad, side = rate, "client" if probes[-1]["client_bound"] else "server"
            break
        good = rate
        rate = int(rate * 1.5)
    if bad is not None:
        for _ in range(2):      # two bisection steps between kept up and saturated
            mid = (good + bad) // 2
            ok, _ = probe(mid)
            good, bad = (mid, bad) if ok else (good, mid)
    return good, probes, side


def loads_of(sat, fractions):
    """The offered loads: each fraction of the saturation rate, rounded
    down to a hundred so that none lies above its fraction (a load
    rounded up past 90 % of saturation is not judged: the verdict run of
    2026-11-27 offered 9400 req/s for 0.9 of 10440 and lost that load)."""
    return sorted({max(100, int(sat * f) // 100 * 100) for f in fractions})


def recommend(bench, tb, args, loads, log):
    """The recommend mode: `irqtune doctor --json` on the server while it
    serves each load in suspend20 (opted in, as the recommended values
    will run), so that each load runs with what the doctor measured at it.
    Returns what the report keeps, one entry per load; a load without a
    recommendation leaves the mode without values there, and its runs fail
    naming why."""
    out = []
    for load in loads:
        out.append(recommend_at(bench, tb, args, load, log))
    return out


def recommend_at(bench, tb, args, load, log):
    try:
        bench.set_mode("suspend20")
    except BenchError as err:
        log("recommend: suspend20 could not be set: %s" % err)
        return {"offered": load, "failed": "setting suspend20: %s" % err}
    who = ["--pid", str(tb.memcached.pid)] if bench.own else ["--service", bench.service]
    argv = ["irqtune", "doctor"] + who + ["--json", "--seconds", "%g" % args.recommend_seconds]
    out_of = {"offered": load, "doctor": " ".join(argv)}
    tb.set_topology(tb.topologies[-1])
    done = {}

    def drive():
        try:
            # long enough for the doctor's start-up and window, however slow
            # the testbed (the lab's TCG guest: a minute; netns.py: seconds)
            done["load"] = tb.load(load, args.recommend_seconds + getattr(tb, "doctor_margin", 60), args.warmup,
                                   args.conns, seed=0)
        except (BenchError, RuntimeError, subprocess.TimeoutExpired, ValueError) as err:
            done["error"] = str(err)

    gen = threading.Thread(target=drive)
    gen.start()
    time.sleep(args.warmup + 1)
    try:
        rc, out, err = tb.server.run(argv, timeout=args.recommend_seconds + 300)
    except BenchError as failed:        # the lab's agent lost the guest
        rc, out, err = None, "", str(failed)
    finally:
        gen.join()
    out_of["doctor_rc"] = rc
    try:
        doc = json.loads(out)
        if not isinstance(doc, dict):
            raise ValueError("not an object")
    except ValueError:
        log("recommend: the doctor printed no report (rc %s): %s" % (rc, (err or out).strip()[-300:]))
        return dict(out_of, failed=(err or out).strip()[-300:])
    out_of.update(measured=doc.get("measured"), values=doc.get("recommend"),
                  lines=[l for l in doc.get("links", []) if l.get("group") == "recommend"])
    if done.get("error"):
        out_of["failed"] = "load generator: %s" % done["error"]
    elif not doc.get("recommend"):
        out_of["failed"] = "; ".join(l.get("text", "") for l in out_of["lines"]) or "no recommendation"
    else:
        try:
            servervalues.mode_values("the doctor's recommend", doc["recommend"])
        except BadArgument as refused:
            out_of["failed"] = str(refused)
    if out_of.get("failed"):
        log("recommend: no values at %d req/s: %s" % (load, out_of["failed"]))
        return out_of
    m = bench.recommended[load] = recommended(doc["recommend"])
    log("recommend: at %d req/s the doctor measured %s -> defer %d, gro %d ns, suspend %d ns"
        % (load, json.dumps(doc["measured"]), m["defer_hard_irqs"], m["gro_flush_timeout_ns"],
           m["irq_suspend_timeout_ns"]))
    return out_of


def readback(st):
    return {"napis": [{k: n.get(k) for k in ("id", "irq", "defer-hard-irqs", "gro-flush-timeout",
                                              "irq-suspend-timeout")} for n in st["napis"]],
            "rx_queues": st["rx_queues"], "epoll": st["epoll"], "epoll_slice_ms": st["slice_ms"],
            "memcached_cpus": st["affinity"]}


def one_run(bench, tb, args, run, log, n_runs, runs):
    name, load = run["mode"], run["offered"]
    try:
        st0 = bench.state()
    except (BenchError, ValueError) as err:
        run["failed"] = "reading the server back: %s" % err
        return
    problems = check(bench.mode(name, load), st0, args.memcached_cpu)
    run["readback"] = readback(st0)
    if problems:
        run["failed"] = "mode not in effect: " + "; ".join(problems)
        return
    try:
        res = tb.load(load, args.seconds, args.warmup, args.conns, seed=len(runs) + 1)
    except (BenchError, RuntimeError, subprocess.TimeoutExpired, ValueError) as err:
        run["failed"] = "load generator: %s" % err
        return
    try:
        st1 = bench.state(stats_only=True)
    except (BenchError, ValueError) as err:
        run["failed"] = "reading the server's counters after the load: %s" % err
        return
    # the generator's answer, but not over the run's own keys (mcload
    # names its rate "offered" too)
    run.update({k: v for k, v in res.items() if k not in run})
    run.update(derive(res, st0, st1, args.memcached_cpu, bench.nic))
    log("[%d/%d] %-9s %6d req/s%s: qps %.0f p50 %s p99 %s us, %s kinsn/req serving CPUs %s, CPU %s%%, "
        "late99 %s us, gen %s%%, wait %s%s"
        % (len(runs) + 1, n_runs, name, load, "" if run["topology"] == "-" else " " + run["topology"],
           res["qps"], res["p50_us"], res["p99_us"],
           round(run["ipr_serving"] / 1e3, 1) if run.get("ipr_serving") else "-", run["serving_cpus"],
           run["cpu_pct_serving"], res["send_late_p99_us"], res["gen_cpu_pct"],
           "-" if run.get("serving_wait_pct") is None else "%s%%" % run["serving_wait_pct"],
           "" if run.get("serving_cpu_other_ms") is None else
           ", other work on its core %s ms" % run["serving_cpu_other_ms"])
        + ("" if run.get("main_loop_wait_pct") is None else ", main loop waited %s%%" % run["main_loop_wait_pct"])
        + (", held %s" % run["held"]["after"] if name == AUTO else "")
        + (", CLIENT-BOUND" if run["client_bound"] else ""))


def measured_run(bench, tb, args, log, n_runs, runs, key):
    """One run of a cell, run again while disturbed (at most args.reruns
    more times); the run kept says how many re-runs it took and why."""
    attempts = []
    while True:
        tb.set_topology(key["topology"])
        run = dict(key)
        one_run(bench, tb, args, run, log, n_runs, runs)
        if run.get("failed"):
            log("%s @ %d: FAILED %s" % (key["mode"], key["offered"], run["failed"]))
            break
        reasons = disturbed(run, getattr(tb, "rule", DISTURBED))
        if not reasons:
            break
        if len(attempts) == args.reruns:
            run["disturbed"] = reasons
            log("%s @ %d: still disturbed after %d re-run(s) (%s): kept and marked (it counts; the sensitivity "
                "check leaves it out)" % (key["mode"], key["offered"], len(attempts), "; ".join(reasons)))
            break
        log("%s @ %d: disturbed (%s): run again" % (key["mode"], key["offered"], "; ".join(reasons)))
        attempts.append({"reasons": reasons, "p99_us": run.get("p99_us"),
                         "send_late_p99_us": run.get("send_late_p99_us"),
                         "serving_core_other_pct": run.get("serving_core_other_pct"),
                         "main_loop_wait_pct": run.get("main_loop_wait_pct")})
    m = bench.mode(key["mode"], key["offered"])
    if not run.get("failed") and m["epoll"] and m["epoll"]["busy_poll_usecs"] and hasattr(tb, "poller_share"):
        # a busy-polling mode: who took the NAPI's packets, traced in a
        # window of its own (netns.py)
        run["poller_share"] = tb.poller_share(key["offered"], args.conns, seed=30000 + len(runs))
    run["reruns"] = len(attempts)
    run["attempts"] = attempts
    run["rule"] = getattr(tb, "rule", DISTURBED)
    return run


# auto measures the load each run serves: before the run's read-back the
# server takes that load long enough for TuneD's irqtune to measure it
# twice (a re-check every 5 s, a 3 s window, at most one a bench
# auto_interval of 10 s: modes.AUTO_INTERVAL), so that the values the
# read-back records are this load's.  15 s were too few: the validation
# run of 2026-11-28 found auto at 40K req/s still holding the previous
# load's [100, 56000, 120000] after it, and [100, 33000, 70000] after
# the run.
AUTO_WARMUP_SECONDS = 25


def warm_auto(bench, tb, args, load, log, rnd):
    """The auto run's warm-up at its own load; the values held after it."""
    try:
        tb.load(load, AUTO_WARMUP_SECONDS, 0.0, args.conns, seed=10000 + rnd)
        return held(bench.state(stats_only=True))
    except (BenchError, RuntimeError, subprocess.TimeoutExpired, ValueError) as err:
        log("round %d: auto warm-up at %d req/s failed: %s" % (rnd, load, err))
        return None


def set_round_mode(bench, log, runs, rnd, name, cases, load=None):
    """Set mode name for the cases of a round; when it cannot be, each
    case is a failed run naming why.  Whether it was set."""
    try:
        took = bench.set_mode(name, load)
        log("round %d: mode %s%s set in %.0fs" % (rnd + 1, name, "" if load is None else " (%d)" % load, took))
        return True
    except BenchError as err:
        log("round %d: mode %s could not be set: %s" % (rnd + 1, name, err))
        runs.extend({"round": rnd + 1, "mode": name, "offered": l, "topology": t,
                     "failed": "setting the mode: %s" % err} for l, t in cases)
        return False


STEP_FRACTIONS = (0.1, 0.5, 0.9, 0.1)
STEP_SLICE_SECONDS = 10


def step_test(bench, tb, args, saturation, loads, log, save):
    """auto as a load changes under it: STEP_FRACTIONS of saturation (or
    of the busiest load given), args.step_seconds each, without a pause;
    every STEP_SLICE_SECONDS slice's p99, CPU per request and the values
    the NAPIs held at its end."""
    top = saturation["rate"] if saturation else loads[-1]
    out = {"fractions": list(STEP_FRACTIONS), "step_seconds": args.step_seconds,
           "slice_seconds": STEP_SLICE_SECONDS, "slices": []}
    try:
        bench.set_mode(AUTO)
    except BenchError as err:
        log("step test: auto could not be set: %s" % err)
        return dict(out, failed=str(err))
    per_step = max(1, int(args.step_seconds // STEP_SLICE_SECONDS))
    for step, fraction in enumerate(STEP_FRACTIONS):
        load, = loads_of(top, [fraction])
        for i in range(per_step):
            try:
                res = tb.load(load, STEP_SLICE_SECONDS, 0.0, args.conns, seed=20000 + step * 100 + i)
                st1 = bench.state(stats_only=True)
            except (BenchError, RuntimeError, subprocess.TimeoutExpired, ValueError) as err:
                out["slices"].append({"step": step, "offered": load, "slice": i, "failed": str(err)})
                log("step %d (%d req/s) slice %d failed: %s" % (step + 1, load, i + 1, err))
                continue
            sl = {"step": step, "offered": load, "slice": i, "qps": res["qps"], "p50_us": res["p50_us"],
                  "p99_us": res["p99_us"], "held": held(st1),
                  "cpu_us_per_request": cost_per_request(res), "send_late_p99_us": res["send_late_p99_us"]}
            out["slices"].append(sl)
            log("step %d (%d req/s) slice %d: p99 %s us, %s us CPU/req, auto holds %s"
                % (step + 1, load, i + 1, sl["p99_us"], sl["cpu_us_per_request"], sl["held"]))
            save()
    return out


def cost_per_request(res):
    """The server's CPU time per answered request when the testbed counts
    its tasks (netns.py), else None."""
    if res.get("server_task_ms") is None:
        return None
    return round(res["server_task_ms"] * 1000.0 / max(1, res.get("answered") or res["measured"]), 2)


def run_bench(tb, args, log, report, save):
    """The whole schedule; fills report (runs, loads, saturation) and calls
    save() after each run so a killed bench leaves its runs."""
    modes = args.modes
    bench = Bench(tb, args, log)
    runs = report.setdefault("runs", [])
    try:
        tb.prepare(log)
        bench.prepare()
        report.update(testbed=tb.describe(), modes=bench.modes, who_sets=WHO_SETS, nic=bench.nic, rule=DISTURBED)
        if args.loads:
            loads = args.loads
            report["saturation"] = None
        else:
            sat, probes, side = saturation(bench, tb, args, log)
            report["saturation"] = {"rate": sat, "probes": probes, "side": side}
            loads = loads_of(sat, args.fractions)
            log("saturation %s; loads %s" % (saturation_text(report["saturation"]), loads))
        report["loads"] = loads
        if RECOMMEND in modes:
            report["recommend"] = recommend(bench, tb, args, loads, log)
            report["recommended"] = {str(k): v for k, v in bench.recommended.items()}
        topologies = tb.topologies
        n_runs = len(modes) * len(loads) * len(topologies) * args.repeats
        for rnd in range(args.repeats):
            rng = random.Random(args.seed * 1000 + rnd)
            order = modes[:]
            rng.shuffle(order)
            for name in order:
                cases = [(load, t) for load in loads for t in topologies]
                rng.shuffle(cases)
                # recommend's values are per load: set before each of its runs
                per_load = name == RECOMMEND
                if not per_load and not set_round_mode(bench, log, runs, rnd, name, cases):
                    continue
                for load, t in cases:
                    key = {"round": rnd + 1, "mode": name, "offered": load, "topology": t}
                    if per_load and not set_round_mode(bench, log, runs, rnd, name, [(load, t)], load):
                        continue
                    if name == AUTO:
                        key["auto_warmup"] = {"seconds": AUTO_WARMUP_SECONDS,
                                              "held": warm_auto(bench, tb, args, load, log, rnd + 1)}
                    runs.append(measured_run(bench, tb, args, log, n_runs, runs, key))
                    save()
        if AUTO in modes and args.step_seconds:
            report["step"] = step_test(bench, tb, args, report["saturation"], loads, log, save)
        report["placement"] = tb.placement()
    finally:
        not_put_back = bench.finish()
    if not_put_back:
        raise BenchError("%d change(s) of the server not put back (named above); the runs are saved: "
                         "irqtune-bench report redoes the report" % len(not_put_back))
    return [r for r in runs if r.get("failed")]
