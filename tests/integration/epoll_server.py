# SPDX-License-Identifier: GPL-2.0-or-later
"""A small epoll server that opts itself in to busy polling: it sets
prefer_busy_poll on its one epoll instance with EPIOCSPARAMS (Linux 6.9+),
as a program written for IRQ suspension does, without the preload.

Speaks just enough of memcached's text protocol for
tests/preload/memcached_client.py: "set" answers STORED, "get irqtune"
answers the stored value.

Usage: epoll_server.py HOST PORT  (prints "ready" once listening)
"""

import fcntl
import select
import socket
import struct
import sys

EPIOCSPARAMS = (1 << 30) | (8 << 16) | (0x8A << 8) | 0x01
VALUE = b"busypoll"
ANSWER = b"VALUE irqtune 0 %d\r\n%s\r\nEND\r\n" % (len(VALUE), VALUE)


def main(host, port):
    ep = select.epoll()
    # busy_poll_usecs 0, budget 64, prefer_busy_poll 1: the seed's suspend case
    fcntl.ioctl(ep.fileno(), EPIOCSPARAMS, struct.pack("=IHBB", 0, 64, 1, 0))
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(64)
    listener.setblocking(False)
    ep.register(listener.fileno(), select.EPOLLIN)
    conns, bufs = {}, {}
    print("ready", flush=True)
    while True:
        for fd, _ in ep.poll(64):
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
            buf = bufs[fd] + data
            out = []
            while b"\r\n" in buf:
                line, _, rest = buf.partition(b"\r\n")
                if line.startswith(b"set "):
                    size = int(line.split()[4])
                    if len(rest) < size + 2:
                        break
                    buf = rest[size + 2:]
                    out.append(b"STORED\r\n")
                else:
                    buf = rest
                    out.append(ANSWER)
            bufs[fd] = buf
            if out:
                conn.sendall(b"".join(out))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
