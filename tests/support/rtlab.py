# SPDX-License-Identifier: GPL-2.0-or-later
"""The realtime generation of the lab: Linux 7.2 with PREEMPT_RT (kernel
7.2-lab-rt, `make lab7-rt`) in the generation-7 guest (systemd, TuneD 2.27).

RtHost is a guest on a disk of its own (labvm.persistent_disk), so that it
can be provisioned the way an administrator does it: apply a profile, read
the kernel arguments TuneD produced, power off cleanly (`systemctl
poweroff`, so TuneD stops as on any shutdown) and boot again with exactly
those arguments.  The counters read here (/proc/interrupts, /proc/softirqs)
are the kernel's own; nothing of the library under test is used to judge
it.
"""

import json
import os
import re
import shlex
import time

from support import labvm
from support.host7 import Host7

KERNEL = os.environ.get("IRQTUNE_LAB7RT_KERNEL", "7.2-lab-rt")
ISOLATED = (2, 3)
HOUSEKEEPING = (0, 1)
FLAVOUR = "realtime-virtual-host-irqtune"
STOCK = "realtime-virtual-host"


class RtHost(Host7):
    """A Host7 that survives reboots: see the module docstring."""

    def __init__(self, lab, disk):
        self.lab = lab
        self.disk = disk
        self.cmdline = None
        self.boots = []

    def boot(self, cmdline):
        g = self.lab.boot(kernel=KERNEL, cmdline=cmdline, disk=self.disk)
        Host7.__init__(self, g)
        self.cmdline = cmdline
        self.boots.append((cmdline, round(g.boot_seconds, 1)))
        return self

    def reboot(self, cmdline, timeout=300):
        """`systemctl poweroff` in the guest, wait for QEMU to exit, boot
        again from the same disk with `cmdline` as the kernel arguments."""
        self.g.spawn(["systemctl", "poweroff"])
        try:
            self.g.proc.wait(timeout)
        finally:
            self.lab.close()
        return self.boot(cmdline)

    # -- TuneD after a boot ----------------------------------------------

    def applied_count(self):
        """How many times TuneD logged a finished static tuning so far."""
        rc, out = self.g.run(["sh", "-c", "cat /var/log/tuned/tuned.log* 2>/dev/null | "
                                          "grep -c 'static tuning from profile' || true"])
        return int(out.strip() or 0)

    def wait_tuned_applied(self, before, timeout=600):
        """Wait until tuned.service has applied its profile after a boot
        (one more 'static tuning ... applied' line than `before`)."""
        deadline = time.monotonic() + timeout
        while self.applied_count() <= before:
            assert time.monotonic() < deadline, (
                "TuneD did not apply its profile within %ss:\n%s"
                % (timeout, self.sh("systemctl status tuned --no-pager; tail -n 30 "
                                    "/var/log/tuned/tuned.log", check=False)))
            time.sleep(5)

    def boot_cmdline(self):
        """TUNED_BOOT_CMDLINE from /etc/tuned/bootcmdline: the kernel
        arguments TuneD's bootloader unit produced for the next boot."""
        text = self.g.read_file("/etc/tuned/bootcmdline")
        m = re.search(r'^TUNED_BOOT_CMDLINE="?(.*?)"?$', text, re.M)
        assert m, text
        return m.group(1).strip()

    def tuned_version(self):
        """(major, minor) of the TuneD in the guest."""
        out = self.sh("python3 -c 'import tuned.version as v; "
                      "print(v.TUNED_VERSION_MAJOR, v.TUNED_VERSION_MINOR)'")
        return tuple(int(x) for x in out.split())

    # -- what the kernel shows -------------------------------------------

    def affinity_write_errno(self, irq):
        """The errno name the kernel answers when IRQ `irq`'s own
        smp_affinity is written back to it (changes nothing when it is
        accepted: then None)."""
        script = ("import errno\n"
                  "p = '/proc/irq/%d/smp_affinity'\n"
                  "mask = open(p).read().strip()\n"
                  "try:\n"
                  "    with open(p, 'w') as f:\n"
                  "        f.write(mask)\n"
                  "    print('None')\n"
                  "except OSError as e:\n"
                  "    print(errno.errorcode[e.errno])\n" % irq)
        out = self.sh("python3 -c %s" % shlex.quote(script)).strip()
        return None if out == "None" else out

    def preempt_rt(self):
        return "PREEMPT_RT" in self.g.read_file("/proc/sys/kernel/version").split()

    def proc_cmdline(self):
        return self.g.read_file("/proc/cmdline").split()

    def channels(self):
        out = self.sh("ethtool -l %s" % shlex.quote(self.nic))
        return int(re.search(r"^Combined:\s+(\d+)", out.split("Current hardware settings:")[1],
                             re.M).group(1))

    def queue_irqs(self):
        """{"input.0": irq, ...} of the NIC's queue vectors."""
        return {name: irq for name, (irq, _) in self.g.nic_queue_interrupts().items()}

    def irq_placement(self):
        """{queue: (irq, smp_affinity_list, effective_affinity_list, CPUs
        its IRQ thread may run on)}.  On PREEMPT_RT every device interrupt
        runs in a thread (irq/<n>-<name>) whose affinity follows the IRQ's."""
        threads = {}
        for line in self.sh("ps -eo pid=,comm=").splitlines():
            pid, _, comm = line.strip().partition(" ")
            m = re.match(r"irq/(\d+)-", comm.strip())
            if m:
                threads[int(m.group(1))] = pid
        out = {}
        for name, irq in self.queue_irqs().items():
            smp = self.g.read_file("/proc/irq/%d/smp_affinity_list" % irq).strip()
            eff = self.g.read_file("/proc/irq/%d/effective_affinity_list" % irq).strip()
            thread = None
            if irq in threads:
                status = self.g.read_file("/proc/%s/status" % threads[irq])
                thread = re.search(r"^Cpus_allowed_list:\s*(\S+)", status, re.M).group(1)
            out[name] = (irq, smp, eff, thread)
        return out

    def rps_xps(self):
        """{"rx-0": rps CPUs, "tx-0": xps CPUs, ...} as sets."""
        out = {}
        base = "/sys/class/net/%s/queues" % self.nic
        for q in self.sh("ls %s" % base).split():
            name = "rps_cpus" if q.startswith("rx-") else "xps_cpus"
            rc, text = self.g.run(["cat", "%s/%s/%s" % (base, q, name)])
            out[q] = labvm.mask_cpus(text) if rc == 0 else None
        return out

    def nic_interrupts(self):
        """Per-CPU interrupt counts of every vector of the NIC (queues and
        config), summed: [cpu0, cpu1, ...]."""
        dev = self.g.nic_device()
        lines = self.g.read_file("/proc/interrupts").splitlines()
        ncpu = len(lines[0].split())
        total = [0] * ncpu
        for line in lines[1:]:
            fields = line.split()
            if fields and fields[0].rstrip(":").isdigit() and fields[-1].startswith(dev + "-"):
                for i, n in enumerate(fields[1:1 + ncpu]):
                    total[i] += int(n)
        return total

    def softirqs(self):
        """{"NET_RX": [per CPU], "NET_TX": [...]} from /proc/softirqs."""
        out = {}
        for line in self.g.read_file("/proc/softirqs").splitlines():
            fields = line.split()
            if fields and fields[0] in ("NET_RX:", "NET_TX:"):
                out[fields[0].rstrip(":")] = [int(x) for x in fields[1:]]
        return out

    def counters(self):
        return {"nic_irqs": self.nic_interrupts(), **self.softirqs()}

    # -- load and latency -------------------------------------------------

    def start_cyclictest(self, seconds, path="/tmp/cyclictest.json"):
        """cyclictest pinned to the isolated CPUs (one SCHED_FIFO 95 thread
        each, 1 ms interval, memory locked), in the background."""
        self.sh("rm -f %s" % path)
        argv = ["cyclictest", "-m", "-q", "-p", "95", "-i", "1000",
                "-t", str(len(ISOLATED)), "-a", ",".join(map(str, ISOLATED)),
                "-D", "%ds" % seconds, "-h", "100000", "--json=%s" % path]
        return self.g.spawn(argv, log_path="/tmp/cyclictest.log")

    def cyclictest_result(self, pid, path="/tmp/cyclictest.json", timeout=120):
        """{cpu: {"max": us, "p99": us, "cycles": n}} once cyclictest ended."""
        deadline = time.monotonic() + timeout
        while self.g.run(["test", "-d", "/proc/%d" % pid])[0] == 0:
            assert time.monotonic() < deadline, "cyclictest still running"
            time.sleep(2)
        rc, text = self.g.run(["cat", path])
        assert rc == 0, self.g.read_file("/tmp/cyclictest.log")
        return cyclictest_summary(json.loads(text))


def cyclictest_summary(data):
    """Max and 99th percentile per thread from cyclictest's --json output
    (rt-tests 2.x: "thread" -> {"<n>": {"cpu", "max", "cycles",
    "histogram": {"<us>": count}}}).  Latencies above -h are counted in
    "cycles" but not in the histogram: when they reach the top 1 % the p99
    is None (unknown), never a bucket below them."""
    out = {}
    for thread in data["thread"].values():
        hist = sorted((int(k), v) for k, v in thread.get("histogram", {}).items() if k.isdigit())
        cycles = thread.get("cycles") or sum(v for _, v in hist)
        seen, p99 = 0, None
        for us, count in hist:
            seen += count
            if seen >= 0.99 * cycles:
                p99 = us
                break
        out[thread.get("cpu")] = {"max": thread.get("max"), "p99": p99, "cycles": cycles}
    return out


def placement_faults(placement, queues, preempt_rt):
    """What of the NIC's placement could put work on an isolated CPU, as
    ["<what>: <CPUs>", ...] (empty: none).  placement is irq_placement(),
    queues is rps_xps().  Every queue vector counts, the switched-off
    queues' too: smp_affinity and effective affinity (a move of an IRQ
    that never fires again stays pending, so the effective one is read,
    not assumed), and on PREEMPT_RT the IRQ thread's CPUs.  RPS of an rx
    queue would raise NET_RX on its CPUs; XPS of a tx queue lists the CPUs
    whose sends go to it.  (A kernel booted with isolcpus=domain refuses
    RPS on isolated CPUs itself, with EINVAL; XPS it takes as given.)"""
    isolated = set(ISOLATED)
    faults = []
    for name, (irq, smp, eff, thread) in sorted(placement.items()):
        for what, cpulist in (("smp_affinity", smp), ("effective_affinity", eff)):
            if labvm.cpu_list(cpulist) & isolated:
                faults.append("%s (IRQ %d) %s: %s" % (name, irq, what, cpulist))
        if preempt_rt and (thread is None or labvm.cpu_list(thread) & isolated):
            faults.append("%s (IRQ %d) thread: %s" % (name, irq, thread))
    for q, mask in sorted(queues.items()):
        if mask and mask & isolated:
            faults.append("%s %s: %s" % (q, "rps_cpus" if q.startswith("rx-") else "xps_cpus",
                                         ",".join(map(str, sorted(mask)))))
    return faults


# Sysctls a parent profile sets that a PREEMPT_RT kernel does not have:
# network-latency's kernel.numa_balancing (NUMA_BALANCING depends on
# !PREEMPT_RT).  TuneD logs an ERROR for it at apply and fails its verify.
ABSENT_ON_PREEMPT_RT = ("kernel.numa_balancing",)

# The first TuneD whose [scheduler] takes EPERM from an IRQ affinity write
# as "unchangeable" (upstream commit 00592c2); Linux 6.12 turned that
# kernel answer from EIO into EPERM.
TUNED_KNOWS_EPERM = (2, 28)


def verify_on_preempt_rt(h):
    """`tuned-adm verify` with stock TuneD on this PREEMPT_RT guest fails
    on two kinds of lines that no profile can fix, and must fail on nothing
    else.  Returns {failed item: why}; any other failure is an
    AssertionError.

    - A parent's sysctl the kernel lacks (ABSENT_ON_PREEMPT_RT, the file
      is missing).
    - With the realtime parents' [scheduler]: an interrupt the kernel
      will not let user space move (a managed vector: the block device's
      request vector of an isolated CPU), never one of the NIC's.  TuneD
      records such an IRQ as unchangeable and `verify --ignore-missing`
      skips it - when the write fails with EIO.  Since Linux 6.12 it fails
      with EPERM, which TuneD knows only from 2.28 on
      (TUNED_KNOWS_EPERM); before that the line fails with
      --ignore-missing too.  It is accepted then only if the kernel
      refuses, right now, a write of the IRQ's own mask with EPERM."""
    ok, log = h.verify()
    why = {}
    if ok:
        return why
    _, log_ignoring = h.verify("--ignore-missing")
    still = set(failed_items(log_ignoring))
    nic = {irq for irq, _ in h.g.nic_queue_interrupts().values()}
    tuned = h.tuned_version()
    for item in failed_items(log):
        irq = re.fullmatch(r"SMP affinity of IRQ (\d+)", item)
        if irq and int(irq.group(1)) not in nic:
            n = int(irq.group(1))
            name = h.sh("grep -E '^ *%d:' /proc/interrupts | awk '{print $NF}'" % n).strip()
            if item not in still:
                why[item] = "%s: TuneD recorded it as unchangeable" % name
            elif tuned < TUNED_KNOWS_EPERM and h.affinity_write_errno(n) == "EPERM":
                why[item] = "%s: managed, refused with EPERM (TuneD %s knows only EIO)" % (
                    name, ".".join(map(str, tuned)))
            else:
                raise AssertionError("verify failed on %r (%s):\n%s" % (item, name, log))
        elif (item in ABSENT_ON_PREEMPT_RT and
              h.g.run(["test", "-e", "/proc/sys/" + item.replace(".", "/")])[0] != 0):
            why[item] = "sysctl absent on PREEMPT_RT"
        else:
            raise AssertionError("verify failed on %r:\n%s" % (item, log))
    assert why, log
    return why


def failed_items(log):
    return re.findall(r"verify: failed: '([^']*)'", log)


def delta(after, before):
    return {k: [a - b for a, b in zip(after[k], before[k])] for k in after}
