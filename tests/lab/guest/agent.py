#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""irqtune lab guest agent.

Reads newline-delimited JSON requests from the virtio-serial port named
"irqtune.agent" and answers each with one JSON line carrying the same "id".

Requests:
  {"id": N, "op": "ping"}
  {"id": N, "op": "run", "argv": [...], "timeout": S, "input": "..."?,
   "env": {...}?, "cwd": "..."?}
      -> {"id": N, "rc": int, "stdout": str, "stderr": str,
          "timed_out": bool, "seconds": float}
      rc is -9 (SIGKILL) after a timeout, 127 when argv[0] does not exist.
  {"id": N, "op": "spawn", "argv": [...], "log": "/path"}
      start a background process (own session, output to "log");
      -> {"id": N, "pid": int}
  {"id": N, "op": "shutdown"}   sync and power the guest off
Errors in a request give {"id": N, "error": "..."}.
"""

import ctypes
import json
import os
import signal
import subprocess
import sys
import time

PORT_NAME = "irqtune.agent"
MAX_OUTPUT = 4 * 1024 * 1024


def find_port():
    base = "/sys/class/virtio-ports"
    for _ in range(600):
        try:
            for entry in sorted(os.listdir(base)):
                try:
                    with open(os.path.join(base, entry, "name")) as f:
                        if f.read().strip() == PORT_NAME:
                            return "/dev/" + entry
                except OSError:
                    continue
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit("agent: no virtio port named " + PORT_NAME)


def run(req):
    argv = req["argv"]
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        return {"error": "argv must be a non-empty list of strings"}
    timeout = float(req.get("timeout", 60))
    env = dict(os.environ)
    env.update(req.get("env") or {})
    data = req.get("input")
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=req.get("cwd") or "/",
            start_new_session=True,
        )
    except FileNotFoundError as e:
        return {"rc": 127, "stdout": "", "stderr": str(e), "timed_out": False, "seconds": 0.0}
    except OSError as e:
        return {"rc": 126, "stdout": "", "stderr": str(e), "timed_out": False, "seconds": 0.0}
    timed_out = False
    try:
        out, err = proc.communicate(data.encode() if data is not None else None, timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            out, err = b"", b"agent: output pipes stayed open after SIGKILL"
    return {
        "rc": proc.returncode if proc.returncode is not None else -9,
        "stdout": out[:MAX_OUTPUT].decode(errors="replace"),
        "stderr": err[:MAX_OUTPUT].decode(errors="replace"),
        "timed_out": timed_out,
        "seconds": round(time.monotonic() - start, 3),
    }


def spawn(req):
    argv = req["argv"]
    logpath = req.get("log") or "/dev/null"
    with open(logpath, "ab") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                cwd=req.get("cwd") or "/", start_new_session=True)
    return {"pid": proc.pid}


def poweroff():
    os.sync()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.reboot(0x4321FEDC)  # LINUX_REBOOT_CMD_POWER_OFF
    # Still here: let init know.
    sys.exit(3)


def main():
    path = find_port()
    fd = os.open(path, os.O_RDWR)
    print("agent: listening on %s (%s)" % (path, PORT_NAME), flush=True)
    buf = b""

    def reply(obj):
        data = (json.dumps(obj) + "\n").encode()
        while data:
            try:
                n = os.write(fd, data)
            except OSError:
                time.sleep(0.2)
                continue
            data = data[n:]

    while True:
        try:
            chunk = os.read(fd, 65536)
        except InterruptedError:
            continue
        except OSError:
            time.sleep(0.2)
            continue
        if not chunk:
            # No host connected: the port reads as EOF until one is.
            time.sleep(0.1)
            continue
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if not line.strip():
                continue
            try:
                req = json.loads(line)
                rid = req.get("id")
            except ValueError:
                reply({"id": None, "error": "bad json"})
                continue
            op = req.get("op")
            try:
                if op == "ping":
                    res = {"pong": True, "uptime": open("/proc/uptime").read().split()[0]}
                elif op == "run":
                    res = run(req)
                elif op == "spawn":
                    res = spawn(req)
                elif op == "shutdown":
                    reply({"id": rid, "ok": True})
                    poweroff()
                    continue
                else:
                    res = {"error": "unknown op %r" % (op,)}
            except Exception as e:  # report, never die
                res = {"error": "%s: %s" % (type(e).__name__, e)}
            res["id"] = rid
            reply(res)


if __name__ == "__main__":
    main()
