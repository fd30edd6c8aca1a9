# SPDX-License-Identifier: GPL-2.0-or-later
"""Records the kernel's raw netdev netlink replies for the unit tests.

    PYTHONPATH=. python3 tests/unit/kernel/netdev_replies/record.py DEVICE OUTDIR "SOURCE"

(from the repository, whose library it uses).  Read-only: a queue-get
dump and a per-queue qstats-get dump of DEVICE, one JSON file each with
the receive buffers exactly as the kernel sent them (hex), the kernel
release and SOURCE (which machine and device); the layout of
ethtool_replies/.
"""

import json
import os
import socket
import sys

from irqtune.kernel.netlink.netdev import (CMD_QSTATS_GET, CMD_QUEUE_GET, SCOPE_QUEUE,
                                           QstatsFamily, QueueFamily)


def record(family, name, outdir, source, device, request):
    ifindex = socket.if_nametoindex(device)
    buffers = []
    with family() as fam:
        fam.record = lambda cmd, bufs: buffers.extend(bufs)
        replies = request(fam, ifindex)
    with open(os.path.join(outdir, name + ".json"), "w") as f:
        json.dump({"source": source, "kernel": os.uname().release, "device": device,
                   "ifindex": ifindex, "error": None,
                   "replies": [b.hex() for b in buffers]}, f, indent=1)
        f.write("\n")
    print(name, replies)


def main(device, outdir, source):
    os.makedirs(outdir, exist_ok=True)
    record(QueueFamily, "queue_get", outdir, source, device,
           lambda fam, i: fam.dump("dumping queues", CMD_QUEUE_GET, ifindex=i))
    record(QstatsFamily, "qstats_get", outdir, source, device,
           lambda fam, i: fam.dump("dumping queue statistics", CMD_QSTATS_GET, ifindex=i,
                                   scope=SCOPE_QUEUE))


if __name__ == "__main__":
    main(*sys.argv[1:])
