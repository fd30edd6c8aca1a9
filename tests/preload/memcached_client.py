# SPDX-License-Identifier: GPL-2.0-or-later
"""Closed-loop memcached text-protocol load: CONNS connections, each with one
'get' outstanding, until TOTAL answers arrived or SECONDS passed.

Usage: memcached_client.py HOST PORT CONNS TOTAL SECONDS
Prints "answers=<n> seconds=<t>"; exit status 1 on a protocol error,
2 when the server could not be reached.
"""

import selectors
import socket
import sys
import time

REQUEST = b"get irqtune\r\n"
VALUE = b"busypoll"
ANSWER = b"VALUE irqtune 0 %d\r\n%s\r\nEND\r\n" % (len(VALUE), VALUE)


def connect(host, port, deadline):
    while True:
        try:
            return socket.create_connection((host, port), timeout=2)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def main(host, port, conns, total, seconds):
    deadline = time.monotonic() + 5
    try:
        socks = [connect(host, port, deadline) for _ in range(conns)]
    except OSError as err:
        print("cannot connect: %s" % err, file=sys.stderr)
        return 2
    store = b"set irqtune 0 0 %d\r\n%s\r\n" % (len(VALUE), VALUE)
    socks[0].sendall(store)
    if socks[0].recv(64) != b"STORED\r\n":
        print("set failed", file=sys.stderr)
        return 1
    sel = selectors.DefaultSelector()
    for sock in socks:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        sel.register(sock, selectors.EVENT_READ, bytearray())
    start = time.monotonic()
    sent = answers = 0
    for sock in socks:
        if sent < total:
            sock.send(REQUEST)
            sent += 1
    while answers < total and time.monotonic() - start < seconds:
        for key, _ in sel.select(0.5):
            buf = key.data
            chunk = key.fileobj.recv(65536)
            if not chunk:
                print("server closed the connection", file=sys.stderr)
                return 1
            buf += chunk
            while len(buf) >= len(ANSWER):
                if not buf.startswith(ANSWER):
                    print("unexpected answer %r" % bytes(buf[:64]), file=sys.stderr)
                    return 1
                del buf[:len(ANSWER)]
                answers += 1
                if sent < total:
                    key.fileobj.send(REQUEST)
                    sent += 1
    print("answers=%d seconds=%.3f" % (answers, time.monotonic() - start))
    for sock in socks:
        sock.close()
    return 0


if __name__ == "__main__":
    a = sys.argv[1:]
    sys.exit(main(a[0], int(a[1]), int(a[2]), int(a[3]), float(a[4])))
