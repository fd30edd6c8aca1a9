# SPDX-License-Identifier: GPL-2.0-or-later
"""Where threads may run, where they ran and how long they waited for a
CPU, from /proc (no perf, no schedstats sysctl: only CONFIG_SCHED_INFO's
per-task schedstat, which distribution kernels have).

  /proc/PID/task/TID/comm       name ("CPU 2/TCG" for a QEMU vCPU with
                                -name ...,debug-threads=on)
  /proc/PID/task/TID/stat       utime, stime, processor (the CPU it last ran on)
  /proc/PID/task/TID/status     Cpus_allowed_list, voluntary and
                                nonvoluntary context switches
  /proc/PID/task/TID/schedstat  ns on a CPU, ns runnable but waiting on a
                                run queue, time slices (absent without
                                CONFIG_SCHED_INFO: the figures are None)
  /proc/stat                    per CPU: busy and steal time (USER_HZ ticks)

The lab reads its QEMU process with these (the serving vCPU's thread
alone on a host core, everything else on the other); on a real server the
bench reads memcached's threads the same way.
"""

import os
import re

VCPU_THREAD = re.compile(r"CPU (\d+)/(?:TCG|KVM)")


def cpu_list(text):
    """{cpus} of a kernel CPU list such as Cpus_allowed_list,
    smp_affinity_list or /sys/devices/system/cpu/isolated ("0-1,3"; ""
    for none).  The labs use it too (labvm.cpu_list)."""
    cpus = set()
    for part in text.strip().split(","):
        if part:
            lo, _, hi = part.partition("-")
            cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def parse_stat(text):
    """utime, stime (ticks) and the CPU last run on, of a stat line; the
    name may hold spaces and parentheses, so fields count from the last ')'."""
    fields = text[text.rindex(")") + 2:].split()
    # fields[0] is field 3 (state) of proc(5)
    return {"state": fields[0], "utime": int(fields[11]), "stime": int(fields[12]),
            "last_cpu": int(fields[36])}


def parse_schedstat(text):
    run, wait, slices = (int(x) for x in text.split()[:3])
    return {"run_ns": run, "wait_ns": wait, "slices": slices}


def parse_switches(status_text):
    """voluntary and nonvoluntary context switches of a status file: the
    times a thread slept, and the times another task preempted it."""
    out = {"voluntary": None, "nonvoluntary": None}
    for line in status_text.splitlines():
        key, _, value = line.partition(":")
        if key in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"):
            out[key.split("_")[0]] = int(value)
    return out


def parse_allowed(status_text):
    for line in status_text.splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return sorted(cpu_list(line.split(":", 1)[1]))
    raise ValueError("no Cpus_allowed_list in status")


def _read(path):
    with open(path) as f:
        return f.read()


def snapshot(pid, proc="/proc"):
    """{tid: {comm, cpus, voluntary, nonvoluntary, last_cpu, state, utime,
    stime, run_ns, wait_ns, slices}} of a process's threads; threads ending
    meanwhile are left out."""
    out = {}
    base = os.path.join(proc, str(pid), "task")
    for name in sorted(os.listdir(base), key=int):
        d = os.path.join(base, name)
        try:
            status = _read(os.path.join(d, "status"))
            t = dict(parse_switches(status), comm=_read(os.path.join(d, "comm")).rstrip("\n"),
                     cpus=parse_allowed(status))
            t.update(parse_stat(_read(os.path.join(d, "stat"))))
        except (FileNotFoundError, ProcessLookupError):
            continue
        try:
            t.update(parse_schedstat(_read(os.path.join(d, "schedstat"))))
        except FileNotFoundError:
            # a kernel without CONFIG_SCHED_INFO (the lab's guest kernel)
            # keeps no per-task run and wait times
            t.update(run_ns=None, wait_ns=None, slices=None)
        out[int(name)] = t
    return out


def vcpu_threads(snap):
    """{vCPU index: tid} of a QEMU process's vCPU threads."""
    out = {}
    for tid, t in snap.items():
        m = VCPU_THREAD.fullmatch(t["comm"])
        if m:
            out[int(m.group(1))] = tid
    return out


def plan(snap, serving_vcpus, serving_cpus, other_cpus):
    """{tid: cpus}: the serving vCPUs' threads on serving_cpus, every other
    thread (vCPUs, main loop, I/O and RCU threads, workers) on other_cpus."""
    vcpus = vcpu_threads(snap)
    missing = sorted(set(serving_vcpus) - set(vcpus))
    if missing:
        raise ValueError("no thread of vCPU(s) %s among %s (QEMU needs -name ...,debug-threads=on)"
                         % (missing, sorted(t["comm"] for t in snap.values())))
    serving = {vcpus[v] for v in serving_vcpus}
    return {tid: sorted(serving_cpus if tid in serving else other_cpus) for tid in snap}


def apply(pid, wanted):
    """sched_setaffinity of each thread in wanted ({tid: cpus}); returns
    the tids that ended before they could be moved."""
    gone = []
    for tid, cpus in wanted.items():
        try:
            os.sched_setaffinity(tid, cpus)
        except ProcessLookupError:
            gone.append(tid)
    return gone


def cpu_times(stat_text):
    """{cpu: {"busy": ticks, "steal": ticks}} of /proc/stat; busy is user,
    nice, system, irq and softirq (guest time is inside user)."""
    out = {}
    for line in stat_text.splitlines():
        f = line.split()
        if f and f[0].startswith("cpu") and f[0][3:].isdigit():
            v = [int(x) for x in f[1:]] + [0] * 10
            out[int(f[0][3:])] = {"busy": v[0] + v[1] + v[2] + v[5] + v[6], "steal": v[7]}
    return out


def window(before, after, seconds, serving_tids, serving_cpus=None, cpu_before=None,
           cpu_after=None, hz=100):
    """What happened to the serving threads between two snapshots:

      serving_run_ms, serving_wait_ms   on a CPU / runnable but waiting
      serving_wait_pct                  wait as a share of the window
      serving_cpu_other_ms              busy time of serving_cpus not spent
                                        by the serving threads (other
                                        threads, interrupts), when they are
                                        confined to serving_cpus
      serving_cpu_steal_ms              time a hypervisor took from them
      threads                           per thread: name, allowed CPUs,
                                        last CPU, run and wait ms
    """
    def delta(tid, key):
        if tid not in before or tid not in after or after[tid][key] is None or before[tid][key] is None:
            return None
        return (after[tid][key] - before[tid][key]) / 1e6

    def total(key):
        values = [delta(t, key) for t in serving_tids]
        return None if not values or None in values else sum(values)

    run, wait = total("run_ns"), total("wait_ns")
    out = {"seconds": round(seconds, 3),
           "serving_run_ms": None if run is None else round(run, 1),
           "serving_wait_ms": None if wait is None else round(wait, 1),
           "serving_wait_pct": round(100.0 * wait / (1000.0 * seconds), 2) if wait is not None and seconds > 0
           else None,
           "serving_cpu_other_ms": None, "serving_cpu_steal_ms": None}
    confined = serving_cpus and all(set(after[t]["cpus"]) <= set(serving_cpus)
                                    for t in serving_tids if t in after)
    if confined and cpu_before and cpu_after and run is not None:
        busy = sum(cpu_after[c]["busy"] - cpu_before[c]["busy"] for c in serving_cpus) * 1000.0 / hz
        steal = sum(cpu_after[c]["steal"] - cpu_before[c]["steal"] for c in serving_cpus) * 1000.0 / hz
        out["serving_cpu_other_ms"] = round(max(0.0, busy - run), 1)
        out["serving_cpu_steal_ms"] = round(steal, 1)
    def ms(value):
        return None if value is None else round(value, 1)

    out["threads"] = [{"tid": tid, "comm": after[tid]["comm"], "cpus": after[tid]["cpus"],
                       "last_cpu": after[tid]["last_cpu"], "run_ms": ms(delta(tid, "run_ns")),
                       "wait_ms": ms(delta(tid, "wait_ns"))}
                      for tid in sorted(after) if tid in before]
    return out


def describe(threads):
    """Lines: where each thread may run, ran last, and its run/wait ms."""
    lines = ["%7s  %-18s %-8s %4s %10s %10s" % ("tid", "thread", "allowed", "last", "run ms", "wait ms")]
    for t in threads:
        lines.append("%7d  %-18s %-8s %4d %10s %10s" % (
            t["tid"], t["comm"][:18], ",".join(str(c) for c in t["cpus"]), t["last_cpu"],
            "-" if t["run_ms"] is None else "%.1f" % t["run_ms"],
            "-" if t["wait_ms"] is None else "%.1f" % t["wait_ms"]))
    return lines
