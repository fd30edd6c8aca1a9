# SPDX-License-Identifier: GPL-2.0-or-later
"""irqtune kernel lab: boot a lab kernel under QEMU (TCG) and drive it.

A Guest owns one network namespace on the host holding a multi-queue tap
(the only link to the guest's virtio-net NIC), one QEMU process started
inside that namespace, and a unix socket to the guest agent
(tests/lab/guest/agent.py) over virtio-serial.

    with Guest(kernel="lab", cmdline="isolcpus=managed_irq,domain,2-3") as g:
        rc, out = g.run(["ethtool", "-l", g.nic])
        g.flood(seconds=2)

Nothing here touches the host's own interfaces: all host-side networking
happens inside the guest's namespace.
"""

import itertools
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

# labvm.cpu_list: the bench's reading of a kernel CPU list (standard
# library only; bench/ is on the labs' path as on every suite's).
from irqtune_bench.placement import cpu_list  # noqa: F401

log = logging.getLogger("irqtune.lab")

LAB = Path(__file__).resolve().parent.parent / "lab"     # its scripts and images
REPO = LAB.parent.parent
LAB_CACHE = Path(os.environ.get("LAB_CACHE", "/var/cache/irqtune-lab"))
QEMU = os.environ.get("LAB_QEMU", "qemu-system-x86_64")

DEFAULT_ISOLATION = "isolcpus=managed_irq,domain,2-3 nohz_full=2-3"
GUEST_MAC = "52:54:00:49:52:51"
HOST_IP = "10.77.0.1"
GUEST_IP = "10.77.0.2"
PREFIX = 24
NIC_QUEUES = 4
MOUNT_TAG = "irqtune"
GUEST_REPO = "/irqtune"

_counter = itertools.count()


class LabError(Exception):
    """The lab could not do what was asked (boot, agent, namespace...)."""


def default_kernel():
    """Kernel the `guest` fixture boots: IRQTUNE_LAB_KERNEL or "lab"."""
    return os.environ.get("IRQTUNE_LAB_KERNEL", "lab")


def kernel_image(kernel="lab"):
    return LAB_CACHE / "out" / kernel / "bzImage"


def kernel_info(kernel="lab"):
    """The key=value lines of out/<kernel>/info as a dict ("patches" excluded)."""
    info = {}
    path = LAB_CACHE / "out" / kernel / "info"
    try:
        for line in path.read_text().splitlines():
            if "=" in line and not line.startswith(" "):
                k, v = line.split("=", 1)
                info[k] = v
    except OSError:
        pass
    return info


# Kernel reports: warnings, oopses, KASAN, lockdep (its reports start with
# "WARNING: possible ...", "BUG: ..." or "INFO: ..."), RCU and might_sleep
# splats, and the spurious-interrupt detector.
KERNEL_REPORT = re.compile(
    r"WARNING:|BUG:|Oops|INFO: |KASAN|circular locking|lock state|recursive locking|"
    r"DEBUG_LOCKS_WARN_ON|suspicious RCU|sleeping function called|"
    r"irq \d+: nobody cared|Call Trace:")


def kernel_reports(lines):
    """Indices of the report lines (KERNEL_REPORT) among kernel log lines."""
    return [n for n, ln in enumerate(lines) if KERNEL_REPORT.search(ln)]


def mask_cpus(text):
    """{cpus} of a kernel hex CPU mask such as rps_cpus or xps_cpus
    ("0", "c", "00000000,00000003")."""
    value = int(text.strip().replace(",", "") or "0", 16)
    return {cpu for cpu in range(value.bit_length()) if value >> cpu & 1}


def generation(kernel):
    """The guest generation a kernel boots: 7 for the Linux 7.2 kernels
    ("7.2-...") and the 6.12 ones configured for its image ("...-systemd",
    kernel.sh's LAB_VARIANT=systemd), else 6."""
    kernel = str(kernel)
    return 7 if kernel.startswith("7.") or kernel.endswith("-systemd") else 6


def rootfs_image(kernel="lab"):
    """Generation 6 boots Debian 12 with the lab's own init; generation 7
    boots Debian unstable with systemd as PID 1 (rootfs7.sh)."""
    return LAB_CACHE / ("rootfs7.img" if generation(kernel) == 7 else "rootfs.img")


def persistent_disk(kernel):
    """A qcow2 overlay over the kernel's guest image in $LAB_CACHE/disks/,
    for guests that must keep their root file system across boots (a
    reboot with new kernel arguments): Guest(disk=path).  The overlay's
    backing file is a hard link to today's image beside it, so a rebuilt
    image (rootfs*.sh replaces the file) cannot change what lies under the
    overlay.  Remove the directory (path.parent) when done."""
    cleanup_stale_disks()
    d = LAB_CACHE / "disks" / ("%d-%d" % (os.getpid(), next(_counter)))
    d.mkdir(parents=True)
    os.link(rootfs_image(kernel), d / "base.img")
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b",
                    str(d / "base.img"), str(d / "disk.qcow2")], check=True)
    return d / "disk.qcow2"


def cleanup_stale_disks():
    """Remove the disks of lab processes that no longer exist."""
    for d in (LAB_CACHE / "disks").glob("*-*"):
        pid = d.name.split("-")[0]
        if pid.isdigit() and not os.path.exists("/proc/%s" % pid):
            shutil.rmtree(d, ignore_errors=True)


def missing(kernel="lab"):
    """Why the lab cannot boot `kernel` here, or None when it can."""
    if os.geteuid() != 0:
        return "the kernel lab needs root (network namespaces, tap devices)"
    for tool in (QEMU, "ip"):
        if shutil.which(tool) is None:
            return "%s not found" % tool
    if not kernel_image(kernel).is_file():
        if str(kernel).endswith("-systemd"):
            target = "make lab-kernel-base-systemd"
        elif generation(kernel) == 7:
            target = "make lab7-rt" if str(kernel).endswith("-rt") else "make lab7"
        else:
            target = "make lab"
        return "lab kernel %s not built (%s); run `%s`" % (kernel, kernel_image(kernel), target)
    if not rootfs_image(kernel).is_file():
        target = "make lab7" if generation(kernel) == 7 else "make lab"
        return "lab rootfs not built (%s); run `%s`" % (rootfs_image(kernel), target)
    return None


def insn_plugin():
    """The instruction-counting QEMU plugin (`make lab-plugin`,
    tests/lab/plugin/); IRQTUNE_LAB_INSN_PLUGIN names another build."""
    return Path(os.environ.get("IRQTUNE_LAB_INSN_PLUGIN") or LAB_CACHE / "plugin" / "insn_count.so")


def read_insns(sock_path, timeout=5):
    """One snapshot of the plugin's per-vCPU instruction counters: [count
    per vCPU].  A window is the difference of two snapshots."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(str(sock_path))
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    counts = {}
    n = None
    for line in data.decode().splitlines():
        f = line.split()
        if f[:1] == ["vcpus"]:
            n = int(f[1])
        elif f[:1] == ["vcpu"]:
            counts[int(f[1])] = int(f[2])
    if n is None or sorted(counts) != list(range(n)):
        raise LabError("unreadable instruction counter answer: %r" % data[:200])
    return [counts[i] for i in range(n)]


def _prune(run_root, keep):
    """Remove all but the newest `keep` run directories (console logs)."""
    dirs = sorted(d for d in run_root.iterdir() if d.is_dir())
    for d in dirs[:-keep] if len(dirs) > keep else []:
        shutil.rmtree(d, ignore_errors=True)


def _set_pdeathsig():
    """In the QEMU child: die with the process that started the lab."""
    import ctypes
    import signal
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG


def cleanup_stale():
    """Remove lab namespaces (and the QEMU processes in them) left behind
    by a lab process that no longer exists. Names are
    irqtune-lab-<kernel>-<pid>-<n>."""
    res = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    for line in res.stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        if not name.startswith("irqtune-lab-"):
            continue
        parts = name.rsplit("-", 2)
        if len(parts) != 3 or not parts[1].isdigit():
            continue
        if os.path.exists("/proc/%s" % parts[1]):
            continue
        pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True)
        for pid in pids.stdout.split():
            try:
                os.kill(int(pid), 15)
            except (OSError, ValueError):
                pass
        log.info("removed stale lab namespace %s", name)
        _ip("netns", "del", name, check=False)


def _ip(*args, check=True):
    res = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and res.returncode != 0:
        raise LabError("ip %s failed: %s" % (" ".join(args), res.stderr.strip()))
    return res


class Netns:
    """A network namespace holding the multi-queue tap the guest uses."""

    def __init__(self, name, queues=NIC_QUEUES, guest_ip=GUEST_IP, guest_mac=GUEST_MAC):
        self.name = name
        self.tap = "tap0"
        _ip("netns", "add", name)
        try:
            _ip("-n", name, "link", "set", "lo", "up")
            _ip("-n", name, "tuntap", "add", "dev", self.tap, "mode", "tap", "multi_queue")
            _ip("-n", name, "addr", "add", "%s/%d" % (HOST_IP, PREFIX), "dev", self.tap)
            _ip("-n", name, "link", "set", self.tap, "up")
            # A static neighbour: floods need no ARP round trip first.
            _ip("-n", name, "neigh", "replace", guest_ip, "lladdr", guest_mac,
                "dev", self.tap, "nud", "permanent")
        except Exception:
            self.delete()
            raise

    def exec_argv(self, argv):
        return ["ip", "netns", "exec", self.name, *argv]

    def delete(self):
        _ip("netns", "del", self.name, check=False)


class Link:
    """One virtual link for several guests: a network namespace holding a
    bridge (the host end, HOST_IP) and one multi-queue tap per guest
    attached to it, so the guests reach each other as two hosts on one
    switch.  Guest(link=...) takes a tap here instead of a namespace of
    its own; the link is deleted by whoever made it (delete(), or a with
    block)."""

    def __init__(self, name=None):
        self.name = "irqtune-lab-link-%d-%d" % (os.getpid(), next(_counter)) if name is None else name
        self.taps = 0
        cleanup_stale()
        _ip("netns", "add", self.name)
        try:
            _ip("-n", self.name, "link", "set", "lo", "up")
            _ip("-n", self.name, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.name, "addr", "add", "%s/%d" % (HOST_IP, PREFIX), "dev", "br0")
            _ip("-n", self.name, "link", "set", "br0", "up")
        except Exception:
            self.delete()
            raise

    def add_tap(self):
        tap = "tap%d" % self.taps
        self.taps += 1
        _ip("-n", self.name, "tuntap", "add", "dev", tap, "mode", "tap", "multi_queue")
        _ip("-n", self.name, "link", "set", tap, "master", "br0")
        _ip("-n", self.name, "link", "set", tap, "up")
        return tap

    def exec_argv(self, argv):
        return ["ip", "netns", "exec", self.name, *argv]

    def delete(self):
        _ip("netns", "del", self.name, check=False)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.delete()


class _LinkPort:
    """A guest's tap on a shared Link, seen as the guest's netns."""

    def __init__(self, link):
        self.link = link
        self.name = link.name
        self.tap = link.add_tap()

    def exec_argv(self, argv):
        return self.link.exec_argv(argv)

    def delete(self):
        _ip("-n", self.link.name, "link", "del", self.tap, check=False)


class Guest:
    """One QEMU guest running a lab kernel. See the module docstring."""

    def __init__(self, kernel="lab", cmdline=DEFAULT_ISOLATION, smp=4, memory=None,
                 queues=NIC_QUEUES, boot_timeout=None, name=None, nic_options="", disk=None,
                 cpu="max", count_insns=False, ip=GUEST_IP, mac=GUEST_MAC, link=None):
        self.kernel = kernel
        self.generation = generation(kernel)
        self.cmdline = cmdline if cmdline is not None else ""
        self.smp = smp
        # systemd, TuneD and three servers need more than the bare init.
        self.memory = memory or (3072 if self.generation == 7 else 1536)
        self.queues = queues
        # extra virtio-net-pci properties, e.g. "rss=on" (QEMU's software RSS)
        self.nic_options = nic_options
        # persistent_disk() overlay that keeps its changes; None boots a
        # throw-away snapshot of the image
        self.disk = disk
        # QEMU -cpu model; the bench drops ERMS/FSRM so string copies count
        # per 8 bytes, not per byte (tests/lab/plugin/insn_count.c)
        self.cpu = cpu
        # load the instruction-counting plugin; read it with insns()
        self.count_insns = count_insns
        self.insn_sock = None
        # the guest's address and MAC on its link; link: a shared Link
        # (several guests on one bridge) instead of a namespace of its own
        self.ip = ip
        self.mac = mac
        self.link = link
        self.boot_timeout = boot_timeout or float(os.environ.get("LAB_BOOT_TIMEOUT", "600"))
        self.name = name or "%s-%d-%d" % (kernel, os.getpid(), next(_counter))
        self.nic = None
        self.boot_seconds = None
        self.last_stderr = ""
        self.proc = None
        self.netns = None
        self.sock = None
        self._buf = b""
        self._ids = itertools.count(1)
        self.workdir = None

    # -- lifecycle --------------------------------------------------------

    def kernel_cmdline(self):
        base = ["console=ttyS0", "root=/dev/vda", "rw", "rootfstype=ext4",
                "panic=-1", "quiet", "loglevel=4",
                "irqtune.ip=%s/%d" % (self.ip, PREFIX), "irqtune.nic=%s" % self.mac]
        if self.generation == 7:
            # systemd is PID 1; its units mount the share and start the agent.
            base += ["systemd.show_status=false", "systemd.log_target=kmsg"]
        else:
            base.append("init=/sbin/lab-init")
        return " ".join(base + ([self.cmdline] if self.cmdline else []))

    def qemu_argv(self):
        vectors = 2 * self.queues + 2
        return [
            # debug-threads: vCPU threads are named "CPU <n>/TCG", so the
            # bench can place them (tests/lab/bench)
            QEMU, "-name", "irqtune-lab-%s,debug-threads=on" % self.name,
            "-machine", "pc", "-accel", "tcg,thread=multi", "-cpu", self.cpu,
            "-smp", str(self.smp), "-m", str(self.memory),
            "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
            "-rtc", "base=utc",
            "-kernel", str(kernel_image(self.kernel)),
            "-append", self.kernel_cmdline(),
            "-drive", ("file=%s,format=qcow2,if=virtio" % self.disk) if self.disk else
            ("file=%s,format=raw,if=virtio,snapshot=on" % rootfs_image(self.kernel)),
            "-virtfs", "local,path=%s,mount_tag=%s,security_model=none,readonly=on"
            % (REPO, MOUNT_TAG),
            "-netdev", "tap,id=n0,ifname=%s,script=no,downscript=no,queues=%d,vhost=off"
            % (self.netns.tap, self.queues),
            "-device", "virtio-net-pci,netdev=n0,mq=on,vectors=%d,mac=%s%s"
            % (vectors, self.mac, "," + self.nic_options if self.nic_options else ""),
            "-device", "virtio-serial-pci",
            "-chardev", "socket,id=c0,path=%s,server=on,wait=off" % self.sockpath,
            "-device", "virtserialport,chardev=c0,name=irqtune.agent",
            "-chardev", "file,id=s0,path=%s" % self.console_path,
            "-serial", "chardev:s0",
            "-monitor", "none",
        ] + (["-plugin", "%s,sock=%s" % (insn_plugin(), self.insn_sock)] if self.count_insns else [])

    def start(self):
        reason = missing(self.kernel)
        if reason:
            raise LabError(reason)
        run_root = LAB_CACHE / "run"
        run_root.mkdir(parents=True, exist_ok=True)
        _prune(run_root, keep=40)
        self.workdir = run_root / (time.strftime("%Y%m%d-%H%M%S-") + self.name)
        self.workdir.mkdir(parents=True)
        self.sockpath = self.workdir / "agent.sock"
        self.console_path = self.workdir / "console.log"
        if self.count_insns:
            if not insn_plugin().is_file():
                raise LabError("instruction counter %s not built; run `make lab-plugin`" % insn_plugin())
            self.insn_sock = self.workdir / "insn.sock"
        cleanup_stale()
        if self.link is not None:
            self.netns = _LinkPort(self.link)
        else:
            self.netns = Netns("irqtune-lab-%s" % self.name, self.queues, self.ip, self.mac)
        argv = self.qemu_argv()
        (self.workdir / "qemu.argv").write_text(json.dumps(argv, indent=1) + "\n")
        log.info("booting %s: %s", self.name, self.kernel_cmdline())
        t0 = time.monotonic()
        qemu_log = open(self.workdir / "qemu.log", "wb")
        try:
            self.proc = subprocess.Popen(self.netns.exec_argv(argv), stdin=subprocess.DEVNULL,
                                         stdout=qemu_log, stderr=subprocess.STDOUT,
                                         preexec_fn=_set_pdeathsig)
        except Exception:
            self.netns.delete()
            raise
        finally:
            qemu_log.close()
        try:
            self._connect(t0 + self.boot_timeout)
        except Exception:
            self.kill()
            raise
        self.boot_seconds = time.monotonic() - t0
        self.nic = self.nic_by_mac()
        log.info("guest %s up in %.1fs, nic %s", self.name, self.boot_seconds, self.nic)
        return self

    def nic_by_mac(self, seconds=20):
        """The guest's interface with the lab NIC's MAC address, waiting for
        a (re-)probed NIC and udev's rename to settle; None if there is none.
        Each address is read on its own: an interface going away meanwhile
        makes a read fail, which is not an answer (a grep over all of them
        then exits 2)."""
        script = ('for f in /sys/class/net/*/address; do '
                  '[ "$(cat "$f" 2>/dev/null)" = "$1" ] && basename "${f%/address}"; done')
        deadline = time.monotonic() + seconds
        while True:
            _, out = self.run(["sh", "-c", script, "nic", self.mac])
            if out.split():
                name = out.split()[0]
                time.sleep(1)
                _, again = self.run(["sh", "-c", script, "nic", self.mac])
                if again.split() == [name]:
                    return name
            if time.monotonic() > deadline:
                return None
            time.sleep(1)

    def _connect(self, deadline):
        """Connect to the agent socket and wait for a pong."""
        while True:
            if self.proc.poll() is not None:
                raise LabError("QEMU exited (%s) during boot; %s" % (self.proc.returncode, self._tail()))
            if time.monotonic() > deadline:
                raise LabError("guest did not answer within %ss; %s" % (self.boot_timeout, self._tail()))
            if self.sock is None:
                try:
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    s.connect(str(self.sockpath))
                    self.sock = s
                except OSError:
                    s.close()
                    time.sleep(0.5)
                    continue
            try:
                res = self._request({"op": "ping"}, timeout=3)
                if res.get("pong"):
                    return
            except LabError:
                continue

    def _tail(self, n=30):
        text = self.console()
        return "console (%s) ends:\n%s" % (self.console_path, "\n".join(text.splitlines()[-n:]))

    def console(self):
        try:
            return self.console_path.read_text(errors="replace")
        except (OSError, AttributeError):
            return ""

    def insns(self):
        """Guest instructions each vCPU has executed since boot (the plugin's
        counters; needs count_insns=True)."""
        if self.insn_sock is None:
            raise LabError("guest %s was booted without the instruction counter" % self.name)
        return read_insns(self.insn_sock)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def shutdown(self, timeout=60):
        """Power the guest off through the agent; kill QEMU if that fails."""
        if self.proc is None:
            return
        if self.alive() and self.sock is not None:
            try:
                self._request({"op": "shutdown"}, timeout=10)
            except LabError as e:
                log.warning("shutdown request failed: %s", e)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                log.warning("guest %s did not power off, killing QEMU", self.name)
        self.kill()

    def kill(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.netns is not None:
            self.netns.delete()
            self.netns = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.shutdown()

    # -- agent protocol ---------------------------------------------------

    def _request(self, req, timeout):
        if self.sock is None:
            raise LabError("not connected to the guest agent")
        rid = next(self._ids)
        req = dict(req, id=rid)
        deadline = time.monotonic() + timeout
        try:
            self.sock.sendall((json.dumps(req) + "\n").encode())
            while True:
                while b"\n" in self._buf:
                    line, self._buf = self._buf.split(b"\n", 1)
                    try:
                        res = json.loads(line)
                    except ValueError:
                        continue
                    if res.get("id") == rid:
                        if "error" in res:
                            raise LabError("agent: %s" % res["error"])
                        return res
                    # A reply to an earlier request that timed out: drop it.
                left = deadline - time.monotonic()
                if left <= 0:
                    raise LabError("no answer from the guest agent within %ss to %s"
                                   % (timeout, req.get("argv", req.get("op"))))
                if not self.alive():
                    raise LabError("QEMU exited; %s" % self._tail())
                self.sock.settimeout(min(left, 1.0))
                try:
                    chunk = self.sock.recv(65536)
                except socket.timeout:
                    continue
                if not chunk:
                    raise LabError("agent socket closed; %s" % self._tail())
                self._buf += chunk
        except OSError as e:
            raise LabError("agent socket: %s" % e) from e

    def execute(self, argv, timeout=60, input=None, env=None, cwd=None):
        """Run argv in the guest; returns the agent's full answer (dict with
        rc, stdout, stderr, timed_out, seconds)."""
        req = {"op": "run", "argv": [str(a) for a in argv], "timeout": timeout}
        if input is not None:
            req["input"] = input
        if env:
            req["env"] = env
        if cwd:
            req["cwd"] = cwd
        res = self._request(req, timeout=timeout + 30)
        self.last_stderr = res.get("stderr", "")
        log.debug("guest %s: %s -> %s", self.name, argv, res.get("rc"))
        return res

    def run(self, argv, timeout=60, input=None, check=False, env=None, cwd=None):
        """Run argv in the guest and return (exit code, stdout). stderr is
        kept in self.last_stderr. A timeout gives rc -9."""
        res = self.execute(argv, timeout=timeout, input=input, env=env, cwd=cwd)
        if check and res["rc"] != 0:
            raise LabError("guest command %s failed (rc %s): %s%s"
                           % (list(argv), res["rc"], res["stdout"], res["stderr"]))
        return res["rc"], res["stdout"]

    def spawn(self, argv, log_path="/dev/null", cwd=None):
        """Start a background process in the guest; returns its pid."""
        req = {"op": "spawn", "argv": [str(a) for a in argv], "log": log_path}
        if cwd:
            req["cwd"] = cwd
        return self._request(req, timeout=30)["pid"]

    def read_file(self, path, timeout=30):
        rc, out = self.run(["cat", path], timeout=timeout)
        if rc != 0:
            raise LabError("cannot read %s in the guest: %s" % (path, self.last_stderr.strip()))
        return out

    def nic_device(self):
        """The NIC's virtio device name (virtioN), as /proc/interrupts uses it."""
        rc, out = self.run(["readlink", "-f", "/sys/class/net/%s/device" % self.nic])
        if rc != 0 or not out.strip():
            raise LabError("no device behind %s: %s" % (self.nic, self.last_stderr.strip()))
        return out.strip().rsplit("/", 1)[-1]

    def nic_queue_interrupts(self):
        """{"input.0": (irq, [count per CPU]), ...} of the NIC's queue vectors."""
        dev = self.nic_device()
        lines = self.read_file("/proc/interrupts").splitlines()
        ncpu = len(lines[0].split())
        irqs = {}
        for line in lines[1:]:
            fields = line.split()
            if not fields or not fields[0].rstrip(":").isdigit():
                continue
            m = re.fullmatch(re.escape(dev) + r"-((?:input|output)\.\d+)", fields[-1])
            if m:
                irqs[m.group(1)] = (int(fields[0].rstrip(":")),
                                    [int(x) for x in fields[1:1 + ncpu]])
        return irqs

    def write_file(self, path, data, timeout=30):
        """Write data to a guest file (sysfs/procfs included); returns the
        exit code of the write and keeps its error text in last_stderr."""
        rc, _ = self.run(["sh", "-c", 'printf %s "$1" > "$2"', "write", data, path], timeout=timeout)
        return rc

    # -- traffic ----------------------------------------------------------

    def flood(self, seconds=2.0, count=200000, size=64, flows=16, port=9, timeout=None):
        """Send UDP packets from the host side of the tap to the guest's
        NIC: at most `count` packets, for at most `seconds`, spread over
        `flows` source ports (so the tap spreads them over its queues).
        Returns the sender's report (dict: sent, errors, seconds)."""
        if self.netns is None:
            raise LabError("guest not running")
        argv = self.netns.exec_argv([
            sys.executable, str(LAB / "flood.py"), "--src", HOST_IP, "--dst", self.ip,
            "--port", str(port), "--seconds", str(seconds), "--count", str(count),
            "--size", str(size), "--flows", str(flows)])
        res = subprocess.run(argv, capture_output=True, text=True,
                             timeout=timeout or seconds + 30)
        if res.returncode != 0:
            raise LabError("flood failed: %s" % res.stderr.strip())
        return json.loads(res.stdout)

    def host_run(self, argv, timeout=60):
        """Run argv on the host inside the guest's network namespace."""
        res = subprocess.run(self.netns.exec_argv([str(a) for a in argv]),
                             capture_output=True, text=True, timeout=timeout)
        return res.returncode, res.stdout
