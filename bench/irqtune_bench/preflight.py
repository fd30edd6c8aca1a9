# SPDX-License-Identifier: GPL-2.0-or-later
"""`irqtune-bench check`: everything a run needs from the two hosts and
this machine, one line per finding with the command that fixes it.
`run` makes the same checks first and stops on a failed one.

A finding is (level, what, fix): FAIL when a run would fail or measure
something else than asked, note when it runs with less (no plots, cost on
CPU time), ok otherwise.  judge() decides from facts only - the server's
`irqtune-bench server-facts` answer and what the ssh logins and the
client's probe said - so each rule is tested on facts real hosts gave.
"""

import collections
import importlib.util

from .modes import MODE_AUTO, MODES

Finding = collections.namedtuple("Finding", "level what fix")
FAIL, NOTE, OK = "FAIL", "note", "ok"
KERNEL_FIX = ("boot a kernel with IRQ suspension (Linux 6.13 or later; RHEL 10's 6.12 only with "
              "the backport) on the server")
# napi-get attribute -> the mode value it carries
NAPI_VALUES = {"defer-hard-irqs": "defer_hard_irqs", "gro-flush-timeout": "gro_flush_timeout_ns",
               "irq-suspend-timeout": "irq_suspend_timeout_ns"}


def host_of(target):
    return target.rsplit("@", 1)[-1]


def ssh_login(role, target, uid, error):
    """The finding of logging in to a host: uid as `id -u` printed it, or
    error, ssh's complaint (its last lines) when it could not log in."""
    host = host_of(target)
    if error is None:
        if uid != "0":
            return Finding(FAIL, "ssh %s (%s): logs in as uid %s, not root" % (target, role, uid),
                           "name root: --%s root@%s" % (role, host))
        return Finding(OK, "ssh %s (%s): key login as root, host key known" % (target, role), None)
    if "Host key verification failed" in error or "HOST IDENTIFICATION HAS CHANGED" in error:
        return Finding(FAIL, "ssh %s (%s): the host key of %s is not known here (checking stays on)"
                       % (target, role, host),
                       "ssh-keyscan %s >> ~/.ssh/known_hosts after comparing the fingerprint "
                       "(ssh-keyscan %s | ssh-keygen -lf -) with `ssh-keygen -lf "
                       "/etc/ssh/ssh_host_ed25519_key.pub` on %s" % (host, host, host))
    if "Permission denied" in error:
        return Finding(FAIL, "ssh %s (%s): no key login" % (target, role),
                       "ssh-copy-id root@%s (sshd must allow root key logins: PermitRootLogin "
                       "prohibit-password)" % host)
    if "Connection refused" in error:
        return Finding(FAIL, "ssh %s (%s): no ssh server answers" % (target, role),
                       "systemctl enable --now sshd on %s" % host)
    if "Could not resolve" in error:
        return Finding(FAIL, "ssh %s (%s): the name %s does not resolve" % (target, role, host),
                       "use the host's address or add it to /etc/hosts")
    return Finding(FAIL, "ssh %s (%s): %s" % (target, role, error.strip().splitlines()[-1][-200:]
                                              if error.strip() else "failed"),
                   "try `ssh %s true` by hand" % target)


def modes_needing(modes, attr):
    """The modes among modes (names) whose value for a napi-get attribute
    is set (non-zero or measured), so the kernel must carry it."""
    key = NAPI_VALUES[attr]
    table = dict(MODES, auto=MODE_AUTO)
    # recommend's values are the doctor's: every one of them may be set
    return [m for m in modes if m == "recommend" or (m in table and table[m][key])]


def kernel(facts, modes):
    """The server kernel's NAPI interface against what the modes need."""
    k = facts["kernel"]
    if "napi_error" in facts:
        return [Finding(FAIL, "server kernel %s: napi-get on %s failed (%s); the bench reads every mode "
                        "back with the netdev family" % (k, facts["nic"], facts["napi_error"]), KERNEL_FIX)]
    out = []
    # one line for what one kernel upgrade mends (6.12 lacks all three)
    lacking = [a for a in NAPI_VALUES if a not in facts["napi_attrs"] and modes_needing(modes, a)]
    if lacking:
        need = [m for m in modes if any(m in modes_needing(modes, a) for a in lacking)]
        out.append(Finding(FAIL, "server kernel %s has no per-NAPI %s: modes %s cannot be set"
                           % (k, ", ".join(lacking), ",".join(need)), KERNEL_FIX))
    epoll = [m for m in modes if m in ("recommend", "auto") or (m in MODES and MODES[m]["epoll"])]
    if epoll and not facts["epoll_ioctl"]:
        out.append(Finding(FAIL, "server kernel %s has no epoll busy-poll parameters (EPIOCSPARAMS, Linux "
                           "6.9): modes %s cannot be set" % (k, ",".join(epoll)), KERNEL_FIX))
    if not out:
        out.append(Finding(OK, "server kernel %s: napi-get answers %s for every mode asked"
                           % (k, ", ".join(a for a in NAPI_VALUES if a in facts["napi_attrs"]) or "-"), None))
    return out


def services(facts, service):
    out = []
    if facts["tuned"] != "active":
        out.append(Finding(FAIL, "TuneD is not active on the server (systemctl: %s)" % (facts["tuned"] or "-"),
                           "systemctl enable --now tuned"))
    if not facts["profile"]:
        out.append(Finding(FAIL, "the server's TuneD has no latency-suspend profile (irqtune)",
                           "dnf install ./python3-irqtune-*.rpm ./tuned-plugins-irqtune-*.rpm "
                           "./tuned-profiles-irqtune-0*.rpm ./irqtune-preload-*.rpm on the server"))
    if facts["service"] != "active":
        out.append(Finding(FAIL, "%s is not active on the server (systemctl: %s)" % (service, facts["service"] or "-"),
                           "systemctl enable --now %s" % service))
    if not out:
        out.append(Finding(OK, "server: TuneD active with latency-suspend, %s active" % service, None))
    return out


def listener(facts, addr, port, service):
    """Whether memcached listens where the client will connect."""
    where = facts["listening"]
    if addr in where or "0.0.0.0" in where or "::" in where:
        return Finding(OK, "server: port %d listens on %s" % (port, ", ".join(where)), None)
    if not where:
        what = "nothing listens on port %d on the server" % port
    else:
        what = "port %d listens on %s only, not on --server-addr %s" % (port, ", ".join(where), addr)
    return Finding(FAIL, what, "let %s listen there: memcached -l %s -p %d (Fedora: OPTIONS in "
                   "/etc/sysconfig/memcached; Debian: /etc/memcached.conf), then systemctl restart %s"
                   % (service, addr, port, service))


def reach(facts, addr, port, error):
    """The client's probe of memcached (error: mcload's complaint, None
    when it was answered) with what may block the port."""
    if error is None:
        return Finding(OK, "client: memcached on %s:%d answers" % (addr, port), None)
    fw = facts["firewall"]
    if fw.get("firewalld") and not fw.get("open"):
        fix = ("firewall-cmd --add-port=%d/tcp && firewall-cmd --permanent --add-port=%d/tcp on the server"
               % (port, port))
        why = "firewalld on the server does not open %d/tcp" % port
    elif fw.get("nft_input"):
        fix = "accept tcp dport %d in the server's nftables input chain (nft list ruleset)" % port
        why = "the server's nftables has an input chain"
    else:
        fix = "check the route and any firewall between the client and %s" % addr
        why = "no firewall found on the server"
    return Finding(FAIL, "client: memcached on %s:%d does not answer (%s; %s)" % (addr, port, error[-200:], why),
                   fix)


def counters(facts):
    if facts["pmu"]:
        return Finding(OK, "server: hardware instruction counter available (perf)", None)
    return Finding(NOTE, "server: no hardware instruction counter (no PMU, as in most VMs): cost is judged "
                   "on CPU time per request", None)


def plots():
    if importlib.util.find_spec("matplotlib"):
        return Finding(OK, "here: matplotlib for the plots", None)
    return Finding(NOTE, "here: no matplotlib, so no plots", "dnf install python3-matplotlib")


def serving_queue(facts, cpu):
    """The rx queue whose interrupt is affine to cpu (the series' layout:
    memcached beside its queue's IRQ), or None."""
    irqs = facts.get("queue_irqs", {})
    for q in sorted(irqs, key=int):
        if facts["irq_cpus"].get(str(irqs[q])) == [cpu]:
            return int(q)
    return None


def steering(facts, cpu, landed):
    """The queue serving cpu and how the bench brings the connection to
    it; landed: the rx queue a probe connection arrived on, or None."""
    q = serving_queue(facts, cpu)
    if q is None:
        cpus = sorted({c for q2, irq in facts.get("queue_irqs", {}).items()
                       for c in facts["irq_cpus"].get(str(irq), [])})
        return Finding(FAIL, "no rx queue's interrupt is on CPU %d alone" % cpu,
                       "choose --memcached-cpu among the queues' CPUs %s, or set a queue's IRQ "
                       "affinity to CPU %d" % (",".join(map(str, cpus)) or "-", cpu))
    now = "" if landed is None else "; a connection from the client landed on rx queue %d now" % landed
    if facts.get("ntuple") in ("on", "off"):
        how = "an ntuple rule (restored afterwards)"
    else:
        how = ("source ports found to land there (reconnecting, SO_INCOMING_NAPI_ID; ntuple filters %s)"
               % (facts.get("ntuple") or "unknown"))
    return Finding(OK, "server: rx queue %d serves CPU %d; the bench steers the load there with %s%s"
                   % (q, cpu, how, now), None)


def port(facts, settings, client_error):
    """Where memcached listens and whether the client reaches it, but only
    the first thing to fix: a stopped memcached listens nowhere, and a
    port nothing listens on cannot answer."""
    if facts["service"] != "active":
        return []
    where = listener(facts, settings.server_addr, settings.port, settings.service)
    if where.level == FAIL:
        return [where]
    return [where, reach(facts, settings.server_addr, settings.port, client_error)]


def judge(facts, settings, client_error, landed):
    """Every server, client and local finding, in the order to fix them."""
    return (kernel(facts, settings.modes) + services(facts, settings.service)
            + port(facts, settings, client_error)
            + [steering(facts, settings.memcached_cpu, landed), counters(facts), plots()])


def lines(findings):
    return ["%-4s  %s%s" % (f.level, f.what, "\n      fix: %s" % f.fix if f.fix else "") for f in findings]


def failed(findings):
    return [f for f in findings if f.level == FAIL]
