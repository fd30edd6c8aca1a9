# SPDX-License-Identifier: GPL-2.0-or-later
"""Whether duplicating another process's socket would change how its
packets are classified.

A socket's only reader of SO_INCOMING_NAPI_ID is getsockopt() on a file
of the socket, and the only way to another process's is pidfd_getfd().
Every fd it installs goes through the kernel's __receive_sock()
(net/core/sock.c), which writes the caller's net_cls classid and net_prio
index into the socket (sock_update_classid, sock_update_netprioidx): the
target's packets would then be classified as the doctor's (HTB classes,
priority maps, iptables -m cgroup).  Epoll fds are not sockets and are
left as they are.

The write changes nothing when the caller's values are the socket's.
That is known when neither controller can tell two tasks apart: net_cls
and net_prio have no cgroup v2 interface, so while they are bound to the
v2 hierarchy (hierarchy 0 in /proc/cgroups) every task uses the root
cgroup's values, and a v1 hierarchy holding only its root cgroup gives
one value too.  A socket made under a cgroup removed since carries the
root values as well: moving a task re-tags the sockets of its fd table
(net_prio_attach, cgrp_attach of net_cls) and a cgroup is only removed
once empty.  Any other state (a v1 hierarchy with child cgroups, as
container runtimes on cgroup v1 make) leaves the sockets alone.
"""

from ..kernel.kfs import KFS

CONTROLLERS = ("net_cls", "net_prio")


def parse_cgroups(text):
    """{controller: (hierarchy id, cgroups, enabled)} of /proc/cgroups."""
    found = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 4 and not line.startswith("#"):
            found[fields[0]] = tuple(int(f) for f in fields[1:])
    return found


def why_sockets_stay(cgroups_text):
    """None when duplicating a socket rewrites the values it holds, else
    the sentence saying which controller could tell them apart."""
    busy = []
    for name, (hierarchy, count, _enabled) in sorted(parse_cgroups(cgroups_text).items()):
        if name in CONTROLLERS and hierarchy != 0 and count > 1:
            busy.append("%s (cgroup v1 hierarchy %d holds %d cgroups)" % (name, hierarchy, count))
    if not busy:
        return None
    return ("%s in use: reading a socket's NAPI id means duplicating it (pidfd_getfd), "
            "which would re-tag it with the doctor's net_cls/net_prio values (the kernel's "
            "__receive_sock)" % " and ".join(busy))


def socket_dup_disturbs(kfs=KFS):
    """why_sockets_stay() for this host; None without /proc/cgroups (a
    kernel without cgroups keeps no classification in sockets)."""
    text = kfs.read_optional(kfs.proc_path("cgroups"))
    return why_sockets_stay(text) if text is not None else None
