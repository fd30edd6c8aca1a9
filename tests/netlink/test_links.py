# SPDX-License-Identifier: GPL-2.0-or-later
"""LinkWatcher against the running kernel: a link change of a veth in a
namespace reaches on_change with the device's ifindex."""

import socket
import threading

from irqtune.kernel.netlink.links import LinkWatcher


def test_a_link_change_names_the_device(netns):
    ifindex = socket.if_nametoindex("vn0")
    seen, changed = [], threading.Event()

    def on_change(index):
        seen.append(index)
        if index == ifindex:
            changed.set()

    watcher = LinkWatcher(on_change, on_tick=lambda: None, interval=0)
    watcher.start()
    try:
        netns.exec("ip", "link", "set", "vn0", "down")
        assert changed.wait(10), seen
    finally:
        watcher.stop()
