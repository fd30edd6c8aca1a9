# SPDX-License-Identifier: GPL-2.0-or-later
"""Records the kernel's raw replies to queue leases for the unit tests.

    PYTHONPATH=/irqtune python3 /irqtune/tests/unit/kernel/netdev_replies/record_leases.py NIC

Run as root in a lab guest of Linux 7.1+ with netdevsim and netkit (the
7.2 lab: tests/lab/README.md); NIC is the guest's virtio-net device (a
lender without queue management ops).  It makes netdevsim 79 (2 channels),
namespace irqtune-rec with netkit pairs and a veth, leases and provokes
each refusal the kernel gives, records every reply through the library's
record hook, removes what it made and prints one JSON document
{name: recording} (the layout of ethtool_replies/: hex receive buffers,
kernel release, source).  tests/unit/kernel/test_queue_lease_netlink.py reads
the files it is split into.
"""

import json
import os
import socket
import subprocess
import sys
import time

from irqtune.kernel import netns
from irqtune.kernel.errors import NetlinkRequestError
from irqtune.kernel.netlink.ethtool_rx import RxConfigFamily
from irqtune.kernel.netlink.netdev import CMD_QUEUE_GET, LeaseFamily

NS = "irqtune-rec"
NSIM_ID = 79
SOURCE = ("irqtune 7.2 lab guest (QEMU TCG): netdevsim %d (2 combined channels) lending, "
          "netkit peers and a veth in namespace %s" % (NSIM_ID, NS))


def sh(script):
    subprocess.run(["sh", "-ec", script], check=True)


def recorded(family, name, out, call, **facts):
    buffers = []
    family.record = lambda cmd, bufs: buffers.extend(bufs)
    error = None
    try:
        value = call(family)
    except NetlinkRequestError as err:
        error, value = {"errno": err.errno, "extack": err.extack.message}, None
    out[name] = {"source": SOURCE, "kernel": os.uname().release, "error": error,
                 "result": repr(value), **facts, "replies": [b.hex() for b in buffers]}
    return value


def in_ns(name, out, call, **facts):
    def work(own):
        nsid = netns.peer_id(own, assign=True)
        with LeaseFamily() as fam:
            return recorded(fam, name, out, lambda f: call(f, nsid), netns_id=nsid, **facts)
    return netns.run_in(NS, work)


def ifindex_in_ns(device):
    return netns.run_in(NS, lambda _own: socket.if_nametoindex(device))


def main(nic):
    out = {}
    sh("echo '%d 1 2' > /sys/bus/netdevsim/new_device" % NSIM_ID)
    path = "/sys/bus/netdevsim/devices/netdevsim%d/net" % NSIM_ID
    for _ in range(100):
        if os.path.isdir(path) and os.listdir(path):
            break
        time.sleep(0.1)
    subprocess.run(["udevadm", "settle"])
    nsim = os.listdir(path)[0]
    try:
        sh("""ip link set {nsim} up && ethtool -L {nsim} combined 2
              ip netns add {ns}
              ip link add rec-nkh type netkit mode l2 peer name rec-nk0 numrxqueues 3
              ip link add rec-nkh1 type netkit mode l2 peer name rec-nk1 numrxqueues 1
              ip link add rec-veth type veth peer name rec-veth0
              ip link add rec-veth9 type veth peer name rec-veth9p
              for d in rec-nk0 rec-nk1 rec-veth0; do ip link set $d netns {ns}; done
              for d in rec-nkh rec-nkh1 rec-veth rec-veth9 rec-veth9p; do ip link set $d up; done
              for d in rec-nk0 rec-nk1 rec-veth0 lo; do ip -n {ns} link set $d up; done
           """.format(nsim=nsim, ns=NS))
        lender = socket.if_nametoindex(nsim)
        nk0, nk1, veth0 = (ifindex_in_ns(d) for d in ("rec-nk0", "rec-nk1", "rec-veth0"))
        facts = dict(lender=nsim, lender_ifindex=lender)
        in_ns("queue_create", out, lambda f, nsid: f.create(nk0, lender, 1, nsid),
              lessee="rec-nk0", lessee_ifindex=nk0, **facts)
        with LeaseFamily() as fam:
            recorded(fam, "queue_get_leased", out,
                     lambda f: f.dump("q", CMD_QUEUE_GET, ifindex=lender), **facts)
        in_ns("queue_create_busy", out, lambda f, nsid: f.create(nk0, lender, 1, nsid),
              lessee="rec-nk0", **facts)
        in_ns("queue_create_range", out, lambda f, nsid: f.create(nk0, lender, 5, nsid),
              lessee="rec-nk0", **facts)
        in_ns("queue_create_veth", out, lambda f, nsid: f.create(veth0, lender, 0, nsid),
              lessee="rec-veth0", **facts)
        in_ns("queue_create_limit", out, lambda f, nsid: f.create(nk1, lender, 0, nsid),
              lessee="rec-nk1 (numrxqueues 1)", **facts)
        virtio = socket.if_nametoindex(nic)
        in_ns("queue_create_no_queue_ops", out,
              lambda f, nsid: f.create(nk0, virtio, 0, nsid),
              lessee="rec-nk0", lender_is=nic + " (virtio-net)")
        veth9 = socket.if_nametoindex("rec-veth9")
        in_ns("queue_create_virtual_lender", out,
              lambda f, nsid: f.create(nk0, veth9, 0, nsid), lessee="rec-nk0",
              lender_is="rec-veth9 (veth)")
        nkh = socket.if_nametoindex("rec-nkh")
        with LeaseFamily() as fam:
            recorded(fam, "queue_create_primary", out, lambda f: f.create(nkh, lender, 0),
                     lessee="rec-nkh (the pair's primary, host namespace)", **facts)
        with RxConfigFamily() as eth:
            recorded(eth, "channels_set_leased", out,
                     lambda f: f.set_channels(lender, combined=1), **facts)
        # the lessee goes: the lease ends with it
        sh("ip link del rec-nkh")
        with LeaseFamily() as fam:
            recorded(fam, "queue_get_after_delete", out,
                     lambda f: f.dump("q", CMD_QUEUE_GET, ifindex=lender), **facts)
    finally:
        subprocess.run(["sh", "-c", "ip link del rec-nkh; ip link del rec-nkh1; "
                        "ip link del rec-veth; ip link del rec-veth9; ip netns del %s; "
                        "echo %d > /sys/bus/netdevsim/del_device" % (NS, NSIM_ID)],
                       stderr=subprocess.DEVNULL)
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main(*sys.argv[1:])
