# SPDX-License-Identifier: GPL-2.0-or-later
"""`irqtune metrics`: per-NAPI metrics in the OpenMetrics text format.

One producer serves both monitoring stacks RHEL users run:

- Prometheus, through node_exporter's textfile collector: ``--output
  FILE.prom`` writes the Prometheus text format (what that collector
  parses) atomically (a temporary file in the same directory, fsync,
  rename), from a systemd timer;
- PCP, through pmdaopenmetrics: its config.d holds an executable that runs
  ``irqtune metrics``, so PCP shows the same metric names, labels (as
  instances) and help text as Prometheus, without a PMDA of our own to keep
  in step.

Names follow Prometheus' rules: ``irqtune_`` prefix, base units in the
name (``_seconds``), counters end in ``_total``.  Labels: ``device``,
``napi`` (the NAPI id), ``netns`` (the network namespace the values belong
to: "init" for PID 1's, its name under /run/netns, else its inode).  Everything is read:
netdev napi-get and qstats-get, /proc/interrupts, /proc/net/netstat and
the active TuneD profile's files, and (under systemd) the mapped
libraries of the services the profile opts in to busy polling.
"""

import hashlib
import os
import sys
from dataclasses import dataclass, field

from ..kernel import files
from ..kernel.errors import IrqtuneError, describe_os_error
from ..kernel.kfs import KFS
from ..kernel.napi_attrs import NAPI_ATTRS
from ..kernel.names import LINE_MAX, shown
from ..kernel.netdevs import ifindex_of, ifname_of, net_namespace
from ..kernel.netlink import netdev
from ..features.zerocopy import held_leases
from ..shared import counters, epoll, systemd
from . import activeprofile

STDOUT = "-"            # --output: standard output, as without --output


@dataclass
class Family:
    name: str            # without _total for counters
    kind: str            # "gauge" or "counter"
    help: str
    unit: str = ""
    samples: list = field(default_factory=list)    # [(labels dict, value)]

    def add(self, value, **labels):
        self.samples.append((labels, value))


def _families():
    """{name: Family} of every metric, empty, in the order they are printed:
    first a gauge per NAPI attribute (irqtune.kernel.napi_attrs)."""
    return {name: Family(name, kind, text, unit) for name, kind, unit, text in tuple(
            (a.metric, "gauge", a.metric_unit, a.help)
            for a in NAPI_ATTRS) + (
            ("irqtune_napi_interrupts", "counter", "",
             "interrupts of the NAPI's queue vector, all CPUs (/proc/interrupts)"),
            ("irqtune_napi_rx_packets", "counter", "",
             "packets received on the NAPI's rx queue (netdev qstats)"),
            ("irqtune_device_rx_packets", "counter", "",
             "packets the device received (/proc/net/dev)"),
            ("irqtune_busy_poll_rx_packets", "counter", "",
             "packets taken by busy polling in the network namespace "
             "(TcpExt:BusyPollRxPackets; the kernel counts them per namespace only)"),
            ("irqtune_napi_profile_match", "gauge", "",
             "1 when the NAPI holds what the active TuneD profile's [napi] unit sets, "
             "0 on drift; absent when no unit covers the NAPI"),
            ("irqtune_unit_verified", "gauge", "",
             "1 when every NAPI a [napi] unit of the active TuneD profile covers holds "
             "its values (tuned-adm verify's judgement for that unit), else 0"),
            ("irqtune_optin_preload_loaded", "gauge", "",
             "1 when the main process of a service the active profile's busy_poll_optin "
             "unit opts in has libirqtune-busypoll.so loaded, 0 when it runs without "
             "(restart it); absent when the service is not running"))}


def netns_label(kfs=KFS):
    """The name of this thread's network namespace under /run/netns, "init"
    for the one of PID 1, else its inode."""
    ino = net_namespace("thread-self", kfs)
    if ino is None:
        return "?"
    if net_namespace(1, kfs) == ino:
        return "init"
    for name in sorted(kfs.listdir("/run/netns")):
        try:
            if os.stat(os.path.join("/run/netns", name)).st_ino == ino:
                return name
        except OSError:
            continue
    return "net:[%d]" % ino


def collect(devices=(), kfs=KFS, etc="/etc/tuned", bus=None):
    """[Family] of the devices' NAPIs (default: every device with NAPIs);
    the irqtune command has refused names of no device."""
    fam = _families()
    netns = netns_label(kfs)
    with netdev.NapiFamily() as nl:
        napis = nl.all_napis()
    by_dev = {}
    for n in napis:
        name = ifname_of(n["ifindex"])
        if name is not None:
            by_dev.setdefault(name, []).append(n)
    if devices:
        by_dev = {d: by_dev.get(d, []) for d in devices}
    profile, units, _skipped = activeprofile.napi_units(etc)
    unit_ok = {}
    rx_dev = counters.device_rx_packets(kfs)
    for dev in sorted(by_dev):
        try:
            counted = {c.napi_id: c for c in counters.sample(dev, kfs)}
        except (OSError, IrqtuneError):
            counted = {}
        if dev in rx_dev:
            fam["irqtune_device_rx_packets"].add(rx_dev[dev], device=dev, netns=netns)
        for n in sorted(by_dev[dev], key=lambda n: n["id"]):
            labels = dict(device=dev, napi=str(n["id"]), netns=netns)
            for a in NAPI_ATTRS:
                fam[a.metric].add(a.metric_value(n.get(a.name, 0)), **labels)
            c = counted.get(n["id"])
            if c is not None and c.irq is not None:
                fam["irqtune_napi_interrupts"].add(c.interrupts, irq=str(c.irq), **labels)
            if c is not None and c.rx_packets is not None:
                fam["irqtune_napi_rx_packets"].add(c.rx_packets, **labels)
            queue = c.queue if c is not None else None
            for unit in units:
                if not unit.covers(dev, kfs) or (unit.queues is not None and queue not in unit.queues):
                    continue
                match = all(n.get(a, 0) == v for a, v in unit.expected().items())
                fam["irqtune_napi_profile_match"].add(int(match), profile=profile,
                                                      unit=unit.name, **labels)
                unit_ok[unit.name] = unit_ok.get(unit.name, True) and match
    for unit in units:
        if unit.name in unit_ok:
            fam["irqtune_unit_verified"].add(int(unit_ok[unit.name]), profile=profile,
                                             unit=unit.name, netns=netns)
    fam["irqtune_busy_poll_rx_packets"].add(counters.busy_poll_rx_packets(kfs), netns=netns)
    _optin_state(fam["irqtune_optin_preload_loaded"], etc, kfs, bus)
    _lease_state(fam, {dev: ifindex_of(dev) for dev in by_dev}, netns)
    return list(fam.values())


def _lease_state(fam, devices, netns):
    """irqtune_queue_lease_info: one sample per leased rx queue (Linux 7.1),
    whoever made the lease; the lessee by name where /run/netns names it.
    The family is there only when a queue is leased."""
    try:
        held = held_leases({dev: i for dev, i in devices.items() if i is not None})
    except (OSError, IrqtuneError):
        return
    if not held:
        return
    family = fam["irqtune_queue_lease_info"] = Family(
        "irqtune_queue_lease_info", "gauge",
        "1 for each rx queue leased to a container's netkit device: the queue, its NAPI, "
        "the lessee's namespace, device and rx queue")
    for lease in held:
        family.add(1, device=lease.device, queue=str(lease.queue), napi=str(lease.napi or ""),
                   netns=netns, lessee_netns=lease.netns or "id %s" % lease.netns_id,
                   lessee=lease.lessee or "ifindex %d" % lease.lessee_ifindex,
                   lessee_queue=str(lease.lessee_queue))


def _optin_state(family, etc, kfs, bus):
    """Preload state of each opted-in service's main process (systemd only).
    The library is recognised by its name wherever it was loaded from, as
    the doctor does."""
    if bus is None and not systemd.systemd_running():
        return
    ctl = systemd.Systemctl(bus)
    profile, units = activeprofile.optin_units(etc)
    for section, services in units:
        for service in services:
            pid = ctl.unit_property(service, "MainPID")
            if not pid:
                continue
            loaded = epoll.preload_loaded(pid, kfs)
            if loaded is not None:
                family.add(int(loaded), profile=profile, unit=section, service=service)


# Label values are whole up to NAME_MAX: a namespace's name under
# /run/netns, a unit name.
LABEL_MAX = 256


def label_value(value):
    """A label value someone chose (a device, a namespace, a unit) as the
    exposition carries it: through shown() - escaped, and two names never
    alike, so two devices are never one series, which Prometheus refuses -
    then in the format's own escapes (\\ and \"; shown() leaves no newline).
    A longer value is cut, with a digest of the whole to keep it apart."""
    text = value if isinstance(value, str) else str(value)
    out = shown(text, LABEL_MAX)
    if len(text) > LABEL_MAX:
        whole = text.encode("utf-8", "surrogateescape")
        out += " sha256:" + hashlib.sha256(whole).hexdigest()[:16]
    return out.replace("\\", "\\\\").replace('"', '\\"')


def render(families, openmetrics=True):
    """The exposition text: OpenMetrics 1.0 (openmetrics=True, ends in
    "# EOF") or the Prometheus text format 0.0.4 (node_exporter's textfile
    collector).  Families without samples are left out."""
    out = []
    for f in families:
        if not f.samples:
            continue
        sample_name = f.name + "_total" if f.kind == "counter" else f.name
        family_name = f.name if openmetrics else sample_name
        out.append("# HELP %s %s" % (family_name, f.help))
        out.append("# TYPE %s %s" % (family_name, f.kind))
        if f.unit and openmetrics:
            out.append("# UNIT %s %s" % (family_name, f.unit))
        for labels, value in f.samples:
            text = ",".join('%s="%s"' % (k, label_value(v)) for k, v in sorted(labels.items()))
            number = repr(value) if isinstance(value, float) and not value.is_integer() \
                else "%d" % value
            out.append("%s{%s} %s" % (sample_name, text, number))
    if openmetrics:
        out.append("# EOF")
    return "\n".join(out) + "\n"


def write_atomically(path, text):
    """path replaced in one rename (files.replace_file): readers
    (node_exporter) never see half a file, and a device, FIFO or link at
    path is refused, not replaced.  The file is world-readable, as metrics
    are.  IrqtuneError naming path when it cannot be written."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        files.replace_file(path, text, 0o644)
    except FileNotFoundError:
        raise IrqtuneError("cannot write %s: directory %s does not exist (node_exporter's "
                           "textfile directory differs by distribution; see irqtune(8))"
                           % (path, directory)) from None
    except files.NotRegularFile as err:
        raise IrqtuneError("cannot write %s: %s (standard output: --output -)" % (path, err)) \
            from None
    except OSError as err:
        raise IrqtuneError("cannot write %s: %s"
                           % (path, describe_os_error(err, with_path=False))) from None


def command(devices, output=None, fmt=None):
    """The command: exit 0, or 1 with one line on stderr."""
    try:
        fmt = fmt or ("prometheus" if (output or "").endswith(".prom") else "openmetrics")
        text = render(collect(devices), openmetrics=fmt == "openmetrics")
        if output and output != STDOUT:
            write_atomically(output, text)
        else:
            sys.stdout.write(text)
    except (IrqtuneError, OSError) as err:
        print("irqtune metrics: %s" % shown(describe_os_error(err), LINE_MAX), file=sys.stderr)
        return 1
    return 0
