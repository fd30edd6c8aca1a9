#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Bounded UDP flood from the host side of the lab tap to the guest.

Sends at most --count packets for at most --seconds, round-robin over
--flows sockets bound to distinct source ports so that the multi-queue tap
spreads them over the guest's queues. Prints one JSON line:
{"sent": N, "errors": N, "seconds": S}. Run inside the lab namespace.
"""
import argparse
import errno
import json
import socket
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", required=True)
    ap.add_argument("--dst", required=True)
    ap.add_argument("--port", type=int, default=9)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--count", type=int, default=100000)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--flows", type=int, default=16)
    a = ap.parse_args()
    if not (0 < a.seconds <= 600 and 0 < a.count <= 100000000 and 0 < a.flows <= 1024):
        ap.error("bounds: 0 < seconds <= 600, 0 < count <= 1e8, 0 < flows <= 1024")
    socks = []
    for _ in range(a.flows):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((a.src, 0))
        s.setblocking(False)
        socks.append(s)
    payload = b"\xa5" * max(0, a.size)
    dst = (a.dst, a.port)
    sent = errors = 0
    start = time.monotonic()
    end = start + a.seconds
    i = 0
    while sent + errors < a.count:
        if (i & 255) == 0 and time.monotonic() >= end:
            break
        try:
            socks[i % a.flows].sendto(payload, dst)
            sent += 1
        except OSError as e:
            errors += 1
            if e.errno in (errno.ENOBUFS, errno.EAGAIN):
                time.sleep(0.0005)
        i += 1
    print(json.dumps({"sent": sent, "errors": errors,
                      "seconds": round(time.monotonic() - start, 3)}))


if __name__ == "__main__":
    main()
