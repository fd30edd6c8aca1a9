# SPDX-License-Identifier: GPL-2.0-or-later
"""`irqtune doctor`: why IRQ suspension does or does not engage.

Walks the chain suspension needs (irqtune.frontends.doctor.chain) for a service's
processes and the NICs their sockets receive from, and ends with a
measured window under the current traffic, during which the service's
epoll waits are recorded: the values that fit its batches
(irqtune.frontends.doctor.recommend).  Read-only: the target's epoll fds are
duplicated and closed again, its sockets only where that cannot change
their classification (irqtune.shared.epoll), nothing is set, the target
keeps running.
"""

import errno
import json
import os
import socket
import sys
import time

from ...kernel import caps as kernel_caps
from ...kernel.errors import IrqtuneError, NetlinkRequestError
from ...kernel.kfs import KFS
from ...kernel.names import LINE_MAX, shown
from ...kernel.netdevs import ifname_of
from ...kernel.netlink import netdev
from ...features.zerocopy import held_leases
from ...shared import counters, epoll
from .. import activeprofile
from . import chain, recommend, targets
from .links import EXIT_CANNOT_TELL, Report, format_text  # noqa: F401


def diagnose(pids=(), devices=(), seconds=3.0, unit=None, kfs=KFS):
    """Report of the chain for pids (may be empty) and devices (default:
    the devices the pids' sockets receive from, or every device with NAPIs)."""
    report = Report()
    if pids:
        targets.enter_net_namespace_of(pids[0], kfs)
    caps = kernel_caps.detect_napi_capabilities()
    chain.check_kernel(report, caps, epoll.kernel_has_epoll_params())

    instances = {}
    for pid in pids:
        try:
            inspection = epoll.inspect_process(pid, kfs)
        except IrqtuneError as err:
            report.add("process", "pid %d" % pid, "unknown", str(err))
            continue
        instances[pid] = inspection.instances
        chain.check_bounds(report, inspection, targets.comm(pid, kfs))
    napi_ids = sorted({n for insts in instances.values() for i in insts for n in i.napi_ids})
    # sockets left unread (irqtune.shared.epoll): any NAPI of the named
    # devices may be theirs, so each is judged
    unread = any(i.napi_unread for insts in instances.values() for i in insts)

    napis = {}          # id: napi-get dict
    with netdev.NapiFamily() as nl:
        for nid in napi_ids:
            try:
                napis[nid] = nl.napi(nid)
            except NetlinkRequestError as err:
                if err.errno != errno.ENOENT:
                    raise
        dev_names = {n["id"]: ifname_of(n.get("ifindex")) for n in napis.values()}
        scope = list(devices) or sorted({d for d in dev_names.values() if d})
        if not scope and not pids:
            scope = sorted({ifname_of(n.get("ifindex")) for n in nl.all_napis()} - {None})
        device_napis = {}
        for dev in scope:
            try:
                device_napis[dev] = nl.napis(socket.if_nametoindex(dev))
            except OSError:
                report.add("napi", shown(dev), "unknown",
                           "no such device in this network namespace")
    with netdev.QueueFamily() as ql:
        for dev, found in device_napis.items():
            try:
                queue_of = {n: q for q, n in ql.rx_queue_napis(socket.if_nametoindex(dev)).items()}
            except (OSError, IrqtuneError):
                queue_of = {}
            for n in found:
                n["_queue"] = queue_of.get(n["id"])
                dev_names[n["id"]] = dev

    profile, units, skipped = activeprofile.napi_units()
    for why in skipped:
        report.add("napi", "profile %s" % shown(profile), "info", shown(why, LINE_MAX))
    for dev in scope:
        for napi in sorted(device_napis.get(dev, []), key=lambda n: n["id"]):
            judged = not pids or unread or napi["id"] in napi_ids
            chain.check_napi(report, napi, dev, units, profile, judged)
        if dev in device_napis and not device_napis[dev]:
            report.add("napi", shown(dev), "broken", "has no NAPI (link down, or a driver "
                       "without NAPI such as veth with GRO off)", "bring it up / `ethtool -K %s "
                       "gro on` for veth" % shown(dev))
    _leases(report, {dev: socket.if_nametoindex(dev) for dev in device_napis})
    for nid in napi_ids:
        if nid not in dev_names:
            report.add("napi", "NAPI %d" % nid, "unknown", "a socket received from it, but "
                       "napi-get does not know it here (another network namespace, or gone)")

    for pid in instances:       # the pids whose epoll instances could be read
        comm = targets.comm(pid, kfs)
        chain.check_process(report, pid, comm, instances[pid], epoll.preload_loaded(pid, kfs),
                            unit)
        for inst in instances[pid]:
            chain.check_epoll(report, inst, comm, dev_names)
    if pids:
        chain.check_sockets_seen(report, instances)

    _window(report, pids, [d for d in scope if d in device_napis] if scope else None, seconds,
            unit, kfs)
    return report


def _leases(report, devices):
    """An info link per rx queue of devices leased to a container (Linux 7.1):
    its NAPI serves the container's sockets, not this host's."""
    try:
        held = held_leases(devices)
    except (OSError, IrqtuneError):
        return
    for lease in held:
        report.add("napi", shown(lease.device), "info", "leased: " + shown(lease.describe(), LINE_MAX))


def _window(report, pids, devices, seconds, unit, kfs):
    """The counters' window over devices (None: no window) and, for pids,
    the recording of their epoll waits over the same seconds."""
    subject = shown(unit) if unit else ", ".join("pid %d (%s)" % (p, shown(targets.comm(p, kfs)))
                                                 for p in pids)
    started = recommend.start(pids, kfs) if pids else None
    try:
        if devices is not None:
            chain.check_window(report, counters.measure(devices, seconds, kfs))
        elif started is not None:
            time.sleep(seconds)
    except BaseException:
        if started is not None and not isinstance(started, str):
            started.close()
        raise
    if started is not None:
        recommend.check_service(report, started, subject)


def resolve_targets(service=None, pid=None):
    """[pid] for the command line's --service / --pid; IrqtuneError naming
    the bad input."""
    if service is None and pid is None:
        return []
    if os.geteuid() != 0:
        raise IrqtuneError("%s: reading another process's epoll instances needs root "
                           "(pidfd_getfd); run irqtune doctor as root"
                           % ("--service " + shown(service, quote=True) if service
                              else "--pid %d" % pid))
    pids = targets.service_pids(service) if service else targets.check_pid(pid)
    epoll.check_pidfd_getfd()
    return pids


def command(service, pid, devices, seconds, as_json=False):
    """The command: exit 0 engaged, 1 not, 2 could not tell (bad input too)."""
    try:
        pids = resolve_targets(service, pid)
        report = diagnose(pids, devices, seconds, unit=service)
    except IrqtuneError as err:
        print("irqtune doctor: %s" % shown(err, LINE_MAX), file=sys.stderr)
        return EXIT_CANNOT_TELL
    if as_json:
        print(json.dumps(report.as_dict(), indent=1, sort_keys=True))
    else:
        print(format_text(report))
    return report.verdict()[0]
