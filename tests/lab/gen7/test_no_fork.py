# SPDX-License-Identifier: GPL-2.0-or-later
"""Nothing irqtune runs inside the TuneD daemon forks or executes.

TuneD is multi-threaded: a child forked from it holds copies of locks
other threads held, and every fork costs the daemon's whole address
space.  The test restarts tuned.service under a wrapper that installs a
Python audit hook (sys.addaudithook) and then runs /usr/sbin/tuned with
runpy.  The hook records every fork, exec, spawn, system() and
subprocess.Popen of the daemon whose Python stack holds a frame of the
library (.../irqtune/...) or of one of the project's TuneD plugins; TuneD's
own (its [sysctl], [bootloader], ...) are counted but not held against us,
nor are pyroute2's two platform probes when it is first imported (see
pyroute2_import_probe: a dependency's, once per daemon).

The profile uses every feature: [napi] with auto values measuring a systemd
service (unit lookups), [busy_poll_optin] with restart (daemon-reload,
try-restart, unit properties), [zerocopy_rx] and [nic_housekeeping] on
netdevsim devices, [gsim] (its refusal where the kernel lacks GSIM).  It is
applied, left for several re-checks and auto measurements, verified and
unapplied (tuned-adm off, which opts memcached out and restarts it).
"""

import json
import time

import pytest

from support.waiting import wait_for

LOG = "/run/irqtune-audit.jsonl"
WRAPPER = "/usr/local/sbin/tuned-audited"
DROPIN_DIR = "/etc/systemd/system/tuned.service.d"
OPTIN = "/etc/systemd/system/memcached.service.d/50-irqtune-busypoll.conf"
LIB = "libirqtune-busypoll.so"
PROFILE = "irqtune-every-feature"
NSIM_IDS = (78, 79)         # zero-copy's device, housekeeping's device
AUTO_INTERVAL = 10          # auto's minimum: measurements while we wait

HOOK = r'''#!/usr/bin/python3
"""TuneD under an audit hook recording forks and execs (tests/lab/gen7/test_no_fork.py)."""
import json, os, runpy, sys, traceback

LOG = %(log)r
EVENTS = {"os.fork", "os.forkpty", "os.exec", "os.posix_spawn", "os.spawn", "os.system",
          "subprocess.Popen", "pty.spawn"}
OURS = {"plugin_napi.py", "plugin_busy_poll_optin.py", "plugin_gsim.py",
        "plugin_nic_housekeeping.py", "plugin_zerocopy_rx.py", "irqtune_common.py",
        "irqtune_netdev.py", "irqtune_tunedlog.py"}


def hook(event, args):
    if event not in EVENTS:
        return
    stack = traceback.extract_stack()[:-1]
    frames = ["%%s:%%d %%s" %% (f.filename, f.lineno, f.name) for f in stack]
    ours = [f for f, s in zip(frames, stack)
            if "/irqtune/" in s.filename or os.path.basename(s.filename) in OURS]
    with open(LOG, "a") as out:
        out.write(json.dumps({"event": event, "args": repr(args)[:300], "pid": os.getpid(),
                              "irqtune": ours, "stack": frames}) + "\n")


sys.addaudithook(hook)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
''' % {"log": LOG}


def new_netdevsim(h, nsim_id, queues=4):
    h.sh("modprobe netdevsim 2>/dev/null; echo '%d 1 %d' > /sys/bus/netdevsim/new_device"
         % (nsim_id, queues))
    path = "/sys/bus/netdevsim/devices/netdevsim%d/net" % nsim_id
    wait_for(lambda: h.run("ls", path)[0] == 0, timeout=60, interval=1,
             what="a netdev of netdevsim%d" % nsim_id)
    h.sh("udevadm settle")
    dev = h.sh("ls %s" % path).split()[0]
    h.sh("ip link set %s up && ethtool -L %s combined 2" % (dev, dev))
    return dev


@pytest.fixture
def audited(host7):
    """host7 with tuned.service running under the audit hook, memcached
    serving the NIC and two netdevsim devices; all undone afterwards."""
    h = host7
    h.off()
    h.serve_memcached_on_nic()
    devs = [new_netdevsim(h, i) for i in NSIM_IDS]
    exec_start = h.sh("sed -n 's/^ExecStart=//p' /usr/lib/systemd/system/tuned.service").strip()
    assert exec_start.startswith("/usr/sbin/tuned"), exec_start
    h.write(WRAPPER, HOOK)
    h.sh("mkdir -p %s" % DROPIN_DIR)
    h.write(DROPIN_DIR + "/50-audit.conf",
            "[Service]\nExecStart=\nExecStart=/usr/bin/python3 %s %s\n" % (WRAPPER, exec_start))
    h.sh("rm -f %s && systemctl daemon-reload && systemctl restart tuned && "
         "systemctl is-active tuned" % LOG)
    yield h, devs
    h.off()
    h.sh("rm -f %s/50-audit.conf %s && systemctl daemon-reload && systemctl restart tuned"
         % (DROPIN_DIR, WRAPPER))
    h.sh("for i in %s; do echo $i > /sys/bus/netdevsim/del_device; done"
         % " ".join(map(str, NSIM_IDS)), check=False)


def pyroute2_import_probe(event):
    """pyroute2.config's platform probes when pyroute2 is first imported
    (platform.uname()'s processor runs `uname -p`, platform.architecture()
    `file -b python3`): once per daemon, when TuneD first loads a plugin
    of ours, never again while profiles apply, re-check or unapply."""
    return any(f.split(":")[0].endswith("/pyroute2/config/__init__.py") and f.endswith(" <module>")
               for f in event["stack"])


def recorded(h):
    rc, out = h.run("cat", LOG)
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")] if rc == 0 else []


def test_no_fork_or_exec_from_irqtune_while_every_feature_runs(audited):
    h, (zc_dev, hk_dev) = audited
    assert h.sh("tr '\\0' ' ' </proc/$(systemctl show -p MainPID --value tuned)/cmdline"
                ).find(WRAPPER) >= 0, "tuned.service does not run under the audit hook"
    h.custom_profile(PROFILE, "\n".join([
        "[main]", "summary=every irqtune feature (no-fork test)", "",
        "[zerocopy_rx]", "priority=-20", "nics=%s" % zc_dev, "queues=1", "header_split=on",
        "hds_thresh=0", "ntuple=on", "",
        "[nic_housekeeping]", "priority=-10", "devices=%s" % hk_dev, "channels=housekeeping",
        "irq_affinity=housekeeping", "housekeeping_cpus=0", "",
        "[napi]", "devices=%s" % h.nic, "defer_hard_irqs=100", "gro_flush_timeout=auto",
        "irq_suspend_timeout=auto", "auto_services=memcached",
        "auto_interval=%d" % AUTO_INTERVAL, "recheck_interval=2", "",
        "[busy_poll_optin]", "services=memcached", "restart=true", "",
        "[gsim]", "irqs=nic:*", "delay_us=100", ""]))
    mark = h.log_size()
    log = h.profile(PROFILE)
    assert h.run("test", "-f", OPTIN)[0] == 0, log
    assert LIB in h.main_pid_maps("memcached"), "memcached not restarted with the preload\n" + log
    # re-checks and auto measurements, each looking memcached's processes
    # up; a restart of it makes the next lookup ask systemd again.  No load:
    # the lookups happen without, and a guest under TCG on a busy host is
    # slow enough already.
    time.sleep(2 * AUTO_INTERVAL)
    h.sh("systemctl restart memcached")
    time.sleep(AUTO_INTERVAL + 5)
    ok, _ = h.verify()
    h.off()
    assert h.run("test", "-e", OPTIN)[0] != 0
    assert LIB not in h.main_pid_maps("memcached"), "memcached still runs with the preload"
    said = h.log_since(mark)
    for failure in ("cannot ask systemd", "daemon-reload failed", "try-restart", "no such unit"):
        assert failure not in said, said
    events = recorded(h)
    probes = [e for e in events if e["irqtune"] and pyroute2_import_probe(e)]
    ours = [e for e in events if e["irqtune"] and not pyroute2_import_probe(e)]
    print("audit: %d fork/exec events in the daemon: %d from irqtune, %d from pyroute2's "
          "import, %d from TuneD" % (len(events), len(ours), len(probes),
                                     len(events) - len(ours) - len(probes)))
    for e in events:
        print("%s %s%s" % (e["event"], e["args"][:160], " [irqtune]" if e in ours else ""))
    for e in ours:
        print(json.dumps({k: v for k, v in e.items() if k != "stack"}))
    tail = h.sh("tail -n 80 /var/log/tuned/tuned.log")
    assert not ours, "irqtune forked or executed inside TuneD:\n%s\n%s" % (
        "\n".join(json.dumps(e) for e in ours), tail)
    print("verify passed: %s" % ok)
