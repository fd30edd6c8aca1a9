# SPDX-License-Identifier: GPL-2.0-or-later
"""Bursts for tests/integration/epoll_server.py: K connections; each burst
sends one request (memcached's "get irqtune") on every connection, waits
for all K answers, then pauses GAP_US microseconds; until SECONDS passed.

With --fifo the client runs SCHED_FIFO at the priority of the server's
--fifo (1), on the server's CPU: neither preempts the other, so the
client sends a whole burst before the server runs (every wait of the
server returns the K requests at once), and the server's answers wait
until its batch is done.  The pause keeps the CPU from being taken whole
(the kernel's realtime throttling would cut into the batches).

Usage: burst_client.py HOST PORT K SECONDS GAP_US [--fifo]
Prints "bursts=<n> requests=<n> seconds=<t>"; exit status 2 when the
server could not be reached.
"""

import os
import socket
import sys
import time

REQUEST = b"get irqtune\r\n"
ANSWER_END = b"END\r\n"       # of the one answer outstanding on a connection


def connect(host, port, deadline):
    while True:
        try:
            return socket.create_connection((host, port), timeout=5)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def main(host, port, k, seconds, gap_us, fifo):
    deadline = time.monotonic() + 5
    try:
        socks = [connect(host, port, deadline) for _ in range(k)]
    except OSError as err:
        print("cannot connect: %s" % err, file=sys.stderr)
        return 2
    for s in socks:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if fifo:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    start = time.monotonic()
    bursts = 0
    while time.monotonic() - start < seconds:
        for s in socks:
            s.send(REQUEST)
        for s in socks:
            got = b""
            while not got.endswith(ANSWER_END):
                chunk = s.recv(4096)
                if not chunk:
                    print("server closed the connection", file=sys.stderr)
                    return 1
                got += chunk
        bursts += 1
        time.sleep(gap_us / 1e6)
    elapsed = time.monotonic() - start
    print("bursts=%d requests=%d seconds=%.3f" % (bursts, bursts * k, elapsed))
    return 0


if __name__ == "__main__":
    a = sys.argv[1:]
    sys.exit(main(a[0], int(a[1]), int(a[2]), float(a[3]), int(a[4]), "--fifo" in a[5:]))
