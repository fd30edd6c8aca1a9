# SPDX-License-Identifier: GPL-2.0-or-later
"""Test rig: network namespaces with veth NAPIs, and the real TuneD daemon.

Everything the rig starts runs inside one network namespace (TuneD, udevd
for hotplug events), so the host's own NICs are never seen, let alone
tuned.  TuneD's own state files in /etc/tuned are saved and put back.
"""

import contextlib
import ctypes
import json
import re
import os
import shutil
import signal
import socket
import subprocess

from rawnapi import RawGenl
from support.waiting import wait_for  # noqa: F401 (the suites import it from here)

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def run(*argv, check=True, **kwargs):
    return subprocess.run(argv, check=check, capture_output=True, text=True, **kwargs)


class NetNs:
    def __init__(self, name):
        self.name = name
        run("ip", "netns", "del", name, check=False)
        run("ip", "netns", "add", name)
        self.exec("ip", "link", "set", "lo", "up")

    def exec(self, *argv, check=True):
        return run("ip", "netns", "exec", self.name, *argv, check=check)

    def popen(self, *argv, **kwargs):
        return subprocess.Popen(("ip", "netns", "exec", self.name) + argv, **kwargs)

    @contextlib.contextmanager
    def entered(self):
        """Run the calling thread inside the namespace (sockets keep it after)."""
        own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        target = os.open("/run/netns/" + self.name, os.O_RDONLY)
        try:
            if _libc.setns(target, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns")
            yield
        finally:
            _libc.setns(own, CLONE_NEWNET)
            os.close(own)
            os.close(target)

    def add_veth(self, name, queues=2, up=True):
        """veth pair name/<name>p with GRO on both ends (GRO makes veth NAPIs)."""
        self.exec("ip", "link", "add", name, "numrxqueues", str(queues),
                  "numtxqueues", str(queues), "type", "veth", "peer", name + "p",
                  "numrxqueues", str(queues), "numtxqueues", str(queues))
        if up:
            self.up(name)

    def up(self, name):
        for dev in (name, name + "p"):
            self.exec("ip", "link", "set", dev, "up")
            self.exec("ethtool", "-K", dev, "gro", "on")

    def delete(self):
        run("ip", "netns", "del", self.name, check=False)

    # NAPI values as the kernel holds them, read without the library

    def napis(self, dev):
        with self.entered():
            nl = RawGenl()
            try:
                return nl.napis(dev)
            finally:
                nl.close()

    def set_napis(self, devs, values):
        with self.entered():
            nl = RawGenl()
            try:
                for dev in devs:
                    for napi in nl.napis(dev):
                        nl.set(napi["id"], **values)
            finally:
                nl.close()

    def napis_have(self, devs, values):
        """True when every NAPI of every device carries values (and there are NAPIs)."""
        for dev in devs:
            found = self.napis(dev)
            if not found or any(n.get(k) != v for n in found for k, v in values.items()):
                return False
        return True


DBUS_SOCKET = "/run/dbus/system_bus_socket"
DBUS_PID = "/run/dbus/pid"


def _dbus_running():
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(DBUS_SOCKET)
        return True
    except OSError:
        return False
    finally:
        sock.close()


TUNED_ETC = "/etc/tuned"
SAVED_FILES = ("active_profile", "profile_mode", "post_loaded_profile", "bootcmdline",
               "latency-suspend-variables.conf")


class TunedDaemon:
    """Debian's tuned, started in a namespace, driven through tuned-adm."""

    def __init__(self, ns, workdir):
        self.ns = ns
        self.workdir = workdir
        self.log_path = os.path.join(workdir, "tuned.log")
        self.proc = None
        self.udevd = None
        self.dbus_pid = None
        self._saved = {}
        self._profiles = []

    # -- environment ------------------------------------------------------

    def setup(self):
        for name in SAVED_FILES:
            path = os.path.join(TUNED_ETC, name)
            self._saved[name] = open(path).read() if os.path.exists(path) else None
        with open(os.path.join(TUNED_ETC, "active_profile"), "w") as f:
            f.write("\n")
        with open(os.path.join(TUNED_ETC, "profile_mode"), "w") as f:
            f.write("manual\n")
        if not _dbus_running():
            for stale in (DBUS_SOCKET, DBUS_PID):    # left by a bus that is gone
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(stale)
            os.makedirs("/run/dbus", exist_ok=True)
            out = run("dbus-daemon", "--system", "--fork", "--print-pid").stdout
            self.dbus_pid = int(out.split()[0])
        udevd = shutil.which("systemd-udevd") or "/lib/systemd/systemd-udevd"
        self.udevd = self.ns.popen(udevd, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)

    def teardown(self):
        self.stop()
        if self.udevd is not None:
            self.udevd.terminate()
            self.udevd.wait(10)
        for name in self._profiles:
            shutil.rmtree(os.path.join(TUNED_ETC, name), ignore_errors=True)
        for name, text in self._saved.items():
            path = os.path.join(TUNED_ETC, name)
            if text is None:
                if os.path.exists(path):
                    os.unlink(path)
            else:
                with open(path, "w") as f:
                    f.write(text)
        if self.dbus_pid:
            os.kill(self.dbus_pid, signal.SIGTERM)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(DBUS_SOCKET)

    def write_profile(self, name, text):
        os.makedirs(os.path.join(TUNED_ETC, name), exist_ok=True)
        with open(os.path.join(TUNED_ETC, name, "tuned.conf"), "w") as f:
            f.write(text)
        if name not in self._profiles:
            self._profiles.append(name)

    def write_variables(self, text):
        with open(os.path.join(TUNED_ETC, "latency-suspend-variables.conf"), "w") as f:
            f.write(text)

    # -- daemon -----------------------------------------------------------

    def start(self):
        assert self.proc is None
        self.proc = self.ns.popen("tuned", "--debug", "--log", self.log_path,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        # rc 1 with "No current active profile." is an answer too
        wait_for(lambda: "active profile" in self.adm("active", check=False).stdout,
                 timeout=30, what="tuned on D-Bus")

    def stop(self):
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc = None
        # the pid file outlives a killed daemon; tuned refuses to start over it
        with contextlib.suppress(FileNotFoundError):
            os.unlink("/run/tuned/tuned.pid")

    def adm(self, *args, check=True):
        return run("tuned-adm", *args, check=check, timeout=120)

    def log(self):
        try:
            with open(self.log_path) as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def log_mark(self):
        return len(self.log())

    def log_since(self, mark):
        return self.log()[mark:]

    def profile(self, *names):
        """Switch profile and wait until the daemon has finished applying it."""
        mark = self.log_mark()
        self.adm("profile", *names)
        wait_for(lambda: re.search(r"static tuning from profile '[^']*' applied",
                                   self.log_since(mark)),
                 timeout=60, what="profile %s applied" % " ".join(names))
        return mark

    def off(self):
        mark = self.log_mark()
        self.adm("off")
        return mark

    def saw_removal(self, device, mark):
        """TuneD logged the udev remove event (2.20: "removed", 2.25+: ", remove event")."""
        return re.search(r"device '%s'(,)? remove" % re.escape(device), self.log_since(mark))

    def verify(self):
        mark = self.log_mark()
        result = self.adm("verify", check=False)
        return result, self.log_since(mark)


def ip_json(ns, *argv):
    return json.loads(ns.exec("ip", "-j", *argv).stdout)
