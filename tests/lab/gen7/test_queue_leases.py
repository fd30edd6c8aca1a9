# SPDX-License-Identifier: GPL-2.0-or-later
"""Queue leases of zerocopy-rx-host (queue_leases) through TuneD 2.27 on
Linux 7.2: netdevsim lends its reserved rx queue, a netkit device in a
named namespace - the container - receives it, as upstream's
tools/testing/selftests/net/nk_qlease.py sets them up.

The container is started after the profile (the lease is made on the
plugin's re-check), the lease is seen from both sides (the lender's
queue-get shows it, the netkit device lists the new queue inside the
namespace), verify passes, off ends it by deleting the netkit device
(the kernel has no other way) and gives the channels back.  Kernel state
is read with the raw netlink reader (tests/support/rawnapi.py) and ip(8),
never with the library under test.  What the lab cannot show: data
through a leased queue (zero-copy receive needs a NIC with a DMA device;
netdevsim has none - bind-rx through the lease says so).
"""

import json
import re
import shlex

import pytest

from support.host7 import GUEST_PYTHON
from support.waiting import wait_for

BASE = "latency-suspend"
OVERLAY = "zerocopy-rx-host"
VARIABLES = "/etc/tuned/zerocopy-rx-host-variables.conf"
NSIM_ID = 81
BIND = "/irqtune/tests/lab/gen7/devmem_bind.py"
# a lease made by someone else, with the library's netlink code run by
# hand as an administrator's tool would (not the plugin under test)
FOREIGN = ("import sys, socket; from irqtune.kernel import netns; "
           "from irqtune.kernel.netlink.netdev import LeaseFamily; "
           "ns, dev, lender, queue = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]); "
           "print(netns.run_in(ns, lambda own: LeaseFamily().create("
           "socket.if_nametoindex(dev), lender, queue, netns.peer_id(own, assign=True))))")


def raw(h, expr, ns=None):
    script = "import json; from support import rawnapi; print(json.dumps(%s))" % expr
    argv = (("ip", "netns", "exec", ns) if ns else ()) + GUEST_PYTHON + ("-c", script)
    rc, out = h.run(*argv)
    assert rc == 0, out
    return json.loads(out.splitlines()[-1])


def leases(h, dev):
    """{lender rx queue: {"ifindex", "queue", "netns-id"}} from the lender's queue-get."""
    return {int(q): v for q, v in raw(h, "rawnapi.RawGenl().rx_leases(%r)" % dev).items()}


def ifindex(h, ns, dev):
    return int(h.sh("ip netns exec %s cat /sys/class/net/%s/ifindex" % (ns, dev)).strip())


def combined(h, dev):
    out = h.sh("ethtool -l %s" % dev).split("Current hardware settings:")[1]
    return int(re.search(r"^Combined:\s+(\d+)", out, re.M).group(1))


def start_pod(h, ns, dev="nk0", rxqueues=2, kind="netkit", new_ns=True):
    """A container's network: namespace ns with the peer of a netkit pair
    (its host end <dev>h-<ns> stays here), or of a veth pair."""
    link = ("type netkit mode l2 peer name %s numrxqueues %d" % (dev, rxqueues)
            if kind == "netkit" else "type veth peer name %s" % dev)
    h.sh("{add}ip link add {dev}h-{ns} {link} && ip link set {dev} netns {ns} "
         "&& ip link set {dev}h-{ns} up && ip -n {ns} link set {dev} up && "
         "ip -n {ns} link set lo up".format(ns=ns, dev=dev, link=link,
                                            add="ip netns add %s && " % ns if new_ns else ""))


LEDGER_LEASES = ("import glob, json; print(json.dumps({dev: e['leases'] "
                 "for path in glob.glob('/run/irqtune/zerocopy_rx-*.json') "
                 "for dev, e in json.load(open(path)).items() "
                 "if isinstance(e, dict) and e.get('leases')}))")


def ledger(h):
    """The zerocopy_rx ledgers' lease entries, by device (read as JSON)."""
    return json.loads(h.sh("python3 -c %s" % shlex.quote(LEDGER_LEASES)).splitlines()[-1])


def make_nsim(h):
    """netdevsim NSIM_ID with 4 queues, 2 channels on, up; its device name."""
    h.sh("echo '%d 1 4' > /sys/bus/netdevsim/new_device" % NSIM_ID)
    path = "/sys/bus/netdevsim/devices/netdevsim%d/net" % NSIM_ID
    wait_for(lambda: h.run("ls", path)[0] == 0, timeout=30, interval=0.5,
             what="a netdev of netdevsim%d" % NSIM_ID)
    h.sh("udevadm settle")
    dev = h.sh("ls %s" % path).split()[0]
    h.sh("ip link set %s up && ethtool -L %s combined 2" % (dev, dev))
    return dev


def cleanup(h):
    h.off()
    h.sh("rm -f %s; for ns in $(ip netns list | cut -d' ' -f1 | grep '^pod-'); do "
         "ip netns del $ns; done; for d in $(ls /sys/class/net | grep -- 'h-pod-'); do "
         "ip link del $d; done; echo %d > /sys/bus/netdevsim/del_device" % (VARIABLES, NSIM_ID),
         check=False)


@pytest.fixture
def nsim(host7):
    host7.off()
    yield make_nsim(host7)
    cleanup(host7)


def apply(h, dev, leased, queues=1):
    h.write(VARIABLES, "zerocopy_nics=%s\nzerocopy_queues=%d\nzerocopy_queue_leases=%s\n"
            % (dev, queues, leased))
    return h.profile(BASE, OVERLAY, variables={BASE: {"suspend_nics": dev,
                                                      "suspend_queues": "0-1"}})


def verified_lines(h, dev):
    _ok, vlog = h.verify()
    return [l for l in vlog.splitlines() if "device %s:" % dev in l and "lease" in l]


def test_a_container_started_after_the_profile_gets_the_queue_and_off_ends_it(host7, nsim):
    h, dev = host7, nsim
    log = apply(h, dev, "2:pod-a/nk0")
    assert combined(h, dev) == 3
    assert "%s: rx queue 2 lease to pod-a/nk0: waiting for pod-a/nk0 to exist" % dev in log, log
    assert leases(h, dev) == {}
    start_pod(h, "pod-a")
    nk0 = ifindex(h, "pod-a", "nk0")
    wait_for(lambda: 2 in leases(h, dev), timeout=90, interval=1,
             what="the re-check to lease queue 2 to pod-a/nk0")
    lease = leases(h, dev)[2]
    print("lender's queue-get:", lease)
    assert lease["ifindex"] == nk0 and lease["queue"] == 1 and "netns-id" in lease
    # inside the container: the netkit device has the new rx queue 1
    assert raw(h, "rawnapi.RawGenl().queue_ids('nk0')", ns="pod-a") == [0, 1]
    entries = ledger(h)
    print("ledger:", entries)
    assert entries == {dev: [{"queue": 2, "netns": "pod-a", "device": "nk0", "ifindex": nk0,
                              "lessee_queue": 1}]}
    lines = verified_lines(h, dev)
    passed = "verify: passed: device %s: 'rx queue 2 lease' = 'pod-a/nk0'" % dev
    assert passed in "\n".join(lines), lines
    # zero-copy receive through the lease: the kernel proxies bind-rx to
    # the lender, whose missing DMA device stops it (the data path needs a NIC)
    rc, out = h.run("ip", "netns", "exec", "pod-a", *GUEST_PYTHON, BIND, "nk0", "1")
    print("bind-rx on pod-a/nk0 queue 1:", out)
    # the pod ends: the lease ends with its netkit device and the re-check
    # forgets it; a pod of the same names comes back and gets it again
    mark = h.log_size()
    h.sh("ip link del nk0h-pod-a")
    wait_for(lambda: ledger(h) == {}, timeout=90, interval=1, what="the ended lease forgotten")
    assert "lease of rx queue 2 to pod-a/nk0 ended" in h.log_since(mark)
    start_pod(h, "pod-a", new_ns=False)
    wait_for(lambda: 2 in leases(h, dev), timeout=90, interval=1, what="queue 2 leased again")
    assert leases(h, dev)[2]["ifindex"] == ifindex(h, "pod-a", "nk0")
    mark = h.log_size()
    h.off()
    print(h.log_since(mark))
    assert leases(h, dev) == {}
    assert h.run("ip", "-n", "pod-a", "link", "show", "nk0")[0] != 0     # the lessee went
    assert combined(h, dev) == 2 and ledger(h) == {}


def test_kill9_restart_and_off_end_exactly_the_leases_irqtune_made(host7, nsim):
    h, dev = host7, nsim
    start_pod(h, "pod-a")
    start_pod(h, "pod-b")
    apply(h, dev, "2:pod-a/nk0", queues=2)
    wait_for(lambda: 2 in leases(h, dev), timeout=90, interval=1, what="queue 2 leased")
    lender = int(h.sh("cat /sys/class/net/%s/ifindex" % dev))
    rc, out = h.run("env", "PYTHONPATH=/irqtune", "python3", "-c", FOREIGN, "pod-b", "nk0",
                    str(lender), "3")
    assert rc == 0, out
    before = ledger(h)
    h.sh("systemctl kill -s KILL tuned; sleep 1; systemctl reset-failed tuned; "
         "systemctl start tuned && systemctl is-active tuned")
    wait_for(lambda: h.tuned_adm("active")[0] == 0, timeout=120, interval=0.5,
             what="tuned to answer again")
    after = ledger(h)
    print("ledger before the kill:", before, "after the restart:", after)
    assert before == after and [e["queue"] for e in after[dev]] == [2]
    assert sorted(leases(h, dev)) == [2, 3]
    mark = h.log_size()
    h.off()
    log = h.log_since(mark)
    print(log)
    assert sorted(leases(h, dev)) == [3]                      # pod-b's stays
    assert h.run("ip", "-n", "pod-a", "link", "show", "nk0")[0] != 0
    assert h.run("ip", "-n", "pod-b", "link", "show", "nk0")[0] == 0
    # the channel restore meets pod-b's lease: one line, and the count stays
    refused = [l for l in log.splitlines() if "cannot restore channels" in l]
    assert len(refused) == 1 and "a leased rx queue is in the way" in refused[0], log
    assert combined(h, dev) == 4
    h.sh("ip link del nk0h-pod-b && ethtool -L %s combined 2" % dev)


def test_a_profile_switch_ends_the_lease_like_off(host7, nsim):
    """latency-suspend + the overlay, then latency-suspend alone: TuneD
    unapplies the overlay's instance, which ends its lease."""
    h, dev = host7, nsim
    start_pod(h, "pod-a")
    apply(h, dev, "2:pod-a/nk0")
    wait_for(lambda: 2 in leases(h, dev), timeout=90, interval=1, what="queue 2 leased")
    h.profile(BASE, variables={BASE: {"suspend_nics": dev, "suspend_queues": "0-1"}})
    assert leases(h, dev) == {} and combined(h, dev) == 2 and ledger(h) == {}
    assert h.run("ip", "-n", "pod-a", "link", "show", "nk0")[0] != 0


def test_refusals_are_one_line_each_and_the_rest_applies(host7, nsim):
    h, dev = host7, nsim
    start_pod(h, "pod-a")
    start_pod(h, "pod-v", dev="veth0", kind="veth")
    start_pod(h, "pod-l", rxqueues=1)
    log = apply(h, dev, "1:pod-a/nk0 2:pod-v/veth0 3:pod-l/nk0", queues=2)
    wanted = {
        "rx queue 1 lease to pod-a/nk0": "queue 1 is not among the reserved rx queues (2-3)",
        "rx queue 2 lease to pod-v/veth0": "Device does not support queue creation): the "
                                           "lessee must be a netkit device",
        "rx queue 3 lease to pod-l/nk0": "netkit maximum queue limit reached): the netkit "
                                         "device has no rx queue left",
    }
    for what, words in wanted.items():
        lines = [l for l in log.splitlines() if "%s: %s:" % (dev, what) in l]
        print(lines)
        assert len(lines) == 1 and words in lines[0], (what, log)
    assert combined(h, dev) == 4 and leases(h, dev) == {}
    _ok, vlog = h.verify()
    assert "verify: failed: device %s: 'rx queue 2 lease'" % dev in vlog, vlog
    h.off()
    assert combined(h, dev) == 2


def test_a_lender_without_queue_management_ops_is_one_line(host7):
    """virtio-net (the guest's NIC) has no queue management ops."""
    h = host7
    h.off()
    dev = h.nic
    start_pod(h, "pod-a")
    h.sh("ethtool -L %s combined 2" % dev)
    try:
        h.write(VARIABLES, "zerocopy_nics=%s\nzerocopy_queues=1\n"
                "zerocopy_queue_leases=2:pod-a/nk0\n" % dev)
        log = h.profile(BASE, OVERLAY, variables={BASE: {"suspend_nics": dev,
                                                         "suspend_queues": "0-1"}})
        lines = [l for l in log.splitlines() if "rx queue 2 lease to pod-a/nk0" in l]
        print(lines)
        assert len(lines) == 1 and ("Lease device does not support queue management "
                                    "operations): the NIC's driver has no queue management ops"
                                    in lines[0]), log
    finally:
        h.off()
        h.sh("rm -f %s; ip link del nk0h-pod-a; ip netns del pod-a; ethtool -L %s combined 4"
             % (VARIABLES, dev), check=False)


def test_a_kernel_without_queue_create_is_one_refusal_and_the_rest_applies(lab):
    """base-systemd: Linux 6.12 as RHEL 10 ships it, configured for this
    image (netkit is there, queue-create is not)."""
    from support.host7 import BOOT_ARGS, Host7
    g = lab.get(kernel="base-systemd", cmdline=BOOT_ARGS)
    h = Host7(g)
    if not getattr(g, "irqtune_installed", False):
        h.install_project()
        g.irqtune_installed = True
    h.off()
    dev = make_nsim(h)
    try:
        start_pod(h, "pod-a")
        log = apply(h, dev, "2:pod-a/nk0")
        lines = [l for l in log.splitlines() if "lease" in l]
        print(lines)
        assert len(lines) == 1 and ("%s: queue leases: the kernel has no netdev queue-create "
                                    "operation (queue leases to netkit devices need Linux >= "
                                    "7.1); left as it is" % dev) in lines[0], log
        assert combined(h, dev) == 3                      # the rest of the profile applied
        h.off()
        assert combined(h, dev) == 2
        assert h.run("ip", "-n", "pod-a", "link", "show", "nk0")[0] == 0    # left alone
    finally:
        cleanup(h)
