# SPDX-License-Identifier: GPL-2.0-or-later
"""Network namespaces with veth NAPIs, for the suites that need real ones.

Everything a test creates lives in a namespace of its own, so the host's
NICs are never seen, let alone tuned.  NAPI values are read and written
with the raw netlink reader (support.rawnapi), never with the library
under test.
"""

import contextlib
import ctypes
import os
import subprocess

from support.commands import run
from support.rawnapi import RawGenl

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


@contextlib.contextmanager
def entered(name):
    """Run the calling thread inside namespace `name` (sockets keep it after)."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open("/run/netns/" + name, os.O_RDONLY)
    try:
        if _libc.setns(target, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns")
        yield
    finally:
        _libc.setns(own, CLONE_NEWNET)
        os.close(own)
        os.close(target)


class NetNs:
    def __init__(self, name):
        self.name = name
        run("ip", "netns", "del", name, check=False)
        run("ip", "netns", "add", name)
        self.exec("ip", "link", "set", "lo", "up")

    def exec(self, *argv, check=True):
        return run("ip", "netns", "exec", self.name, *argv, check=check)

    def popen(self, *argv, **kwargs):
        return subprocess.Popen(("ip", "netns", "exec", self.name) + argv, **kwargs)

    def entered(self):
        """Run the calling thread inside the namespace (sockets keep it after)."""
        return entered(self.name)

    def add_veth(self, name, queues=2, up=True):
        """veth pair name/<name>p with GRO on both ends (GRO makes veth NAPIs)."""
        self.exec("ip", "link", "add", name, "numrxqueues", str(queues),
                  "numtxqueues", str(queues), "type", "veth", "peer", name + "p",
                  "numrxqueues", str(queues), "numtxqueues", str(queues))
        if up:
            self.up(name)

    def up(self, name):
        for dev in (name, name + "p"):
            self.exec("ip", "link", "set", dev, "up")
            self.exec("ethtool", "-K", dev, "gro", "on")

    def delete(self):
        run("ip", "netns", "del", self.name, check=False)

    # NAPI values as the kernel holds them, read without the library

    def napis(self, dev):
        with self.entered():
            nl = RawGenl()
            try:
                return nl.napis(dev)
            finally:
                nl.close()

    def set_napis(self, devs, values):
        with self.entered():
            nl = RawGenl()
            try:
                for dev in devs:
                    for napi in nl.napis(dev):
                        nl.set(napi["id"], **values)
            finally:
                nl.close()

    def napis_have(self, devs, values):
        """True when every NAPI of every device carries values (and there are NAPIs)."""
        for dev in devs:
            found = self.napis(dev)
            if not found or any(n.get(k) != v for n in found for k, v in values.items()):
                return False
        return True


def veth_between(server, client, devs, addrs, queues=None):
    """Join namespaces server and client (NetNs) with a veth pair, devs =
    (server's end, client's end), holding addrs (their IPv4 addresses in
    one /24), both up.  GRO goes on at the server's end, where veth then
    registers its NAPIs (one per rx queue), and TSO off at the client's:
    veth passes a TSO sender's packets around the NAPI
    (veth_skb_is_eligible_for_gro), so only then do the server's sockets
    receive through it and get a NAPI id.  queues: rx and tx queues a side
    (veth's default: one)."""
    server_dev, client_dev = devs
    sizes = ("numrxqueues", str(queues), "numtxqueues", str(queues)) if queues else ()
    run("ip", "link", "add", server_dev, *sizes, "netns", server.name, "type", "veth",
        "peer", "name", client_dev, *sizes, "netns", client.name)
    for ns, dev, addr in ((server, server_dev, addrs[0]), (client, client_dev, addrs[1])):
        ns.exec("ip", "addr", "add", addr + "/24", "dev", dev)
        ns.exec("ip", "link", "set", dev, "up")
    server.exec("ethtool", "-K", server_dev, "gro", "on")
    client.exec("ethtool", "-K", client_dev, "tso", "off")


# The end of a `python3 -c` server for the netlink suites: one epoll loop
# that accepts and drains connections on ADDR:PORT, after printing READY;
# the script before it imports select and socket and sets the three.
EPOLL_SERVER_LOOP = r"""
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((ADDR, PORT))
ls.listen()
ep = select.epoll()
ep.register(ls.fileno(), select.EPOLLIN)
conns = {}
print(*READY, flush=True)
while True:
    for fd, _ in ep.poll(1.0):
        if fd == ls.fileno():
            c, _ = ls.accept()
            conns[c.fileno()] = c
            ep.register(c.fileno(), select.EPOLLIN)
        elif not conns[fd].recv(65536):
            ep.unregister(fd)
            conns.pop(fd).close()
"""
