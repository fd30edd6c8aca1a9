# SPDX-License-Identifier: GPL-2.0-or-later
"""The generation-7 lab guest seen as a host an administrator manages.

Linux 7.2 ("7.2-lab": the project's 7.2 series where they exist) on Debian
unstable with systemd as PID 1 and TuneD 2.27 as its service.
Host7.install_project() installs the project from the repository share
the way an administrator installs from source (`make install`) and
restarts tuned.service; everything else goes through tuned-adm.  Kernel
state is read with the raw netlink reader of the test suites
(tests/support/rawnapi.py), never with the library under test.

The guest's kernel command line carries the arguments network-latency's
[bootloader] asks for, so TuneD's verify checks the bootloader unit for
real instead of failing it for a reboot that never happens in a test.
"""

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

LAB = Path(__file__).resolve().parent.parent / "lab"     # its scripts

KERNEL = os.environ.get("IRQTUNE_LAB7_KERNEL", "7.2-lab")
BOOT_ARGS = "skew_tick=1 tsc=reliable rcupdate.rcu_normal_after_boot=1 " \
            "rcutree.nohz_full_patience_delay=1000"
# How the bench and its counter test boot the guest (tests/lab/bench,
# tests/lab/plugin).  idle=halt: under TCG with several vCPUs MWAIT does
# not sleep, so an idle vCPU would execute (and count) instructions all the
# time.  -cpu max without ERMS/FSRM: the guest's copies use `rep movsq`,
# counted once per 8 bytes, instead of `rep movsb`, counted once per byte.
COUNTED_BOOT_ARGS = BOOT_ARGS + " idle=halt"
COUNTED_CPU = "max,-erms,-fsrm"
SRC = "/root/irqtune"
# latency-suspend's defaults, and non-default originals set before it is
# applied (so a restore to zero, the kernel default, cannot pass).
SUSPEND_VALUES = {"defer-hard-irqs": 100, "gro-flush-timeout": 20000,
                  "irq-suspend-timeout": 20000000}
NON_DEFAULT_ORIGINALS = {"defer-hard-irqs": 3, "gro-flush-timeout": 7000,
                         "irq-suspend-timeout": 5000000}


def ssh_key(workdir, comment):
    """A new ed25519 key pair without a passphrase in workdir, for the lab
    host's side to log in to guests (Host7.admit_ssh_key): its private
    key's path (the public key beside it, .pub)."""
    key = Path(workdir) / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment,
                    "-f", str(key)], check=True)
    return key


def napi_values(napi):
    """The three values latency-suspend sets, as a NAPI holds them."""
    return {k: napi.get(k, 0) for k in SUSPEND_VALUES}

GUEST_IP = "10.77.0.2"
# python3 in the guest with the repository share's tests/ and bench/ on its
# path, for what runs there from the share (support.rawnapi, which reads
# with irqtune_bench.netlink; devmem_bind.py).
GUEST_PYTHON = ("env", "PYTHONPATH=/irqtune/tests:/irqtune/bench", "python3")


class Host7:
    """A generation-7 guest seen as the host an administrator manages."""

    def __init__(self, guest):
        self.g = guest
        self.nic = guest.nic

    # -- plumbing ---------------------------------------------------------

    def sh(self, script, timeout=120, check=True):
        rc, out = self.g.run(["sh", "-c", script], timeout=timeout)
        if check:
            assert rc == 0, "%s: rc %d: %s %s" % (script, rc, out, self.g.last_stderr)
        return out

    def run(self, *argv, timeout=120):
        """(rc, stdout + stderr) of argv in the guest."""
        rc, out = self.g.run(list(argv), timeout=timeout)
        return rc, out + self.g.last_stderr

    def copy_share(self):
        """A copy of the repository share (read-only) in SRC, to build from."""
        self.sh("rm -rf %s && mkdir -p %s && tar -C /irqtune --exclude=./build --exclude=./.git "
                "-cf - . | tar -C %s -xf -" % (SRC, SRC, SRC))

    def install_project(self):
        """`make install` from a copy of the repository share, then restart
        tuned.service so the daemon loads the plugins."""
        self.copy_share()
        self.sh("make -C %s install PYTHON=/usr/bin/python3 >/root/make-install.log 2>&1 "
                "|| { tail -n 30 /root/make-install.log; exit 1; }" % SRC, timeout=600)
        self.sh("systemctl restart tuned && systemctl is-active tuned")

    def admit_ssh_key(self, key):
        """Let the key pair at key (ssh_key()) log in as root, and wait
        until sshd runs."""
        self.sh("install -d -m 0700 /root/.ssh")
        self.write("/root/.ssh/authorized_keys", Path(str(key) + ".pub").read_text())
        self.sh("chmod 0600 /root/.ssh/authorized_keys && "
                "for i in $(seq 60); do systemctl is-active -q ssh && exit 0; sleep 1; done; "
                "systemctl status ssh; exit 1")

    # -- TuneD ------------------------------------------------------------

    def tuned_adm(self, *args, timeout=180):
        return self.run("tuned-adm", *args, timeout=timeout)

    def profile(self, *names, variables=None, timeout=300):
        """Write /etc/tuned/<profile>-variables.conf (variables: {profile:
        {name: value}}) and switch to the profile(s); returns the log
        lines TuneD wrote meanwhile."""
        for prof, values in (variables or {}).items():
            text = "".join("%s=%s\n" % kv for kv in values.items())
            self.write("/etc/tuned/%s-variables.conf" % prof, text)
        mark = self.log_size()
        rc, out = self.tuned_adm("profile", *names, timeout=timeout)
        assert rc == 0, "tuned-adm profile %s: %s\n%s" % (" ".join(names), out, self.log_since(mark))
        return self.log_since(mark)

    def custom_profile(self, name, text):
        """A profile of the administrator's own (TuneD 2.23+ reads
        /etc/tuned/profiles)."""
        self.sh("mkdir -p /etc/tuned/profiles/%s" % shlex.quote(name))
        self.write("/etc/tuned/profiles/%s/tuned.conf" % name, text)

    def lab_profile(self, parent="latency-suspend"):
        """<parent>-lab: the parent with [cpu] off.  QEMU's emulated CPU has
        no cpufreq driver, so the stock [cpu] unit's `boost` can never
        verify here; every other unit, ours and the parents', stays."""
        name = parent + "-lab"
        self.custom_profile(name, "[main]\nsummary=%s on an emulated CPU (lab)\ninclude=%s\n\n"
                                  "[cpu]\nenabled=false\n" % (parent, parent))
        return name

    def verify(self, *options):
        """(passed, TuneD log lines of that verify)."""
        mark = self.log_size()
        rc, out = self.tuned_adm("verify", *options)
        return rc == 0, self.log_since(mark) + out

    def off(self):
        rc, out = self.tuned_adm("off")
        assert rc == 0, out

    def log_size(self):
        rc, out = self.g.run(["stat", "-c", "%s", "/var/log/tuned/tuned.log"])
        return int(out) if rc == 0 else 0

    def log_since(self, offset):
        rc, out = self.g.run(["tail", "-c", "+%d" % (offset + 1), "/var/log/tuned/tuned.log"])
        return out if rc == 0 else ""

    def write(self, path, text):
        rc = self.g.write_file(path, text)
        assert rc == 0, "cannot write %s: %s" % (path, self.g.last_stderr)

    # -- kernel state, read without the library under test ----------------

    def napis(self, ifname=None):
        """{napi id: {attr: value}} of ifname's NAPIs, read by the raw
        netlink reader of the test suites (no irqtune code)."""
        script = ("import json; from support import rawnapi; "
                  "print(json.dumps(rawnapi.RawGenl().napis(%r)))" % (ifname or self.nic))
        rc, out = self.g.run([*GUEST_PYTHON, "-c", script])
        assert rc == 0, self.g.last_stderr
        return {n["id"]: n for n in json.loads(out)}

    def napi_set(self, napi_id, **values):
        script = ("from support import rawnapi; "
                  "rawnapi.RawGenl().set(%d, **%r)" % (napi_id, values))
        rc, out = self.g.run([*GUEST_PYTHON, "-c", script])
        assert rc == 0, self.g.last_stderr

    def rx_queue_napis(self, ifname=None):
        """{rx queue index: napi id} from `ip`-independent queue-get."""
        script = ("import json; from support import rawnapi; "
                  "print(json.dumps(rawnapi.RawGenl().rx_queues(%r)))" % (ifname or self.nic))
        rc, out = self.g.run([*GUEST_PYTHON, "-c", script])
        assert rc == 0, self.g.last_stderr
        return {int(k): v for k, v in json.loads(out).items()}

    def link_cycle(self, ifname=None):
        dev = shlex.quote(ifname or self.nic)
        self.sh("ip link set %s down && ip link set %s up" % (dev, dev))
        time.sleep(1)

    # -- load and what the kernel counts ---------------------------------

    def serve_memcached_on_nic(self):
        """Debian's memcached listens on loopback only: an administrator
        opens it to the NIC's network first."""
        self.sh("sed -i 's/^-l 127.0.0.1.*/-l 0.0.0.0/' /etc/memcached.conf && "
                "systemctl restart memcached && systemctl is-active memcached")

    def memcached_load(self, rate, seconds, conns=4):
        """Open-loop load from the host end of the tap (tests/lab/loadgen.py)."""
        proc = self.start_memcached_load(rate, seconds, conns)
        out, err = proc.communicate(timeout=seconds + 60)
        assert proc.returncode == 0, out + err
        return json.loads(out)

    def start_memcached_load(self, rate, seconds, conns=4):
        """The same load in the background: a Popen whose stdout is the JSON."""
        argv = [sys.executable, str(LAB / "loadgen.py"), "--host", GUEST_IP, "--rate", str(rate),
                "--seconds", str(seconds), "--conns", str(conns)]
        return subprocess.Popen(self.g.netns.exec_argv(argv), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def busy_poll_rx(self):
        """TcpExt:BusyPollRxPackets of the guest: packets busy polling took."""
        lines = [l.split() for l in self.g.read_file("/proc/net/netstat").splitlines()
                 if l.startswith("TcpExt:")]
        return int(dict(zip(lines[0][1:], lines[1][1:]))["BusyPollRxPackets"])

    def queue_interrupts(self):
        """Interrupts of the NIC's rx queue vectors so far, all CPUs."""
        return sum(sum(counts) for name, (irq, counts) in self.g.nic_queue_interrupts().items()
                   if name.startswith("input."))

    def nic_rx_packets(self):
        """Packets the NIC received so far (/proc/net/dev)."""
        for line in self.g.read_file("/proc/net/dev").splitlines():
            name, _, fields = line.partition(":")
            if name.strip() == self.nic:
                return int(fields.split()[1])
        raise AssertionError("%s not in /proc/net/dev" % self.nic)

    def net_rx_softirqs(self):
        """NET_RX softirqs so far, all CPUs (/proc/softirqs)."""
        for line in self.g.read_file("/proc/softirqs").splitlines():
            if line.split()[:1] == ["NET_RX:"]:
                return sum(int(x) for x in line.split()[1:])
        raise AssertionError("no NET_RX line in /proc/softirqs")

    def measure_memcached(self, rate, seconds, conns=1):
        """memcached_load() plus what the kernel counted meanwhile: queue
        interrupts and NET_RX softirqs per request, and the busy-polled
        share of the NIC's rx packets (TcpExt:BusyPollRxPackets over
        rx_packets: who took the packets, the application or the softirq)."""
        def sample():
            return (self.queue_interrupts(), self.net_rx_softirqs(), self.nic_rx_packets(),
                    self.busy_poll_rx())
        irq0, soft0, rx0, bp0 = sample()
        res = self.memcached_load(rate=rate, seconds=seconds, conns=conns)
        irq1, soft1, rx1, bp1 = sample()
        answered = max(1, res["answered"])
        res.update(irqs_per_request=round((irq1 - irq0) / answered, 4),
                   softirqs_per_request=round((soft1 - soft0) / answered, 3),
                   busy_share=round((bp1 - bp0) / max(1, rx1 - rx0), 3))
        return res

    def cpu_busy(self):
        """(busy, total) jiffies of all guest CPUs from /proc/stat."""
        fields = [int(x) for x in self.g.read_file("/proc/stat").splitlines()[0].split()[1:]]
        idle = fields[3] + fields[4]
        return sum(fields) - idle, sum(fields)

    def main_pid_maps(self, service):
        pid = self.sh("systemctl show -p MainPID --value %s" % service).strip()
        assert pid and pid != "0", "%s not running" % service
        return self.g.read_file("/proc/%s/maps" % pid)
