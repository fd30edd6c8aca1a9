#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Open-loop memcached load for the lab (run on the host, inside a guest's
network namespace): RATE requests/s in total, Poisson arrivals spread over
CONNS connections, for SECONDS; stops by itself (time and count bounded).

Latency is measured from each request's *scheduled* send time, so a server
or client that falls behind shows as latency instead of as a lower offered
load (no coordinated omission).  Requests are pipelined per connection and
matched to answers in order (memcached answers in order per connection).

Prints one JSON object: offered, seconds, sent, answered, errors, qps,
p50_us, p90_us, p99_us, late (sends more than 1 ms behind schedule).
"""

import argparse
import collections
import json
import random
import selectors
import socket
import sys
import time

KEY = b"irqtune"
VALUE = b"x" * 32
REQUEST = b"get " + KEY + b"\r\n"
END = b"END\r\n"


def percentile(sorted_values, p):
    if not sorted_values:
        return None
    return sorted_values[min(len(sorted_values) - 1, int(p / 100.0 * len(sorted_values)))]


def run(host, port, rate, conns, seconds, warmup):
    socks = []
    deadline = time.monotonic() + 10
    for _ in range(conns):
        while True:     # a server just restarted by systemd may not listen yet
            try:
                s = socket.create_connection((host, port), timeout=5)
                break
            except ConnectionRefusedError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        socks.append(s)
    socks[0].sendall(b"set %s 0 0 %d\r\n%s\r\n" % (KEY, len(VALUE), VALUE))
    if not socks[0].recv(64).startswith(b"STORED"):
        raise SystemExit("loadgen: set failed")
    sel = selectors.DefaultSelector()
    pending = {s: collections.deque() for s in socks}
    bufs = {s: b"" for s in socks}
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    rng = random.Random(1)
    start = time.monotonic() + 0.05
    end = start + warmup + seconds
    next_at = start
    latencies = []
    sent = answered = errors = late = 0
    i = 0
    while True:
        now = time.monotonic()
        # Send everything due (open loop: never wait for answers).
        while next_at <= now and next_at < end:
            s = socks[i % conns]
            i += 1
            try:
                s.send(REQUEST)
                pending[s].append(next_at)
                sent += 1
                if now - next_at > 0.001:
                    late += 1
            except (BlockingIOError, OSError):
                errors += 1
            next_at += rng.expovariate(rate)
        if now >= end + 1.0 or (now >= end and not any(pending.values())):
            break
        timeout = max(0.0, min(next_at, end + 1.0) - now)
        for key, _ in sel.select(timeout):
            s = key.fileobj
            try:
                data = s.recv(65536)
            except BlockingIOError:
                continue
            if not data:
                raise SystemExit("loadgen: server closed a connection")
            t = time.monotonic()
            buf = bufs[s] + data
            while True:
                k = buf.find(END)
                if k < 0:
                    break
                buf = buf[k + len(END):]
                scheduled = pending[s].popleft()
                answered += 1
                if scheduled >= start + warmup:
                    latencies.append(t - scheduled)
            bufs[s] = buf
    for s in socks:
        s.close()
    latencies.sort()
    measured = len(latencies)
    return {
        "offered": rate, "seconds": seconds, "sent": sent, "answered": answered,
        "errors": errors, "late": late, "qps": round(measured / seconds, 1),
        "p50_us": round(percentile(latencies, 50) * 1e6, 1) if latencies else None,
        "p90_us": round(percentile(latencies, 90) * 1e6, 1) if latencies else None,
        "p99_us": round(percentile(latencies, 99) * 1e6, 1) if latencies else None,
        "lost": sum(len(q) for q in pending.values()),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", required=True)
    ap.add_argument("--port", type=int, default=11211)
    ap.add_argument("--rate", type=float, required=True, help="requests/s in total")
    ap.add_argument("--conns", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--warmup", type=float, default=0.5)
    args = ap.parse_args(argv)
    if not 0 < args.rate <= 200000 or not 0 < args.seconds <= 120:
        ap.error("rate must be in (0, 200000] and seconds in (0, 120]")
    print(json.dumps(run(args.host, args.port, args.rate, args.conns, args.seconds, args.warmup)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
