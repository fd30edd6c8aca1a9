# SPDX-License-Identifier: GPL-2.0-or-later
"""Named network namespaces (`ip netns`, /run/netns/NAME): work done
inside one, the id one namespace knows another by, deleting a device.

A netlink socket belongs to the namespace its opener's thread was in, so
work inside a namespace runs on a thread of its own that enters it and
then ends: the caller's thread never changes namespace, whatever happens.
"""

import ctypes
import os
import socket
import struct
import threading

from .errors import IrqtuneError, NetlinkRequestError, describe_os_error, errno_error
from .names import shown
from .netlink.genl import (NLM_F_ACK, NLM_F_REQUEST, NLMSG_ERROR, ack_of, netlink_messages,
                           open_socket, parse_nlas)

NETNS_DIR = "/run/netns"
CLONE_NEWNET = 0x40000000
# rtnetlink namespace ids (include/uapi/linux/net_namespace.h)
RTM_DELLINK, RTM_NEWNSID, RTM_GETNSID = 17, 88, 90
NETNSA_NSID, NETNSA_FD = 1, 3
NSID_NOT_ASSIGNED = -1

_libc = ctypes.CDLL(None, use_errno=True)


def namespace_path(name):
    """/run/netns/NAME; IrqtuneError for a name `ip netns` cannot have."""
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise IrqtuneError("not a network namespace name")
    return os.path.join(NETNS_DIR, name)


def exists(name):
    return os.path.exists(namespace_path(name))


def inode(name):
    """The namespace's inode (what /proc/PID/ns/net shows), None when gone."""
    try:
        return os.stat(namespace_path(name)).st_ino
    except OSError:
        return None


def named_ids():
    """{id: name} of the namespaces under /run/netns that this thread's
    namespace knows by an id (a lender's queue-get names a lessee's
    namespace only by that id)."""
    try:
        names = sorted(os.listdir(NETNS_DIR))
    except OSError:
        return {}
    found = {}
    for name in names:
        try:
            fd = os.open(os.path.join(NETNS_DIR, name), os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            nsid = peer_id(fd)
        except OSError:
            nsid = None
        finally:
            os.close(fd)
        if nsid is not None:
            found.setdefault(nsid, name)
    return found


def device_name(name, ifindex):
    """The name of ifindex in the named namespace, None when it has none."""
    def find(_own):
        try:
            return socket.if_indextoname(ifindex)
        except OSError:
            return None
    return run_in(name, find)


def run_in(name, func):
    """func(own_namespace_fd) on a thread inside the named namespace;
    own_namespace_fd is an open fd of the caller's namespace (for the id
    the other one knows it by).  Returns func's result or raises its
    exception; OSError when the namespace cannot be entered."""
    result = {}
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)

    def enter_and_run():
        try:
            fd = os.open(namespace_path(name), os.O_RDONLY | os.O_CLOEXEC)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    code = ctypes.get_errno()
                    raise OSError(code, "cannot enter network namespace %s: %s"
                                  % (shown(name), describe_os_error(errno_error(code))))
            finally:
                os.close(fd)
            result["value"] = func(own)
        except BaseException as err:      # handed to the caller's thread
            result["error"] = err

    try:
        worker = threading.Thread(target=enter_and_run, name="irqtune-netns", daemon=True)
        worker.start()
        worker.join()
    finally:
        os.close(own)
    if "error" in result:
        raise result["error"]
    return result["value"]


def peer_id(namespace_fd, assign=False):
    """The id this thread's namespace knows the namespace of namespace_fd
    by (RTM_GETNSID), None when it has none; with assign, one is given to
    it first (RTM_NEWNSID: an id only names a namespace, it changes nothing
    in it; the kernel gives one itself whenever it shows a link's peer)."""
    fd_attr = struct.pack("=HHI", 8, NETNSA_FD, namespace_fd)
    request = struct.pack("=B3x", socket.AF_UNSPEC) + fd_attr
    nsid = _nsid(_rtnl(RTM_GETNSID, request, "reading a namespace id"))
    if nsid is None and assign:
        _rtnl(RTM_NEWNSID, request + struct.pack("=HHi", 8, NETNSA_NSID, NSID_NOT_ASSIGNED),
              "giving a namespace id")
        nsid = _nsid(_rtnl(RTM_GETNSID, request, "reading a namespace id"))
    return nsid


def delete_link(ifindex):
    """Unregister a device of this thread's namespace (RTM_DELLINK)."""
    _rtnl(RTM_DELLINK, struct.pack("=BxHiII", socket.AF_UNSPEC, 0, ifindex, 0, 0),
          "deleting ifindex %d" % ifindex)


def _nsid(replies):
    for kind, msg in replies:
        if kind == RTM_NEWNSID:
            values = dict(parse_nlas(msg[20:]))
            if NETNSA_NSID in values:
                nsid = struct.unpack("=i", values[NETNSA_NSID])[0]
                return nsid if nsid >= 0 else None
    return None


def _rtnl(msg_type, payload, what):
    """One acked rtnetlink request on a socket of this thread's namespace:
    [(type, message bytes)] of its replies; NetlinkRequestError when refused."""
    replies = []
    with open_socket(socket.NETLINK_ROUTE) as sock:
        sock.send(struct.pack("=IHHII", 16 + len(payload), msg_type, NLM_F_REQUEST | NLM_F_ACK,
                              1, 0) + payload)
        while True:
            for kind, flags, _seq, msg in netlink_messages(sock.recv(65536)):
                if kind != NLMSG_ERROR:
                    replies.append((kind, msg))
                    continue
                code, extack = ack_of(kind, flags, msg)
                if code:
                    raise NetlinkRequestError(what, code, extack)
                return replies
