# SPDX-License-Identifier: GPL-2.0-or-later
"""A NIC renamed while latency-suspend is active (TuneD 2.25+ reports the
rename as a udev "move" event carrying only the new name).

The originals saved under the old name must follow the device: verify
checks it under its new name, and `tuned-adm off` restores its NAPIs -
without the rename support the tuner looks for the old name, finds no such
device and restores nothing.  veth recreates its NAPIs on the down/up a
rename needs, so this is the churn case too.
"""

import pytest

from support.host7 import NON_DEFAULT_ORIGINALS, SUSPEND_VALUES, napi_values
from support.waiting import wait_for

VARS = "latency-suspend"


@pytest.fixture
def h(host7):
    host7.off()
    host7.sh("ip link del rn0 2>/dev/null; ip link del rn1 2>/dev/null; "
             "ip link add rn0 numrxqueues 2 numtxqueues 2 type veth peer rn0p "
             "numrxqueues 2 numtxqueues 2 && ip link set rn0 up && ip link set rn0p up && "
             "ethtool -K rn0 gro on")
    yield host7
    host7.off()
    host7.sh("ip link del rn0 2>/dev/null; ip link del rn1 2>/dev/null; true")


def test_renamed_nic_is_verified_and_restored_under_its_new_name(h):
    for nid in h.napis("rn0"):
        h.napi_set(nid, **NON_DEFAULT_ORIGINALS)
    h.profile(h.lab_profile(), variables={VARS: {"suspend_nics": "rn0"}})
    wait_for(lambda: all(napi_values(n) == SUSPEND_VALUES for n in h.napis("rn0").values()),
             timeout=30, interval=1, what="rn0 tuned")
    mark = h.log_size()
    h.sh("ip link set rn0 down && ip link set rn0 name rn1 && ip link set rn1 up")
    wait_for(lambda: "rn0 is now called rn1" in h.log_since(mark), timeout=30, interval=1,
             what="the move event handled")
    wait_for(lambda: len(h.napis("rn1")) == 2 and
             all(napi_values(n) == SUSPEND_VALUES for n in h.napis("rn1").values()),
             timeout=30, interval=1, what="rn1's recreated NAPIs tuned")
    ok, log = h.verify()
    assert ok, log
    h.off()
    got = {nid: napi_values(n) for nid, n in h.napis("rn1").items()}
    assert got and all(v == NON_DEFAULT_ORIGINALS for v in got.values()), got
