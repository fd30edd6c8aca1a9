# SPDX-License-Identifier: GPL-2.0-or-later
"""Link events (rtnetlink RTMGRP_LINK) for noticing NAPI churn.

Drivers without persistent NAPI config (veth, many older ones) drop their
NAPIs on link down or a channel change and bring back new ones with
default values.  A link message for a tuned device is the cue to look for
such NAPIs; a slow periodic re-check covers changes that send none.
Plain sockets keep this independent of pyroute2's threading rules.
"""

import logging
import os
import select
import socket
import struct
import threading

log = logging.getLogger(__name__)

RTMGRP_LINK = 1
RTM_NEWLINK = 16
NLMSG_HDR = struct.Struct("=IHHII")
IFINFOMSG = struct.Struct("=BxHiII")


class LinkWatcher:
    """Calls on_change(ifindex) for link messages, and on_tick() every
    interval s (never when interval is 0)."""

    def __init__(self, on_change, on_tick, interval=5.0):
        self._on_change = on_change
        self._on_tick = on_tick
        self._interval = interval
        self._wake_r, self._wake_w = os.pipe()
        self._sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
        self._sock.bind((0, RTMGRP_LINK))
        self._thread = threading.Thread(target=self._run, name="irqtune-links", daemon=True)

    def start(self):
        self._thread.start()

    def stop(self):
        os.write(self._wake_w, b"x")
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(10)
        self._sock.close()
        os.close(self._wake_r)
        os.close(self._wake_w)

    def _run(self):
        while True:
            # interval 0: no periodic re-check, link events only
            ready, _, _ = select.select([self._sock, self._wake_r], [], [],
                                        self._interval or None)
            if self._wake_r in ready:
                return
            try:
                if self._sock in ready:
                    for ifindex in sorted(set(_link_messages(self._sock.recv(65536)))):
                        self._on_change(ifindex)
                else:
                    self._on_tick()
            except Exception:    # a watcher must never die silently
                log.exception("link watcher")


def _link_messages(data):
    offset = 0
    while offset + NLMSG_HDR.size <= len(data):
        length, msg_type, _, _, _ = NLMSG_HDR.unpack_from(data, offset)
        if length < NLMSG_HDR.size:
            return
        if msg_type == RTM_NEWLINK and length >= NLMSG_HDR.size + IFINFOMSG.size:
            _, _, ifindex, _, _ = IFINFOMSG.unpack_from(data, offset + NLMSG_HDR.size)
            yield ifindex
        offset += (length + 3) & ~3
