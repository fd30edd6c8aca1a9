# SPDX-License-Identifier: GPL-2.0-or-later
"""An epoll server whose cost per request is known: every request (16
bytes, one per connection per burst, so one epoll event is one request)
costs a busy loop of COST_NS nanoseconds before its 16-byte answer.  Like
a program written for IRQ suspension it sets prefer_busy_poll on its
epoll instance itself (EPIOCSPARAMS, busy_poll_usecs 0, budget 64).

With tests/integration/burst_client.py sending bursts of K requests over
K connections, each batch the server takes from epoll_wait is K events
of COST_NS each (plus the interpreter's own cost per request): the right
answer for irqtune doctor's measurement is known.

With --fifo it runs SCHED_FIFO (priority 1), so that nothing else on a
shared host stretches its requests: the busy periods are its own work.

Usage: burst_server.py HOST PORT COST_NS MAXEVENTS [--fifo]  (prints "ready")
"""
import os

import fcntl
import select
import socket
import struct
import sys
import time

EPIOCSPARAMS = (1 << 30) | (8 << 16) | (0x8A << 8) | 0x01
REQUEST_SIZE = 16


def spin(ns):
    end = time.perf_counter_ns() + ns
    while time.perf_counter_ns() < end:
        pass


def main(host, port, cost_ns, maxevents, fifo):
    if fifo:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    ep = select.epoll()
    try:
        fcntl.ioctl(ep.fileno(), EPIOCSPARAMS, struct.pack("=IHBB", 0, 64, 1, 0))
    except OSError:
        pass            # a kernel without epoll busy-poll parameters: serve anyway
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(128)
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
            data = conn.recv(4096)
            if not data:
                ep.unregister(fd)
                conn.close()
                del conns[fd], bufs[fd]
                continue
            buf = bufs[fd] + data
            answers = len(buf) // REQUEST_SIZE
            for _ in range(answers):
                spin(cost_ns)
            bufs[fd] = buf[answers * REQUEST_SIZE:]
            if answers:
                conn.sendall(b"A" * (REQUEST_SIZE * answers))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), "--fifo" in sys.argv[5:])
