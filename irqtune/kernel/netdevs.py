# SPDX-License-Identifier: GPL-2.0-or-later
"""What kind of network device a name is, from sysfs (through the kfs seam)."""

import os
import socket

from .kfs import KFS


def ifindex_of(ifname):
    """The device's ifindex now, None when there is no such device."""
    try:
        return socket.if_nametoindex(ifname)
    except OSError:
        return None


def interfaces():
    """{name: ifindex} of this network namespace, in ifindex order."""
    return {name: index for index, name in sorted(socket.if_nameindex())}


def ifname_of(ifindex):
    """The device's name now, None when no device has that ifindex (or
    none is given)."""
    try:
        return socket.if_indextoname(ifindex) if ifindex else None
    except OSError:
        return None


def is_virtual_netdev(ifname, kfs=KFS):
    """True for a net device no hardware backs (veth, bridge, bond, VLAN,
    lo, tun, ifb ...), which devices=* leaves out, as the stock net plugin
    does.

    /sys/class/net/<dev> of a NIC (PCI, virtio, USB, platform) resolves
    into the tree of its bus device and has a `device` link to it; a
    software device lives under /sys/devices/virtual/net/ and has no such
    link.  Either sign is taken as virtual; a name that is not in sysfs
    (gone meanwhile) is not.
    """
    path = kfs.net_path(ifname)
    if not os.path.lexists(path):
        return False
    real = os.path.realpath(path)
    virtual_root = os.path.realpath(kfs.sys_path("devices/virtual")) + os.sep
    return real.startswith(virtual_root) or not os.path.exists(os.path.join(path, "device"))


def default_selects_physical(expression):
    """Whether a devices= expression is the default * that the net device
    plugins narrow to physical NICs (explicit names and patterns reach
    virtual devices too)."""
    return (expression or "*").strip() == "*"


def netdev_names(kfs=KFS):
    """The net devices of this network namespace a device plugin can be
    given (all but lo), sorted."""
    return [d for d in kfs.listdir(kfs.sys_path("class/net")) if d != "lo"]


def net_namespace(pid="self", kfs=KFS):
    """The inode of a process's (or "thread-self"'s) network namespace,
    None when /proc/PID/ns/net cannot be read."""
    try:
        return os.stat(kfs.proc_path(pid, "ns/net")).st_ino
    except OSError:
        return None
