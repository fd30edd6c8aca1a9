# SPDX-License-Identifier: GPL-2.0-or-later
"""`irqtune metrics`: what collect() produces - every family's name, type,
unit and labels, and every sample's value - checked without the PCP or
Prometheus stack (tests/integration/test_metrics.py runs those, on veth,
which has neither queue vectors nor per-queue statistics).

The fixtures are this project's build host (Linux 6.18.44, a QEMU x86
guest with virtio-net eth0, ifindex 4, on 0000:00:03.0 as virtio2):
/proc/interrupts, /proc/net/dev and /proc/net/netstat copied from it
(metrics_fixtures/; in netstat, TcpExt:BusyPollRxPackets changed from 0
to 812 so that the right column is seen to be read), and its napi-get,
queue-get and qstats-get answers: NAPI 257 on rx queue 0, 13241 packets.
A veth0 with two NAPIs (no queue links, no queue statistics, no line in
the /proc/net/dev copy) stands beside it.
"""

import os
import re
import socket

import pytest
from support.fakes.netdev import FakeNetdev

from irqtune.frontends import activeprofile, metrics
from irqtune.kernel.kfs import KernelFs
from support.fakes.systemd import FakeSystemd

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))    # tests/unit
INIT = "init"


def fixture(name):
    with open(os.path.join(HERE, "metrics_fixtures", name)) as f:
        return f.read()


@pytest.fixture
def host(tmp_path, monkeypatch):
    return make_host(tmp_path, monkeypatch)


def make_host(tmp_path, monkeypatch, more=()):
    """The build host; more: names of further veth-like devices (one NAPI
    each, ifindex 20 on, in /proc/net/dev with 5 packets)."""
    netdev = FakeNetdev().install(monkeypatch)
    netdev.add_device(4, 1, defer_hard_irqs=100, gro_flush_timeout=20000,
                      irq_suspend_timeout=20000000)
    netdev.qstats[4] = {0: 13241}
    netdev.add_device(9, 2, linked=False)                   # veth0: NAPIs 258, 259
    names = {"eth0": 4, "veth0": 9}
    for ifindex, name in enumerate(more, 20):
        netdev.add_device(ifindex, 1, linked=False)
        names[name] = ifindex
    monkeypatch.setattr(socket, "if_nametoindex", lambda n: _lookup(names, n))
    monkeypatch.setattr(socket, "if_indextoname",
                        lambda i: _lookup({v: k for k, v in names.items()}, i))

    proc = tmp_path / "proc"
    (proc / "net").mkdir(parents=True)
    (proc / "interrupts").write_text(fixture("interrupts-6.18"))
    (proc / "net/netstat").write_text(fixture("netstat-6.18"))
    (proc / "thread-self/net").mkdir(parents=True)
    # /proc/net/dev prints a name as the kernel holds it ("%6s:", dev_seq_printf_stats)
    (proc / "thread-self/net/dev").write_text(fixture("net-dev-6.18") + "".join(
        "%6s:%8d %7d" % (name, 300, 5) + "    0" * 6 + "\n" for name in more))
    # the caller's network namespace is PID 1's
    (proc / "1/ns").mkdir(parents=True)
    (proc / "1/ns/net").write_text("")
    (proc / "thread-self/ns").mkdir()
    os.symlink("../../1/ns/net", proc / "thread-self/ns/net")
    # memcached (pid 11) runs with the preload
    (proc / "11").mkdir()
    with open(os.path.join(HERE, "doctor_fixtures", "maps-preloaded-6.18")) as f:
        (proc / "11/maps").write_text(f.read())

    sys_root = tmp_path / "sys"
    fn = sys_root / "devices/pci0000:00/0000:00:03.0"
    (fn / "virtio2/net/eth0").mkdir(parents=True)
    os.symlink("../../../virtio2", fn / "virtio2/net/eth0/device")
    (fn / "msi_irqs").mkdir()
    for irq in (37, 38, 39):
        (fn / "msi_irqs" / str(irq)).write_text("msix\n")
    (sys_root / "class/net").mkdir(parents=True)
    os.symlink("../../devices/pci0000:00/0000:00:03.0/virtio2/net/eth0",
               sys_root / "class/net/eth0")

    etc = tmp_path / "etc"
    (etc / "profiles/latency-suspend").mkdir(parents=True)
    (etc / "active_profile").write_text("latency-suspend\n")
    (etc / "profiles/latency-suspend/tuned.conf").write_text(
        "[main]\nsummary=test\n\n"
        "[napi]\ndevices=eth0\ndefer_hard_irqs=100\ngro_flush_timeout=20us\n"
        "irq_suspend_timeout=20ms\n\n"
        "[napi_veth]\ntype=napi\ndevices=veth0\ndefer_hard_irqs=50\n\n"
        "[busy_poll_optin]\nservices=memcached\n")
    monkeypatch.setattr(activeprofile, "PROFILE_DIRS", (str(etc / "profiles"),))

    bus = FakeSystemd({"memcached.service": {"MainPID": 11}})
    return KernelFs(str(proc), str(sys_root)), str(etc), bus


def _lookup(table, key):
    if key not in table:
        raise OSError(19, "No such device")
    return table[key]


def samples(families):
    """{(sample name as rendered, frozenset of labels): value}."""
    out = {}
    for line in metrics.render(families).splitlines():
        if line.startswith("#"):
            continue
        m = re.match(r"^([a-z_]+)\{(.*)\} (\S+)$", line)
        assert m, line
        labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def labels(**kw):
    return frozenset(kw.items())


def test_every_sample_its_name_labels_and_value(host):
    kfs, etc, bus = host
    got = samples(metrics.collect(kfs=kfs, etc=etc, bus=bus))
    eth0 = dict(device="eth0", napi="257", netns=INIT)
    veth = [dict(device="veth0", napi=n, netns=INIT) for n in ("258", "259")]
    profile = dict(profile="latency-suspend")
    want = {
        ("irqtune_napi_defer_hard_irqs", labels(**eth0)): 100,
        ("irqtune_napi_gro_flush_timeout_seconds", labels(**eth0)): 20e-6,
        ("irqtune_napi_irq_suspend_timeout_seconds", labels(**eth0)): 20e-3,
        ("irqtune_napi_threaded", labels(**eth0)): 0,
        # IRQ 38 is virtio2-input.0: rx queue 0 by its name, NAPI 257 by queue-get
        ("irqtune_napi_interrupts_total", labels(irq="38", **eth0)): 6476,
        ("irqtune_napi_rx_packets_total", labels(**eth0)): 13241,
        ("irqtune_device_rx_packets_total", labels(device="eth0", netns=INIT)): 17487,
        ("irqtune_busy_poll_rx_packets_total", labels(netns=INIT)): 812,
        ("irqtune_napi_profile_match", labels(unit="napi", **profile, **eth0)): 1,
        ("irqtune_unit_verified", labels(unit="napi", netns=INIT, **profile)): 1,
        ("irqtune_unit_verified", labels(unit="napi_veth", netns=INIT, **profile)): 0,
        ("irqtune_optin_preload_loaded",
         labels(unit="busy_poll_optin", service="memcached.service", **profile)): 1,
    }
    for napi in veth:
        want[("irqtune_napi_defer_hard_irqs", labels(**napi))] = 0
        want[("irqtune_napi_gro_flush_timeout_seconds", labels(**napi))] = 0
        want[("irqtune_napi_irq_suspend_timeout_seconds", labels(**napi))] = 0
        want[("irqtune_napi_threaded", labels(**napi))] = 0
        want[("irqtune_napi_profile_match", labels(unit="napi_veth", **profile, **napi))] = 0
    assert got == want


def test_families_types_units_and_names_follow_prometheus_rules(host):
    kfs, etc, bus = host
    families = metrics.collect(kfs=kfs, etc=etc, bus=bus)
    for f in families:
        assert re.match(r"^irqtune_[a-z_]+$", f.name) and not f.name.endswith("_total"), f.name
        assert f.kind in ("gauge", "counter"), f
        assert f.unit == ("seconds" if f.name.endswith("_seconds") else ""), f
        assert f.help and "\n" not in f.help, f
        assert f.samples, "%s has no sample on this host" % f.name
    text = metrics.render(families)
    prom = metrics.render(families, openmetrics=False)
    for f in families:
        sample = f.name + ("_total" if f.kind == "counter" else "")
        assert "# TYPE %s %s" % (f.name, f.kind) in text
        assert "# TYPE %s %s" % (sample, f.kind) in prom
        assert ("# UNIT %s seconds" % f.name in text) == bool(f.unit)
        assert all(line.startswith(sample + "{") for line in text.splitlines()
                   if line.startswith(f.name) and not line.startswith(f.name + "_"))
    assert text.endswith("# EOF\n") and "# EOF" not in prom and "# UNIT" not in prom


def test_a_namespace_that_is_not_pid1s_is_named_by_its_inode(host):
    kfs, etc, bus = host
    os.unlink(os.path.join(kfs.proc, "thread-self/ns/net"))
    with open(os.path.join(kfs.proc, "thread-self/ns/net"), "w"):
        pass
    ino = os.stat(os.path.join(kfs.proc, "thread-self/ns/net")).st_ino
    got = samples(metrics.collect(["eth0"], kfs=kfs, etc=etc, bus=bus))
    netns = {dict(lbls).get("netns") for _, lbls in got} - {None}
    assert netns == {"net:[%d]" % ino}


def test_devices_asked_for_are_the_only_ones(host):
    kfs, etc, bus = host
    got = samples(metrics.collect(["veth0"], kfs=kfs, etc=etc, bus=bus))
    assert {dict(lbls).get("device") for _, lbls in got} == {"veth0", None}


# -- labels stay unique (issue 47 item 11) -------------------------------------

def series(text):
    """[(sample name, label text)] of each sample line of the exposition."""
    return [line.rsplit(" ", 1)[0] for line in text.splitlines() if not line.startswith("#")]


@pytest.mark.parametrize("openmetrics", [True, False])
def test_devices_whose_names_escape_alike_are_distinct_series(tmp_path, monkeypatch,
                                                               openmetrics):
    """A device named "q<ESC>" and one literally named "q\x1b" (the kernel
    takes both; dev_valid_name refuses only '/', ':' and blanks) in one
    namespace: Prometheus refuses a scrape that has two samples with the
    same name and labels."""
    kfs, etc, bus = make_host(tmp_path, monkeypatch, more=("q\x1b", "q\\x1b"))
    text = metrics.render(metrics.collect(kfs=kfs, etc=etc, bus=bus), openmetrics)
    lines = series(text)
    assert len(lines) == len(set(lines)), [x for x in lines if lines.count(x) > 1]
    rx = [x for x in lines if x.startswith("irqtune_device_rx_packets") and "x1b" in x]
    assert len(rx) == 2, text


def test_long_label_values_that_share_their_head_are_distinct_series():
    """Label values are whole up to a name's longest (NAME_MAX: a namespace
    under /run/netns, a unit); longer ones are cut but stay apart."""
    family = metrics.Family("irqtune_busy_poll_rx_packets", "counter", "help")
    head = "n" * 200
    for tail in ("1", "2", "x" * 300 + "1", "x" * 300 + "2"):
        family.add(1, netns=head + tail)
    lines = series(metrics.render([family]))
    assert len(set(lines)) == 4, lines
    assert 'netns="%s1"' % head in lines[0]
