# SPDX-License-Identifier: GPL-2.0-or-later
"""NAPI persistence on Linux 7.2 through TuneD 2.27.

netdevsim registers its NAPIs with netif_napi_add_config() on 7.x (read in
drivers/net/netdevsim/netdev.c), so like virtio-net it keeps NAPI ids and
values over down/up: nothing may be lost.  veth uses plain
netif_napi_add(): down/up recreates its NAPIs with new ids, which must be
tuned again - and `off` must give them the originals of the NAPIs they
replaced, not a value the profile set.
"""

import pytest

from support.host7 import NON_DEFAULT_ORIGINALS, SUSPEND_VALUES, napi_values
from support.waiting import wait_for

VARS = "latency-suspend"     # its variables file
TUNED, ORIGINAL = SUSPEND_VALUES, NON_DEFAULT_ORIGINALS
values = napi_values


@pytest.fixture
def netdevsim(host7):
    host7.off()
    host7.sh("modprobe netdevsim 2>/dev/null; echo '77 1 4' > /sys/bus/netdevsim/new_device")
    wait_for(lambda: host7.run("ls", "/sys/bus/netdevsim/devices/netdevsim77/net")[0] == 0,
             timeout=60, interval=1, what="a netdev of netdevsim77")
    host7.sh("udevadm settle")     # udev renames it (eth0 -> eni77np1)
    dev = host7.sh("ls /sys/bus/netdevsim/devices/netdevsim77/net").split()[0]
    host7.sh("ip link set %s up" % dev)
    yield dev
    host7.off()
    host7.sh("echo 77 > /sys/bus/netdevsim/del_device")


@pytest.fixture
def veth(host7):
    host7.off()
    host7.sh("ip link add irqv0 numrxqueues 2 numtxqueues 2 type veth peer name irqv1 "
             "numrxqueues 2 numtxqueues 2 && ethtool -K irqv0 gro on && "
             "ip link set irqv1 up && ip link set irqv0 up")
    yield "irqv0"
    host7.off()
    host7.sh("ip link del irqv0")


def set_originals(h, dev):
    for nid in h.napis(dev):
        h.napi_set(nid, **ORIGINAL)


def test_netdevsim_keeps_napis_and_values_over_down_up(host7, netdevsim):
    h, dev = host7, netdevsim
    set_originals(h, dev)
    h.profile(h.lab_profile(), variables={VARS: {"suspend_nics": dev}})
    napis = h.napis(dev)
    assert len(napis) == 4 and all(values(n) == TUNED for n in napis.values()), napis
    h.link_cycle(dev)
    after = h.napis(dev)
    assert sorted(after) == sorted(napis)
    assert all(values(n) == TUNED for n in after.values()), after
    ok, log = h.verify()
    assert ok, log
    h.off()
    assert all(values(n) == ORIGINAL for n in h.napis(dev).values())


def test_veth_recreated_napis_are_retuned_and_get_the_originals_back(host7, veth):
    h, dev = host7, veth
    set_originals(h, dev)
    h.profile(h.lab_profile(), variables={VARS: {"suspend_nics": dev}})
    old = h.napis(dev)
    assert old and all(values(n) == TUNED for n in old.values()), old
    h.link_cycle(dev)
    wait_for(lambda: set(h.napis(dev)) and not set(h.napis(dev)) & set(old)
             and all(values(n) == TUNED for n in h.napis(dev).values()),
             timeout=60, interval=1,
             what="the recreated NAPIs re-tuned (after the link cycle: %s)" % h.napis(dev))
    ok, log = h.verify()
    assert ok, log
    h.off()
    now = h.napis(dev)
    assert all(values(n) == ORIGINAL for n in now.values()), now
