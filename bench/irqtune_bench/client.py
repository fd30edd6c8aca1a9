# SPDX-License-Identifier: GPL-2.0-or-later
"""What runs on the client for the steering search: `irqtune-bench hold
ADDR PORT --source-ports P1,...` opens one connection to memcached from
each local port, asks each for memcached's version (so the server's side
has received a packet and knows its NAPI), prints "held P1,P3,..." (the
ports it could bind and connect), then holds them until a line arrives
on stdin and ends them with a reset, so the ports are free again at
once (no TIME_WAIT)."""

import socket
import struct
import sys

RESET = struct.pack("ii", 1, 0)         # SO_LINGER on, 0 s


def hold(addr, port, ports, stdin=sys.stdin, stdout=sys.stdout):
    held = []
    try:
        for local in ports:
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, RESET)
            sock.settimeout(5)
            try:
                sock.bind(("0.0.0.0", local))
                sock.connect((addr, port))
                sock.sendall(b"version\r\n")
                if not sock.recv(64).startswith(b"VERSION"):
                    raise OSError("not memcached's answer")
            except OSError:
                sock.close()            # a port in use here: the next one
                continue
            held.append((local, sock))
        print("held %s" % ",".join(str(p) for p, _ in held), file=stdout, flush=True)
        stdin.readline()
    finally:
        for _, sock in held:
            sock.close()
    return 0
