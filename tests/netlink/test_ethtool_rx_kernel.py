# SPDX-License-Identifier: GPL-2.0-or-later
"""RxConfigFamily against the running kernel, on veth in a namespace.

veth has no rings, RSS or ntuple table, but its features change and
notify: that is enough to check the monitor-group mechanism the zero-copy
tuner relies on to tell header split "auto" from "on" (a set notifies only
when the kernel's configuration changed), with the pyroute2 in use.
"""

import errno
import socket

import pytest

from irqtune.kernel.netlink.ethtool_rx import RxConfigFamily, _Monitor
from irqtune.kernel.netlink.genl import NetlinkRequestError

NTF_FEATURES = 13       # ETHTOOL_MSG_FEATURES_NTF (include/uapi/linux/ethtool_netlink.h)


def test_monitor_sees_a_change_and_not_a_no_op(netns):
    ifindex = socket.if_nametoindex("vn0")
    with RxConfigFamily() as fam:
        group = fam.groups.get("monitor")
        assert isinstance(group, int) and group > 0
        assert "rx-gro-list" not in fam.features(ifindex)["active"]
        with _Monitor(group) as monitor:
            fam.set_features(ifindex, {"rx-gro-list": True})
            changed = monitor.saw(NTF_FEATURES, ifindex)
        with _Monitor(group) as monitor:
            fam.set_features(ifindex, {"rx-gro-list": True})
            unchanged = monitor.saw(NTF_FEATURES, ifindex)
        assert (changed, unchanged) == (True, False)
        assert "rx-gro-list" in fam.features(ifindex)["active"]
        fam.set_features(ifindex, {"rx-gro-list": False})
        assert "rx-gro-list" not in fam.features(ifindex)["active"]


def test_refusals_carry_errno_and_extack(netns):
    ifindex = socket.if_nametoindex("vn0")
    with RxConfigFamily() as fam:
        with pytest.raises(NetlinkRequestError) as err:
            fam.set_rings(ifindex, **{"tcp-data-split": 2})
        assert err.value.errno == errno.EOPNOTSUPP
        assert err.value.extack.message == "setting TCP data split is not supported"
        with pytest.raises(NetlinkRequestError) as err:
            fam.rss(ifindex)
        assert err.value.errno == errno.EOPNOTSUPP
        # the same socket keeps serving after refusals
        assert fam.channels(ifindex)["rx-count"] == 2
