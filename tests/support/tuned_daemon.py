# SPDX-License-Identifier: GPL-2.0-or-later
"""Debian's TuneD daemon, started in a network namespace for a test.

Everything it starts runs inside that namespace (TuneD, udevd for hotplug
events), so the host's own NICs are never seen, let alone tuned.  TuneD's
own state files in /etc/tuned are saved and put back.
"""

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess

from support.commands import run
from support.waiting import wait_for


# latency-suspend with its parents' host-wide plugins switched off, for the
# daemons the tests start in a namespace: sysctls, CPU and VM settings are
# global (and busy_read/busy_poll do not exist inside a network namespace),
# and [bootloader] can never verify without a reboot.  Everything [napi]
# does comes from latency-suspend.
CONFINED_LATENCY_SUSPEND = """
[main]
summary=latency-suspend confined to a network namespace (tests)
include=latency-suspend

[sysctl]
enabled=false
[cpu]
enabled=false
[vm]
enabled=false
[bootloader]
enabled=false
"""

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
            # the bus leaves both behind, and its pid file stops the next
            # bus (make deploy's) from starting
            for path in (DBUS_SOCKET, DBUS_PID):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)

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

