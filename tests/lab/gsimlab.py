# SPDX-License-Identifier: GPL-2.0-or-later
"""GSIM (kernel-patches/gsim) in a lab guest: its files, its statistics,
a paced UDP flood from the host, and what the kernel and the lockup
detectors report.  Shared by the generation-6 GSIM tests
(gen6/test_gsim.py, gen6/test_tuned_gsim_guest.py) and the generation-7
ones (gen7/test_gsim_tuned_off.py); every reader works on the guest
object `g` of support.labvm.
"""

import re
import sys

from support import labvm

DIR = "/proc/irq/sw_moderation"

STATS = "/sys/kernel/debug/irq_sw_moderation/stats"
STATS_COLUMNS = ["cpu", "irq_rate", "global_rate", "hardirq_pm", "delay_ns",
                 "irqs", "holds", "replays", "handovers", "releases"]
IRQ_COLUMNS = ["irq", "allowed", "holds"]
# The first version of the series (procfs stats, no per-IRQ table): read
# only so that its behaviour can be compared with the same tests.
V1_STATS = DIR + "/stats"
V1_STATS_COLUMNS = ["cpu", "irq_rate", "global_rate", "hardirq_pm", "delay_ns",
                    "irqs", "holds", "deferred", "releases"]

# Write one value to a procfs file and report the errno name (or OK).
WRITE_ERRNO = r"""
import errno, os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
try:
    os.write(fd, sys.argv[2].encode())
    print("OK")
except OSError as e:
    # ENOTSUP and EOPNOTSUPP are one value on Linux; the kernel means the latter
    print("EOPNOTSUPP" if e.errno == errno.EOPNOTSUPP else
          errno.errorcode.get(e.errno, str(e.errno)))
finally:
    os.close(fd)
"""

# Paced UDP sender, run on the host in the guest's namespace. An unpaced
# flood (labvm's flood()) keeps the TCG guest's NAPI polling all the time
# and raises only ~1000 interrupts/s; packets spaced out in time each find
# NAPI idle and raise their own interrupt, which is the load moderation is
# for. One flow keeps the traffic on one receive queue, so the unmoderated
# per-source rate is well above the 1/delay_us bound moderation imposes.
PACER = r"""
import json, socket, sys, time
src, dst, pps, seconds, flows = sys.argv[1], sys.argv[2], float(sys.argv[3]), \
    float(sys.argv[4]), int(sys.argv[5])
if not (0 < pps <= 200000 and 0 < seconds <= 60 and 0 < flows <= 64):
    sys.exit("bounds: 0 < pps <= 200000, 0 < seconds <= 60, 0 < flows <= 64")
socks = []
for _ in range(flows):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((src, 0))
    s.setblocking(False)
    socks.append(s)
payload = b"\xa5" * 64
interval = 1.0 / pps
start = time.monotonic()
end = start + seconds
due = start
sent = errors = i = 0
while True:
    now = time.monotonic()
    if now >= end:
        break
    if now < due:
        # Sleep rather than spin: the host is shared, and a sleeper gets
        # the CPU back sooner than a spinner under load.
        time.sleep(min(due - now, 0.001))
        continue
    try:
        socks[i % flows].sendto(payload, (dst, 9))
        sent += 1
    except OSError:
        errors += 1
    i += 1
    due += interval
    if due < now - 0.01:
        due = now
print(json.dumps({"sent": sent, "errors": errors,
                  "seconds": round(time.monotonic() - start, 3)}))
"""


def write_errno(g, path, value):
    rc, out = g.run(["python3", "-c", WRITE_ERRNO, path, str(value)])
    assert rc == 0, g.last_stderr
    return out.strip()


def rx_irqs(g):
    """{irq: total count} of the NIC's receive queue vectors."""
    return {irq: sum(counts) for name, (irq, counts) in g.nic_queue_interrupts().items()
            if name.startswith("input.")}


def parse_stats(text):
    """Per-CPU rows of the stats file as dicts (ints), header checked."""
    return parse_tables(text)[0]


def parse_tables(text):
    """(per-CPU rows, {irq: {"allowed", "holds"}}) of the stats file."""
    rows, irqs, header = [], {}, None
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        fields = line.split()
        if fields[0] in ("cpu", "irq"):
            header = fields
            assert header in (STATS_COLUMNS, V1_STATS_COLUMNS, IRQ_COLUMNS), text
            continue
        assert header is not None, text
        row = dict(zip(header, (int(x) for x in fields)))
        if header != IRQ_COLUMNS:
            rows.append(row)
        else:
            irqs[row["irq"]] = row
    assert rows, text
    return rows, irqs


def read_stats(g):
    rc, out = g.run(["cat", STATS])
    return out if rc == 0 else g.read_file(V1_STATS)


def irq_holds(g):
    """{irq: holds since boot} of every IRQ GSIM allowed or ever held."""
    return {irq: r["holds"] for irq, r in parse_tables(read_stats(g))[1].items()}


def holds_delta(before, after):
    return {irq: after.get(irq, 0) - before.get(irq, 0) for irq in set(before) | set(after)}


def pacer_argv(g, pps, seconds, flows):
    return [sys.executable, "-c", PACER, labvm.HOST_IP, labvm.GUEST_IP,
            str(pps), str(seconds), str(flows)]


def udp_noports(g):
    """Udp NoPorts of the guest: every flood packet (port 9, nobody
    listening) that made it through the NIC and the stack."""
    lines = [ln.split() for ln in g.read_file("/proc/net/snmp").splitlines()
             if ln.startswith("Udp:")]
    return int(lines[1][lines[0].index("NoPorts")])


def kernel_log(g):
    rc, out = g.run(["dmesg"])
    assert rc == 0, g.last_stderr
    return out.splitlines()


def kernel_problems(g, since=0):
    """The report lines of the guest's kernel log from line `since` on (all
    of it if the log wrapped since); the log from the first report on is
    printed, so that a failure shows the whole splat."""
    lines = kernel_log(g)
    if len(lines) >= since:
        lines = lines[since:]
    found = labvm.kernel_reports(lines)
    if found:
        print("kernel log from the first report on:\n  " +
              "\n  ".join(lines[found[0]:found[0] + 120]))
    return [lines[n] for n in found]


# Reports of the lockup detectors on the serial console (printed at
# KERN_EMERG/KERN_ERR, so the console's loglevel=4 keeps them): soft and
# hard lockups, RCU stalls, hung tasks.
LOCKUP_REPORT = re.compile(r"soft lockup|hard LOCKUP|detected stalls? on CPUs|"
                           r"self-detected stall|blocked for more than \d+ seconds")


def lockup_reports(g):
    return [ln for ln in g.console().splitlines() if LOCKUP_REPORT.search(ln)]


def lockup_detectors(g):
    """The lockup detectors' switches: soft lockup and hard lockup (the
    buddy detector reports through nmi_watchdog) both 1 when live."""
    live = {}
    for name in ("soft_watchdog", "nmi_watchdog", "watchdog_thresh"):
        rc, out = g.run(["cat", "/proc/sys/kernel/" + name])
        live[name] = int(out) if rc == 0 and out.strip().isdigit() else None
    return live


def assert_detectors_live(g):
    live = lockup_detectors(g)
    print("lockup detectors: %s" % live)
    assert live["soft_watchdog"] == 1 and live["nmi_watchdog"] == 1, \
        "lockup detectors not live, the test would see no lockup: %s" % live
