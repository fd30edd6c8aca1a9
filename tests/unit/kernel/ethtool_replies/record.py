# SPDX-License-Identifier: GPL-2.0-or-later
"""Records the kernel's raw ethtool netlink replies for the unit tests.

    PYTHONPATH=. python3 tests/unit/kernel/ethtool_replies/record.py DEVICE OUTDIR "SOURCE" [--sets]

(from the repository, whose library it uses).

Writes one JSON file per request: the request, the receive buffers exactly
as the kernel sent them (hex), the kernel release and SOURCE (which machine
and device).  --sets also records the set requests the zero-copy tuner
sends (header split on, hds-thresh 0, rx-ntuple-filter on, an RSS table)
and puts back what it read first: run it only on a test device.
"""

import json
import os
import socket
import sys

from irqtune.kernel.netlink.ethtool_rx import RxConfigFamily
from irqtune.kernel.netlink.genl import NetlinkRequestError


def main(device, outdir, source, sets=False):
    ifindex = socket.if_nametoindex(device)
    release = os.uname().release
    os.makedirs(outdir, exist_ok=True)
    with RxConfigFamily() as fam:
        current = {}

        def record(name, call):
            buffers = []
            fam.record = lambda cmd, bufs: buffers.extend(bufs)
            try:
                result, error = call(), None
            except NetlinkRequestError as err:
                result, error = None, [err.errno, err.extack.message]
            fam.record = None
            with open(os.path.join(outdir, name + ".json"), "w") as f:
                json.dump({"source": source, "kernel": release, "device": device,
                           "ifindex": ifindex, "error": error,
                           "replies": [b.hex() for b in buffers]}, f, indent=1)
                f.write("\n")
            print(name, error or "ok")
            return result

        current["rings"] = record("rings_get", lambda: fam.rings(ifindex))
        current["features"] = record("features_get", lambda: fam.features(ifindex))
        current["rss"] = record("rss_get", lambda: fam.rss(ifindex))
        if not sets:
            return
        record("rings_set_split", lambda: fam.set_rings(
            ifindex, **{"tcp-data-split": 2, "hds-thresh": 0}))
        record("rings_get_after_set", lambda: fam.rings(ifindex))
        record("features_set_ntuple", lambda: fam.set_features(
            ifindex, {"rx-ntuple-filter": True}))
        record("rss_set_indir", lambda: fam.set_rss_indir(ifindex, [0]))
        # put back what was there (the tuner's restore path, recorded too)
        rings = current["rings"] or {}
        if "tcp-data-split" in rings or "hds-thresh" in rings:
            record("rings_set_auto", lambda: fam.set_rings(ifindex, **{"tcp-data-split": 0}))
        if current["rss"] and current["rss"].get("indir"):
            fam.set_rss_indir(ifindex, [])


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--sets"]
    main(*args, sets="--sets" in sys.argv)
