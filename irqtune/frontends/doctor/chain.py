# SPDX-License-Identifier: GPL-2.0-or-later
"""The links of the chain IRQ suspension needs, each judged from what the
kernel holds (fs/eventpoll.c, net/core/dev.c, 6.13+):

kernel   napi-set with irq-suspend-timeout, and EPIOCSPARAMS (busy poll
         compiled in);
napi     deferral on (defer-hard-irqs and gro-flush-timeout non-zero) and
         irq-suspend-timeout above gro-flush-timeout - otherwise the
         suspension timer never outlasts the deferral timer - and the
         values the active profile sets;
process  prefer_busy_poll on every epoll instance that watches sockets
         (suspension acts only for such contexts), through the preload or
         the program itself;
epoll    the sockets behind one instance receive from one NAPI: the
         instance busy polls one NAPI id at a time, the one its last ready
         socket came from, so two NAPIs take turns and neither stays
         suspended;
window   under the current traffic, busy polling takes a share of the
         packets (TcpExt:BusyPollRxPackets): the loop keeps finding events.
"""

from ...kernel.names import shown
from ...kernel.napi_attrs import DEFER_HARD_IRQS as DEFER, GRO_FLUSH_TIMEOUT as GRO
from ...kernel.napi_attrs import IRQ_SUSPEND_TIMEOUT as SUSPEND, THREADED
from ...kernel.netdevs import netdev_names
from ...kernel.values import format_duration_ns
from ...shared.epoll import LIBRARY_NAME
from .links import BROKEN, INFO, OK, UNKNOWN

# Busy polling must take at least this share of the rx packets in the
# window for the loop to count as engaged.  On the lab's virtio-net NIC an
# opted-in memcached with latency-suspend measured >= 10 %, with the same
# deferral but no suspension < 2.5 % (tests/lab/gen7/test_optin_effect.py).
MIN_BUSY_SHARE = 0.05

# The values IRQ suspension needs, which the chain judges.
SUSPENSION = (DEFER, GRO, SUSPEND)
PROFILE_FIX = ("set it in /etc/tuned/latency-suspend-variables.conf (suspend_nics=%s, "
               + ", ".join(a.option for a in SUSPENSION)
               + ") and run `tuned-adm profile latency-suspend`")
OPTIN_FIX = ("opt the service in: optin_services=%s and optin_restart=true in "
             "/etc/tuned/latency-suspend-variables.conf, then `tuned-adm profile "
             "latency-suspend` (a program outside systemd: start it with "
             "irqtune-busypoll-run)")
STEERING_FIX = ("give each epoll instance the sockets of one rx queue: one listener per "
                "queue (SO_REUSEPORT with SO_INCOMING_CPU or a reuseport BPF program "
                "choosing by NAPI id), or steer the flows to one queue (RSS indirection "
                "`ethtool -X`, ntuple rules `ethtool -N`)")


def check_kernel(report, caps, epoll_params):
    """epoll_params: (available, why not)."""
    if not caps.netdev_family or not caps.napi_set:
        report.add("kernel", "napi-set", BROKEN, caps.missing(DEFER.name) or "no napi-set",
                   "boot a kernel >= 6.13 (per-NAPI values and IRQ suspension)")
    else:
        report.add("kernel", "napi-set", OK, "per-NAPI values can be set (netdev napi-set)")
    why = caps.missing(SUSPEND.name) if caps.napi_set else None
    if caps.napi_set and why:
        report.add("kernel", SUSPEND.name, BROKEN, why, "boot a kernel >= %s" % SUSPEND.since)
    elif caps.napi_set:
        report.add("kernel", SUSPEND.name, OK, "napi-set accepts " + SUSPEND.name)
    available, reason = epoll_params
    if available:
        report.add("kernel", "EPIOCSPARAMS", OK, "epoll instances take busy-poll parameters")
    else:
        report.add("kernel", "EPIOCSPARAMS", BROKEN,
                   "EPIOCGPARAMS on an epoll fd fails (%s): the kernel lacks epoll busy-poll "
                   "parameters (Linux >= 6.9 with CONFIG_NET_RX_BUSY_POLL)" % reason,
                   "boot a kernel with CONFIG_NET_RX_BUSY_POLL (realtime kernels with "
                   "NETCONSOLE leave it out)")


def check_napi(report, napi, ifname, units, profile, judged=True):
    """Links for one NAPI (a napi-get dict); judged=False only lists it
    (a NAPI of the device no epoll instance of the target uses)."""
    subject = "NAPI %d (%s)" % (napi["id"], shown(ifname))
    defer, gro, suspend = (napi.get(a.name, 0) for a in SUSPENSION)
    held = " ".join("%s=%s" % (a.name, a.format(napi.get(a.name, 0))) for a in SUSPENSION)
    values = {a.option: napi.get(a.name, 0) for a in SUSPENSION}
    problem = None
    if not defer or not gro:
        problem = ("deferral is off (%s is 0): an idle epoll loop re-enables the IRQ at "
                   "once and suspension has nothing to hand over to"
                   % (DEFER.name if not defer else GRO.name))
    elif not suspend:
        problem = "%s is 0: this NAPI never suspends its IRQ" % SUSPEND.name
    elif suspend <= gro:
        problem = ("%s (%s) is not above %s (%s): the deferral timer fires first"
                   % (SUSPEND.name, format_duration_ns(suspend), GRO.name, format_duration_ns(gro)))
    if not judged:
        report.add("napi", subject, INFO, held + " (no socket of the target receives from it)",
                   **values)
    elif problem:
        report.add("napi", subject, BROKEN, "%s: %s" % (held, problem), PROFILE_FIX % shown(ifname),
                   **values)
    else:
        report.add("napi", subject, OK, "%s: deferral on, %s above %s"
                   % (held, SUSPEND.name, GRO.name), **values)
    _check_drift(report, subject, napi, ifname, units, profile, judged)


def _check_drift(report, subject, napi, ifname, units, profile, judged):
    covering = [u for u in units if u.covers(ifname)]
    profile_shown = shown(profile) if profile else profile
    if not profile:
        report.add("napi", subject, INFO, "no active TuneD profile: nothing to compare with")
        return
    if not covering:
        report.add("napi", subject, INFO, "no [napi] unit of the active profile (%s) covers %s%s"
                   % (profile_shown, shown(ifname), _unmatched(units)))
        return
    for unit in covering:
        if unit.queues is not None and napi.get("_queue") not in unit.queues:
            continue
        drift = {a: (napi.get(a, 0), v) for a, v in unit.expected().items()
                 if a != THREADED.name and napi.get(a, 0) != v}
        if not drift:
            report.add("napi", subject, OK, "holds what profile %s [%s] sets"
                       % (profile_shown, shown(unit.name)))
        else:
            text = "drift from profile %s [%s]: %s" % (profile_shown, shown(unit.name), ", ".join(
                "%s holds %s, the profile sets %s" % (a, h, w) for a, (h, w) in sorted(drift.items())))
            report.add("napi", subject, BROKEN if judged else INFO, text,
                       "`tuned-adm verify` names it; `tuned-adm profile %s` applies it again "
                       "(and find what changed it)" % shown(profile.split()[-1]),
                       drift={a: {"holds": h, "profile": w} for a, (h, w) in drift.items()})


def _unmatched(units):
    """Why no unit covers a device when a selector matches no device of
    TuneD's network namespace (a typo, a NIC named otherwise): what irqtune
    verify fails on too.  Those are the devices the selectors match, and
    /sys/class/net lists them even after the doctor entered a service's
    namespace: sysfs shows the namespace it was mounted in (the host's,
    TuneD's), and setns changes no mount."""
    tuneds = netdev_names()
    lost = ["[%s] devices=%s matches no network device" % (shown(u.name), shown(u.devices))
            for u in units if not any(u.covers(d) for d in tuneds)]
    return "; %s (devices in TuneD's network namespace: %s)" % (
        "; ".join(lost), ", ".join(shown(d) for d in tuneds) or "none") if lost else ""


def check_process(report, pid, comm, instances, preload, unit=None):
    """comm: the process's name as its owner set it."""
    subject = "pid %d (%s)" % (pid, shown(comm))
    params = [i.params for i in instances if i.params is not None]
    relevant = [i for i in instances if i.sockets]
    data = dict(preload_loaded=bool(preload), epoll_instances=len(instances),
                with_sockets=len(relevant))
    if not instances:
        report.add("process", subject, BROKEN, "has no epoll instance: IRQ suspension acts only "
                   "for epoll loops (EPIOCSPARAMS prefer_busy_poll)",
                   "serve with an epoll-based event loop", **data)
        return
    errors = [i for i in instances if i.error]
    if errors and not params:
        report.add("process", subject, UNKNOWN, "cannot read the epoll parameters: %s"
                   % errors[0].error, **data)
        return
    if not relevant:
        report.add("process", subject, UNKNOWN, "none of its %d epoll instances watches a socket"
                   % len(instances), **data)
        return
    off = [i for i in relevant if i.params is not None and not i.params.prefer_busy_poll]
    if off:
        fds = ", ".join(str(i.fd) for i in off)
        if preload:
            text = ("prefer_busy_poll is 0 on epoll fd %s although the preload is loaded: its "
                    "EPIOCSPARAMS failed (the service's log names why, e.g. a budget above 64 "
                    "without CAP_NET_ADMIN) or the program reset it" % fds)
            fix = "check IRQTUNE_PREFER_BUSY_POLL and IRQTUNE_BUSY_POLL_BUDGET of the service"
        else:
            text = ("prefer_busy_poll is 0 on epoll fd %s and the preload is not loaded: "
                    "no epoll instance asks for busy polling" % fds)
            fix = OPTIN_FIX % (shown(unit) if unit else "<unit>")
        report.add("process", subject, BROKEN, text, fix, **data)
        return
    p = relevant[0].params
    origin = ("the preload %s is loaded" % LIBRARY_NAME if preload
              else "the program sets them itself (the preload is not loaded)")
    report.add("process", subject, OK, "prefer_busy_poll=1 on its %d epoll instance(s) with "
               "sockets (busy_poll_usecs=%d, budget=%d); %s"
               % (len(relevant), p.busy_poll_usecs, p.busy_poll_budget, origin), **data)


def check_epoll(report, inst, comm, napi_devices):
    """napi_devices: {napi id: device name} (None: not in this namespace);
    comm: the process's name as its owner set it."""
    subject = "pid %d (%s) epoll fd %d" % (inst.pid, shown(comm), inst.fd)
    p = inst.params
    params = ("busy_poll_usecs=%d budget=%d prefer_busy_poll=%d"
              % (p.busy_poll_usecs, p.busy_poll_budget, p.prefer_busy_poll)) if p else inst.error
    ids = inst.napi_ids
    data = dict(params=p.__dict__ if p else None, sockets=len(inst.sockets), napi_ids=ids)
    names = ", ".join("%d (%s)" % (i, shown(napi_devices.get(i) or "?")) for i in ids)
    if not inst.sockets:
        report.add("epoll", subject, INFO, "%s; no sockets" % params, **data)
    elif inst.napi_unread:
        report.add("epoll", subject, INFO, "%s; %d socket(s), their NAPI ids not read: %s"
                   % (params, len(inst.sockets), inst.napi_unread), **data)
    elif not ids:
        report.add("epoll", subject, INFO, "%s; %d socket(s), none has received through a NAPI "
                   "yet" % (params, len(inst.sockets)), **data)
    elif len(ids) == 1:
        report.add("epoll", subject, OK, "%s; %d socket(s), all from NAPI %s"
                   % (params, len(inst.sockets), names), **data)
    else:
        report.add("epoll", subject, BROKEN, "%s; its %d sockets receive from %d NAPIs (%s): "
                   "the instance busy polls one NAPI at a time, the others keep raising "
                   "interrupts" % (params, len(inst.sockets), len(ids), names), STEERING_FIX,
                   **data)


def check_bounds(report, inspection, comm):
    """What the inspection's bounds left out of the target
    (irqtune.shared.epoll.Bounds), when they left out anything."""
    skipped = inspection.skipped()
    if skipped:
        b = inspection.bounds
        report.add("epoll", "pid %d (%s)" % (inspection.pid, shown(comm)), INFO, skipped,
                   epoll_instances=inspection.epoll_fds, watches=inspection.watches,
                   bounds=dict(instances=b.instances, watches=b.watches, sockets=b.sockets,
                               seconds=b.seconds))


def check_sockets_seen(report, instances_by_pid):
    """An UNKNOWN link when no socket of any target has met a NAPI yet, or
    their NAPI ids could not be read without disturbing them."""
    every = [i for insts in instances_by_pid.values() for i in insts]
    unread = next((i.napi_unread for i in every if i.sockets and i.napi_unread), None)
    if unread and not any(i.napi_ids for i in every):
        report.add("epoll", "sockets", UNKNOWN, "the NAPI ids of the target's sockets were "
                   "not read: " + unread, "name the devices to have all their NAPIs judged "
                   "(irqtune doctor --pid PID DEVICE...); whether an epoll instance mixes "
                   "NAPIs cannot be told without the ids")
    elif every and not any(i.napi_ids for i in every):
        report.add("epoll", "sockets", UNKNOWN, "no socket of the target has received through a "
                   "NAPI yet: nothing to follow to a device",
                   "run the doctor under traffic, or name the devices")


def check_window(report, window):
    for r in window.napis:
        report.add("window", "NAPI %d (%s)" % (r["napi"], shown(r["device"])), INFO,
                   "%s interrupts/s, %s rx packets/s%s" % (
                       "%.0f" % r["irq_s"] if r["irq"] is not None else "-",
                       "-" if r["rx_s"] is None else "%.0f" % r["rx_s"],
                       "" if r["irq"] is not None else " (no queue vector)"),
                   irq=r["irq"], interrupts_per_s=r["irq_s"], rx_packets_per_s=r["rx_s"])
    subject = "%.1f s window (%s)" % (window.seconds,
                                      ", ".join(shown(d) for d in sorted(window.devices)) or "-")
    data = dict(rx_packets_per_s=window.rx_s, busy_polled_per_s=window.busy_poll_s,
                busy_share=window.busy_share)
    if not window.rx_s:
        report.add("window", subject, UNKNOWN, "no packets received meanwhile: suspension only "
                   "shows under traffic", "run the doctor while the service has load", **data)
    elif window.busy_share < MIN_BUSY_SHARE:
        report.add("window", subject, BROKEN, "%.0f rx packets/s, busy polling took %.1f %% "
                   "(below %.0f %%): the epoll loop does not keep finding events, interrupts "
                   "carry the traffic" % (window.rx_s, 100 * window.busy_share,
                                          100 * MIN_BUSY_SHARE),
                   "check the links above; with all of them ok the load is too light for "
                   "suspension to matter", **data)
    else:
        report.add("window", subject, OK, "%.0f rx packets/s, busy polling took %.0f %% (counted "
                   "per network namespace)" % (window.rx_s, 100 * window.busy_share), **data)
