# SPDX-License-Identifier: GPL-2.0-or-later
"""Link events (rtnetlink RTMGRP_LINK) for noticing NAPI churn.

Drivers without persistent NAPI config (veth, many older ones) drop their
NAPIs on link down or a channel change and bring back new ones with
default values.  A link message for a tuned device is the cue to look for
such NAPIs; a slow periodic re-check covers changes that send none.
The socket and the message framing are genl.py's; the watcher's own
thread reads it, so pyroute2's threading rules do not apply.
"""

import logging
import os
import select
import socket
import threading

from pyroute2.netlink import nlmsg

from .genl import netlink_messages, open_socket

log = logging.getLogger(__name__)

RTNLGRP_LINK = 1
RTM_NEWLINK = 16


class link_msg(nlmsg):
    """struct ifinfomsg, as pyroute2's ifinfmsg declares it; the link's
    attributes are not needed, so none are declared (and none decoded)."""

    fields = (("family", "B"), ("__align", "x"), ("ifi_type", "H"),
              ("index", "i"), ("flags", "I"), ("change", "I"))
    nla_map = ()


class LinkWatcher:
    """Calls on_change(ifindex) for link messages, and on_tick() every
    interval s (never when interval is 0)."""

    def __init__(self, on_change, on_tick, interval=5.0):
        self._on_change = on_change
        self._on_tick = on_tick
        self._interval = interval
        self._wake_r, self._wake_w = os.pipe()
        self._sock = open_socket(socket.NETLINK_ROUTE, RTNLGRP_LINK)
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
    """The ifindex of each RTM_NEWLINK in a receive buffer."""
    for msg_type, _flags, _seq, msg in netlink_messages(data):
        if msg_type == RTM_NEWLINK:
            link = link_msg(bytearray(msg))
            link.decode()
            yield link["index"]
