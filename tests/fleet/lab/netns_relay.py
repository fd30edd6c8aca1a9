#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""ssh ProxyCommand for lab guests: relays stdin/stdout to HOST:PORT.

Run as `ip netns exec <guest netns> python3 netns_relay.py 10.77.0.2 22`:
every lab guest has the same address in its own network namespace, so ssh
reaches each one through its namespace, without a route or a listening
port on the host.
"""

import os
import select
import socket
import sys


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    sock = socket.create_connection((host, port), timeout=30)
    sock.settimeout(None)
    readers = [sys.stdin.fileno(), sock]
    while True:
        ready, _, _ = select.select(readers, [], [])
        if sys.stdin.fileno() in ready:
            data = os.read(sys.stdin.fileno(), 65536)
            if data:
                sock.sendall(data)
            else:
                sock.shutdown(socket.SHUT_WR)
                readers.remove(sys.stdin.fileno())
        if sock in ready:
            data = sock.recv(65536)
            if not data:
                return 0
            view = memoryview(data)
            while view:
                view = view[os.write(sys.stdout.fileno(), view):]


if __name__ == "__main__":
    sys.exit(main())
