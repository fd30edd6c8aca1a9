# SPDX-License-Identifier: GPL-2.0-or-later
"""Reserved rx queues leased to containers' netkit devices (queue_leases).

FakeLeases (support/fakes/leases.py) keeps the kernel's rules of Linux
7.2 with their errnos and extack texts; FakeNic refuses a channel change
that drops a leased queue as net/ethtool/channels.c does.  The NIC starts
with 2 of 8 channels: queues=2 reserves rx queues 2-3.
"""

import errno
import json
import logging
import os

import pytest

from irqtune.features.zerocopy import ZeroCopyConfig, ZeroCopyRxTuner
from irqtune.kernel.errors import Extack
from irqtune.kernel.netlink.genl import NetlinkRequestError
from irqtune.kernel.netlink.netdev import QueueLease
from irqtune.shared.ledger import Ledger
from support.fakes.ethtool import FakeNic
from support.fakes.leases import FakeLeases

LEDGER = "zerocopy_rx-leases"


class Host:
    def __init__(self, tmp_path, **kw):
        self.nic = FakeNic()
        self.kernel = FakeLeases(self.nic, **kw)
        self.state_dir = str(tmp_path)

    def tuner(self, leases="2:pod-a/nk0", queues="2"):
        config, errors = ZeroCopyConfig.from_options(
            {"queues": queues, "queue_leases": leases, "rss": "leave"})
        assert errors == []
        return ZeroCopyRxTuner(config, ledger=Ledger(LEDGER, self.state_dir),
                               nic=lambda: self.nic, ifindex={"eth0": 7}.get,
                               ifname={7: "eth0"}.get, leases=self.kernel)

    def ledger(self):
        """What the ledger file holds ({} once it is removed)."""
        path = os.path.join(self.state_dir, LEDGER + ".json")
        if not os.path.exists(path):
            return {}
        with open(path) as f:
            return json.load(f)


@pytest.fixture
def host(tmp_path):
    return Host(tmp_path)


def warned(caplog):
    """The lines logged at WARNING and above (another test may have left a
    logger of the library at INFO)."""
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def lease_checks(tuner):
    return {c.what: c for c in tuner.verify("eth0") if "lease" in c.what}


def test_a_lease_is_made_verified_and_ended_with_its_netkit_device(host):
    host.kernel.add("pod-a", "nk0", ifindex=5)
    tuner = host.tuner()
    summary = tuner.apply("eth0")
    assert "1 rx queues leased" in summary
    assert host.kernel.leases == {2: QueueLease(5, 1, 3)}
    assert host.ledger()["eth0"]["leases"] == [
        {"queue": 2, "netns": "pod-a", "device": "nk0", "ifindex": 5, "lessee_queue": 1}]
    check = lease_checks(tuner)["rx queue 2 lease"]
    assert (check.current, check.expected, check.ok) == ("pod-a/nk0", "pod-a/nk0", True)
    assert tuner.needs_watching
    tuner.restore_all()
    assert host.kernel.deleted == [("pod-a", "nk0")]
    assert host.kernel.leases == {} and host.nic.count == 2     # channels back after the lease


def test_a_container_started_after_the_profile_gets_its_lease_on_the_recheck(host, caplog):
    caplog.set_level(logging.INFO, "irqtune")
    tuner = host.tuner()
    assert "leased" not in tuner.apply("eth0")
    assert tuner.apply_new("eth0") == ""
    waiting = [m for m in caplog.messages if "waiting for pod-a/nk0" in m]
    assert len(waiting) == 1, caplog.messages
    check = lease_checks(tuner)["rx queue 2 lease"]
    assert check.ok and check.current == "waiting for pod-a/nk0"
    host.kernel.add("pod-a", "nk0", ifindex=5)
    assert tuner.apply_new("eth0") == "rx queues 2 leased"
    saved = []
    tuner._save_state = lambda **kw: saved.append(kw)
    assert tuner.apply_new("eth0") == ""
    assert saved == []                    # a re-check that finds the lease writes nothing
    del tuner._save_state
    assert lease_checks(tuner)["rx queue 2 lease"].ok
    tuner.restore_all()
    assert host.kernel.deleted == [("pod-a", "nk0")] and host.nic.count == 2


def test_a_restart_after_kill9_keeps_the_lease_and_off_ends_exactly_it(host):
    host.kernel.add("pod-a", "nk0", ifindex=5)
    host.kernel.add("pod-b", "nk0", ifindex=6, nsid=4)
    host.tuner(leases="2:pod-a/nk0 3:pod-b/nk0").apply("eth0")
    assert len(host.kernel.created) == 2
    # the daemon dies; a new one reads the ledger and applies again
    second = host.tuner(leases="2:pod-a/nk0 3:pod-b/nk0")
    second.apply("eth0")
    assert len(host.kernel.created) == 2                  # not leased twice
    second.restore_all()
    assert sorted(host.kernel.deleted) == [("pod-a", "nk0"), ("pod-b", "nk0")]
    assert host.nic.count == 2 and host.ledger() == {}


@pytest.mark.parametrize("made", [True, False])
def test_a_kill_during_queue_create_is_settled_by_the_next_daemon(host, made):
    """The entry is on disk before the request: the next daemon keeps it
    when the kernel made the lease, and drops it when not."""
    host.kernel.add("pod-a", "nk0", ifindex=5)
    tuner = host.tuner()
    entries = []

    def killed(*args):
        entries.extend(host.ledger()["eth0"]["leases"])
        if made:
            host.kernel.fail_create = None
            FakeLeases.create(host.kernel, *args)
        raise KeyboardInterrupt            # stands in for SIGKILL
    host.kernel.create = killed
    with pytest.raises(KeyboardInterrupt):
        tuner.apply("eth0")
    assert entries == [{"queue": 2, "netns": "pod-a", "device": "nk0", "ifindex": 5,
                        "lessee_queue": None}]
    del host.kernel.create
    second = host.tuner()
    second.apply("eth0")
    assert host.kernel.leases == {2: QueueLease(5, 1, 3)}
    assert host.ledger()["eth0"]["leases"][0]["lessee_queue"] == 1
    second.restore_all()
    assert host.kernel.deleted == [("pod-a", "nk0")] and host.kernel.leases == {}


def test_a_lease_whose_device_went_away_is_forgotten_and_made_again(host, caplog):
    caplog.set_level(logging.INFO, "irqtune")
    host.kernel.add("pod-a", "nk0", ifindex=5)
    tuner = host.tuner()
    tuner.apply("eth0")
    host.kernel.delete("pod-a", 5)                    # the pod ends
    host.kernel.deleted.clear()
    assert tuner.apply_new("eth0") == ""
    assert host.ledger()["eth0"].get("leases") == []
    assert any("lease of rx queue 2 to pod-a/nk0 ended" in m for m in caplog.messages)
    host.kernel.add("pod-a", "nk0", ifindex=9)        # a new pod, same names
    assert tuner.apply_new("eth0") == "rx queues 2 leased"
    assert host.kernel.leases == {2: QueueLease(9, 1, 3)}
    host.kernel.delete("pod-a", 9)
    host.kernel.deleted.clear()
    tuner.restore_all()
    assert host.kernel.deleted == [] and host.nic.count == 2


@pytest.mark.parametrize("ifindex", [40, 5])
def test_a_foreign_lease_is_left_alone_and_reported(host, caplog, ifindex):
    """ifindex 5 too: pod-a/nk0's ifindex, but in another namespace (an
    ifindex names a device only within its namespace)."""
    caplog.set_level(logging.WARNING, "irqtune")
    host.kernel.add("pod-a", "nk0", ifindex=5)
    host.kernel.lease_by_someone(2, ifindex=ifindex, nsid=8)
    tuner = host.tuner()
    tuner.apply("eth0")
    tuner.apply_new("eth0")
    line = ("eth0: rx queue 2 lease to pod-a/nk0: queue 2 is leased already to ifindex %d "
            "in namespace id 8, not by irqtune; left as it is" % ifindex)
    assert warned(caplog).count(line) == 1, warned(caplog)
    check = lease_checks(tuner)["rx queue 2 lease"]
    assert not check.ok and check.current == "ifindex %d in namespace id 8" % ifindex
    tuner.restore_all()
    assert host.kernel.deleted == [] and 2 in host.kernel.leases


def test_a_device_that_also_holds_someone_elses_lease_is_not_deleted(host, caplog):
    host.kernel.add("pod-a", "nk0", ifindex=5, rx_max=3)
    tuner = host.tuner()
    tuner.apply("eth0")
    host.kernel.lease_by_someone(3, ifindex=5, nsid=3)      # someone leases queue 3 to it too
    caplog.set_level(logging.WARNING, "irqtune")
    tuner.restore_all()
    assert host.kernel.deleted == []
    messages = warned(caplog)
    assert any("leases of rx queues 2 to pod-a/nk0 stay" in m and "rx queues 3 leased by "
               "someone else" in m for m in messages), messages
    # the channel restore meets the kernel's refusal, in one line naming it
    assert ("eth0: cannot restore channels: a leased rx queue is in the way (EINVAL: Device "
            "queue in use due to queue leasing): the kernel ends a lease only with its netkit "
            "device") in messages, messages


@pytest.mark.parametrize("setup, expected", [
    (dict(kind="veth"), "refused (EINVAL: Device does not support queue creation): the lessee "
                        "must be a netkit device; left as it is"),
    (dict(kind="netkit-primary"), "not possible (EOPNOTSUPP: netkit can only lease against the "
                                  "peer device): name the netkit peer inside the container, not "
                                  "the pair's primary; left as it is"),
    (dict(rx_max=1), "refused (EINVAL: netkit maximum queue limit reached): the netkit device "
                     "has no rx queue left"),
])
def test_kernel_refusals_are_one_line_naming_the_lease_and_what_to_do(host, caplog, setup,
                                                                       expected):
    caplog.set_level(logging.WARNING, "irqtune")
    host.kernel.add("pod-a", "nk0", ifindex=5, **setup)
    tuner = host.tuner()
    tuner.apply("eth0")
    tuner.apply_new("eth0")
    lines = [m for m in warned(caplog) if "rx queue 2 lease to pod-a/nk0" in m]
    assert len(lines) == 1 and "\n" not in lines[0], warned(caplog)
    assert lines[0].startswith("eth0: rx queue 2 lease to pod-a/nk0: " + expected), lines
    assert host.ledger()["eth0"]["leases"] == []
    assert not lease_checks(tuner)["rx queue 2 lease"].ok


def test_a_lender_without_queue_management_ops_is_one_line(tmp_path, caplog):
    host = Host(tmp_path, lender_ops=False)          # virtio-net, igb
    host.kernel.add("pod-a", "nk0", ifindex=5)
    caplog.set_level(logging.WARNING, "irqtune")
    host.tuner().apply("eth0")
    assert [m for m in warned(caplog) if "lease" in m] == [
        "eth0: rx queue 2 lease to pod-a/nk0: refused (EINVAL: Lease device does not support "
        "queue management operations): the NIC's driver has no queue management ops "
        "(virtio-net, igb): lease from one that has them (mlx5, bnxt, fbnic, gve; netdevsim); "
        "left as it is"]


def test_a_queue_not_among_the_reserved_ones_is_refused_and_the_others_leased(host, caplog):
    caplog.set_level(logging.WARNING, "irqtune")
    host.kernel.add("pod-a", "nk0", ifindex=5)
    host.kernel.add("pod-b", "eth0", ifindex=6, nsid=4)
    tuner = host.tuner(leases="1:pod-b/eth0 3:pod-a/nk0")
    tuner.apply("eth0")
    assert warned(caplog) == [
        "eth0: rx queue 1 lease to pod-b/eth0: queue 1 is not among the reserved rx queues "
        "(2-3): lease one of those, or reserve more (queues); left as it is"]
    assert host.kernel.leases == {3: QueueLease(5, 1, 3)}


def test_a_kernel_without_queue_create_is_one_line_and_the_rest_applies(tmp_path, caplog):
    host = Host(tmp_path, missing="the kernel has no netdev queue-create operation (queue "
                                  "leases to netkit devices need Linux >= 7.1)")
    host.kernel.add("pod-a", "nk0", ifindex=5)
    caplog.set_level(logging.WARNING, "irqtune")
    tuner = host.tuner()
    tuner.apply("eth0")
    tuner.apply_new("eth0")
    assert warned(caplog) == [
        "eth0: queue leases: the kernel has no netdev queue-create operation (queue leases to "
        "netkit devices need Linux >= 7.1); left as it is"]
    assert host.nic.count == 4 and host.nic.split_config == 2        # the rest applied
    assert lease_checks(tuner) == {}
    tuner.restore_all()
    assert host.nic.count == 2


def test_a_busy_queue_is_one_line(host, caplog):
    host.kernel.add("pod-a", "nk0", ifindex=5)
    host.kernel.fail_create = NetlinkRequestError(
        "leasing", errno.EBUSY, Extack("Device queue in use by memory provider"))
    caplog.set_level(logging.WARNING, "irqtune")
    host.tuner().apply("eth0")
    assert warned(caplog) == [
        "eth0: rx queue 2 lease to pod-a/nk0: the queue is in use (EBUSY: Device queue in use "
        "by memory provider): memory is bound to it (devmem, io_uring zcrx); left as it is"]


@pytest.mark.parametrize("value", ["2:pod a/nk0", "2:pod-a", "x:pod-a/nk0", "2:../nk0",
                                   "2:pod-a/nk0 2:pod-b/nk0", "70000:pod-a/nk0",
                                   "2:pod-a/averyveryverylongname"])
def test_bad_lease_values_name_the_option_value_and_what_is_accepted(value):
    config, errors = ZeroCopyConfig.from_options({"queue_leases": value})
    assert len(errors) == 1 and config.leases == ()
    text = str(errors[0])
    assert text.startswith("queue_leases: invalid value") and "QUEUE:NAMESPACE/DEVICE" in text


class LenderQueues:
    """LeaseFamily's place for held_leases: the lender's leases by ifindex."""

    def __init__(self, by_ifindex):
        self.by_ifindex = by_ifindex

    def __call__(self):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def leases(self, ifindex):
        return self.by_ifindex.get(ifindex, {})


def test_held_leases_name_the_namespace_and_device_where_they_can(monkeypatch):
    from irqtune.features.zerocopy import leases as module
    monkeypatch.setattr(module.netdev, "LeaseFamily", LenderQueues({7: {
        2: QueueLease(5, 1, 3, 8194), 3: QueueLease(6, 1, 9, 8195)}}))
    monkeypatch.setattr(module.netns, "named_ids", lambda: {3: "pod-a"})
    monkeypatch.setattr(module.netns, "device_name", lambda ns, i: {("pod-a", 5): "nk0"}[ns, i])
    held = [lease.describe() for lease in module.held_leases({"eth0": 7})]
    assert held == ["eth0 rx queue 2 -> pod-a/nk0 rx queue 1, NAPI 8194",
                    "eth0 rx queue 3 -> ifindex 6 in namespace id 9 rx queue 1, NAPI 8195"]


def test_status_shows_each_lease_on_one_line_with_names_escaped(monkeypatch, capsys):
    from irqtune.frontends import status
    from irqtune.features.zerocopy import HeldLease
    from irqtune.kernel.caps import NapiCapabilities

    class NoNapis(LenderQueues):
        def napis(self, ifindex):
            return []
    monkeypatch.setattr(status, "detect_napi_capabilities",
                        lambda: NapiCapabilities(netdev_family=True, napi_get=True))
    monkeypatch.setattr(status, "interfaces", lambda: {"eth0": 7})
    monkeypatch.setattr(status, "NapiFamily", NoNapis({}))
    monkeypatch.setattr(status, "held_leases", lambda devices: [
        HeldLease("eth0", 2, 8194, "pod\x1b[2J", 3, "nk0", 5, 1)] if devices == {"eth0": 7} else [])
    assert status.table([]) == 0
    leases = [l for l in capsys.readouterr().out.splitlines() if l.startswith("lease: ")]
    assert leases == ["lease: eth0 rx queue 2 -> $'pod\\x1b[2J'/nk0 rx queue 1, NAPI 8194"]


def test_metrics_export_one_sample_per_leased_queue_and_no_family_without(monkeypatch):
    from irqtune.features.zerocopy import HeldLease
    from irqtune.frontends import metrics
    held = [HeldLease("eth0", 2, 8194, "pod-a", 3, "nk0", 5, 1),
            HeldLease("eth0", 3, None, None, 9, None, 6, 1)]
    monkeypatch.setattr(metrics, "held_leases", lambda devices: held if devices else [])
    fam = {}
    metrics._lease_state(fam, {}, "init")
    assert fam == {}
    metrics._lease_state(fam, {"eth0": 7}, "init")
    text = metrics.render(list(fam.values()))
    assert ('irqtune_queue_lease_info{device="eth0",lessee="nk0",lessee_netns="pod-a",'
            'lessee_queue="1",napi="8194",netns="init",queue="2"} 1') in text, text
    assert 'lessee="ifindex 6",lessee_netns="id 9"' in text


def test_the_doctor_names_each_leased_queue_in_one_info_line(monkeypatch):
    from irqtune.features.zerocopy import HeldLease
    from irqtune.frontends import doctor
    monkeypatch.setattr(doctor, "held_leases", lambda devices: [
        HeldLease("eth0", 2, 8194, "pod-a", 3, "nk0", 5, 1)] if devices == {"eth0": 7} else [])
    report = doctor.Report()
    doctor._leases(report, {"eth0": 7})
    assert doctor.format_text(report).splitlines()[0] == (
        "info    napi     eth0: leased: eth0 rx queue 2 -> pod-a/nk0 rx queue 1, NAPI 8194")


def test_a_lease_made_for_an_earlier_value_stays_ours_and_ends_on_unapply(host, caplog):
    host.kernel.add("pod-a", "nk0", ifindex=5)
    host.kernel.add("pod-b", "nk0", ifindex=6, nsid=4)
    host.tuner(leases="2:pod-a/nk0").apply("eth0")
    # the daemon restarts with the option changed: queue 2 to pod-b now
    caplog.set_level(logging.WARNING, "irqtune")
    caplog.clear()
    second = host.tuner(leases="2:pod-b/nk0")
    second.apply("eth0")
    assert warned(caplog) == [
        "eth0: rx queue 2 lease to pod-b/nk0: queue 2 is leased to pod-a/nk0, as irqtune set it "
        "before the option changed; that lease ends when the profile is unapplied; left as it is"]
    assert host.kernel.created == [("pod-a", 5, 2)]
    second.restore_all()
    assert host.kernel.deleted == [("pod-a", "nk0")] and host.nic.count == 2
