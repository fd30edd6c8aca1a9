# SPDX-License-Identifier: GPL-2.0-or-later
"""A small epoll server that opts itself in to busy polling: it sets
prefer_busy_poll on its one epoll instance with EPIOCSPARAMS (Linux 6.9+:
busy_poll_usecs 0, budget 64), as a program written for IRQ suspension
does, without the preload.  On a kernel without epoll busy-poll
parameters it says so on stderr and serves anyway.

Speaks just enough of memcached's text protocol for
tests/preload/memcached_client.py and tests/integration/burst_client.py:
"set" answers STORED, any other request line (their "get irqtune")
answers the stored value.

COST_NS: every request costs a busy loop of that many nanoseconds before
its answer (default 0).  With burst_client.py sending bursts of K
requests over K connections (one request per connection per burst, so one
epoll event is one request), each batch the server takes from epoll_wait
is K events of COST_NS each, plus the interpreter's own cost per request:
the right answer for irqtune doctor's measurement is known.
MAXEVENTS: epoll_wait's maxevents (default: Python's, FD_SETSIZE - 1).
With --fifo it runs SCHED_FIFO (priority 1), so that nothing else on a
shared host stretches its requests: the busy periods are its own work.

Usage: epoll_server.py HOST PORT [COST_NS [MAXEVENTS]] [--fifo]
(prints "ready" once listening)
"""

import argparse
import fcntl
import os
import select
import socket
import struct
import sys
import time

EPIOCSPARAMS = (1 << 30) | (8 << 16) | (0x8A << 8) | 0x01
VALUE = b"busypoll"
ANSWER = b"VALUE irqtune 0 %d\r\n%s\r\nEND\r\n" % (len(VALUE), VALUE)


def spin(ns):
    end = time.perf_counter_ns() + ns
    while time.perf_counter_ns() < end:
        pass


def answers(buf, cost_ns):
    """(answers to the complete requests in buf, what is left of it)."""
    out = []
    while b"\r\n" in buf:
        line, _, rest = buf.partition(b"\r\n")
        if line.startswith(b"set "):
            size = int(line.split()[4])
            if len(rest) < size + 2:
                break
            buf = rest[size + 2:]
            answer = b"STORED\r\n"
        else:
            buf = rest
            answer = ANSWER
        if cost_ns:
            spin(cost_ns)
        out.append(answer)
    return b"".join(out), buf


def main(host, port, cost_ns=0, maxevents=-1, fifo=False):
    if fifo:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    ep = select.epoll()
    try:
        fcntl.ioctl(ep.fileno(), EPIOCSPARAMS, struct.pack("=IHBB", 0, 64, 1, 0))
    except OSError as err:
        print("epoll_server: EPIOCSPARAMS: %s; serving without busy-poll parameters"
              % err.strerror, file=sys.stderr, flush=True)
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(128)
    listener.setblocking(False)
    ep.register(listener.fileno(), select.EPOLLIN)
    conns, bufs = {}, {}
    print("ready", flush=True)
    while True:
        for fd, _ in ep.poll(-1, maxevents):
            if fd == listener.fileno():
                conn, _ = listener.accept()
                conn.setblocking(False)
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                conns[conn.fileno()], bufs[conn.fileno()] = conn, b""
                ep.register(conn.fileno(), select.EPOLLIN)
                continue
            conn = conns[fd]
            data = conn.recv(65536)
            if not data:
                ep.unregister(fd)
                conn.close()
                del conns[fd], bufs[fd]
                continue
            out, bufs[fd] = answers(bufs[fd] + data, cost_ns)
            if out:
                conn.sendall(out)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="epoll_server.py")
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("cost_ns", metavar="COST_NS", type=int, nargs="?", default=0)
    p.add_argument("maxevents", metavar="MAXEVENTS", type=int, nargs="?", default=-1)
    p.add_argument("--fifo", action="store_true")
    return p.parse_args(argv)


if __name__ == "__main__":
    args = parse_args(sys.argv[1:])
    main(args.host, args.port, args.cost_ns, args.maxevents, args.fifo)
