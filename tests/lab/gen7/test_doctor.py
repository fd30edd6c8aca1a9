# SPDX-License-Identifier: GPL-2.0-or-later
"""`irqtune doctor --service memcached` on Linux 7.2 under systemd.

Stock memcached runs as a systemd service in the guest, latency-suspend
(TuneD 2.27) opts it in through the preload and sets the NIC's four NAPIs.
The host drives it through the tap with the open-loop generator
(tests/lab/loadgen.py) while the installed `irqtune doctor` reads it:
virtio-net has real MSI-X queue vectors and per-queue statistics, so the
window shows per-NAPI interrupts/s and rx packets/s.

Engaged: one connection (one rx queue, one worker's epoll instance), the
verdict "suspension engaged", exit 0, and the recommend link: memcached's
busy periods measured over the window and values that cover one request
and its largest batch (issue 32).  Then each link broken in turn,
each named as the first broken link with exit 1:
- the preload missing (the profile without optin_services, memcached
  restarted without it);
- deferral off (defer_hard_irqs=0 in the profile's variables);
- two NAPIs behind one epoll instance (memcached with one worker thread,
  eight connections spread over the rx queues).

How eight connections reach several rx queues here: the multi-queue tap
sends each flow to the guest on the queue the guest last transmitted it
from.  With virtio-net's default XPS (one tx queue per vCPU) every reply
of a single worker leaves on its vCPU's queue, so all its flows converge
on one rx queue and follow the thread when it migrates: the doctor's
snapshot then sees one NAPI (the 7.2 lab on an idle host, 2026-11-25:
"7 socket(s), all from NAPI 10" while the window showed all four queues
busy).  The test switches XPS off, so each connection transmits on the
queue of its flow hash and keeps it, and puts XPS back afterwards.
"""

import json
import time

import pytest

VARS = "latency-suspend"
# The load outlasts the doctor by far: under TCG, on a host running other
# guests too, its Python start, netlink reads and the 4 s window took 22-45 s
# with the load running, and a doctor that arrives after the load finds no
# connection.
RATE, SECONDS = 8000, 75
GRO_MAX_NS = 1000000        # the recommendation's bound (docs/tuning.md)
MEMCACHED_CONF = "/etc/memcached.conf"


@pytest.fixture
def h(host7):
    host7.off()
    host7.serve_memcached_on_nic()
    yield host7
    host7.sh("sed -i '/^-t 1$/d' %s && systemctl restart memcached" % MEMCACHED_CONF)
    host7.off()


def suspend(h, **extra):
    v = {"suspend_nics": h.nic, "optin_services": "memcached", "optin_restart": "true"}
    v.update(extra)
    return {VARS: v}


def doctor_under_load(h, conns=1):
    """The doctor's JSON report, read while the host loads memcached; the
    load's answers show memcached kept serving meanwhile."""
    load = h.start_memcached_load(rate=RATE, seconds=SECONDS, conns=conns)
    try:
        t0 = time.monotonic()
        rc, out = h.run("sh", "-c", "sleep 3; irqtune doctor --service memcached --seconds 4 "
                        "--json", timeout=SECONDS + 120)
        print("doctor finished %.1f s into the %d s load" % (time.monotonic() - t0, SECONDS))
        assert load.poll() is None, "the load ended before the doctor: its reading proves nothing"
    finally:
        lout, lerr = load.communicate(timeout=SECONDS + 120)
    assert load.returncode == 0, lout + lerr
    res = json.loads(lout)
    start = out.find("{")
    assert start >= 0, out
    report, _ = json.JSONDecoder().raw_decode(out[start:])   # stderr may follow
    for l in report["links"]:
        print("%-7s %-8s %s: %s%s" % (l["state"], l["group"], l["subject"], l["text"],
                                      "\n                 fix: " + l["fix"]
                                      if l["fix"] and l["state"] != "ok" else ""))
    print("verdict:", report["verdict"], "(exit %d); load:" % rc, json.dumps(res))
    print("doctor --json:", json.dumps(report))
    assert res["answered"] >= 0.9 * res["sent"], res
    return rc, report


def first_broken(report):
    return next((l for l in report["links"] if l["state"] == "broken"), None)


def test_engaged_for_the_opted_in_memcached(h):
    h.profile(h.lab_profile(), variables=suspend(h))
    pid_before = h.sh("systemctl show -p MainPID --value memcached").strip()
    rc, report = doctor_under_load(h)
    assert (rc, report["verdict"]) == (0, "suspension engaged"), report
    assert h.sh("systemctl show -p MainPID --value memcached").strip() == pid_before
    process = [l for l in report["links"] if l["group"] == "process"]
    assert process and all(l["state"] == "ok" for l in process), process
    assert "libirqtune-busypoll.so is loaded" in process[0]["text"]
    napis = [l for l in report["links"] if l["group"] == "napi" and l["state"] == "ok"
             and "deferral on" in l["text"]]
    assert napis, report
    drift = [l for l in report["links"] if l["group"] == "napi" and "holds what profile" in l["text"]]
    assert drift, report
    window = [l for l in report["links"] if l["group"] == "window" and l["state"] == "ok"]
    assert window and window[0]["data"]["busy_share"] >= 0.05, report
    # virtio-net: every NAPI has its queue vector, counted in the window
    per_napi = [l for l in report["links"] if l["group"] == "window" and l["state"] == "info"]
    assert len(per_napi) == 4 and all(l["data"]["irq"] is not None for l in per_napi), per_napi
    # the recommend link: memcached's busy periods measured through the
    # epoll tracepoints over the same window, and values that cover them
    print("measured:", json.dumps(report["measured"]), "\nrecommend:", json.dumps(report["recommend"]))
    m, r = report["measured"], report["recommend"]
    assert m["busy_periods"] >= 100 and m["lost_samples"] == 0, m
    assert r, report
    link = [l for l in report["links"] if l["group"] == "recommend"]
    assert len(link) == 1 and [x.split("=")[0] for x in link[0]["data"]["lines"]] == [
        "gro_flush_timeout", "irq_suspend_timeout", "defer_hard_irqs"], link
    # gro_flush_timeout covers one request up to its 1 ms bound; under TCG
    # beside other work a request's p99 can exceed it (the vCPU waits for a
    # host core mid-request), and the line says it was held at the bound
    assert r["gro_flush_timeout_ns"] >= min(m["event_ns"]["p99"], GRO_MAX_NS), (m, r)
    if m["event_ns"]["p99"] > GRO_MAX_NS:
        assert r["gro_flush_timeout_ns"] == GRO_MAX_NS and "held at its bound" in link[0]["text"], link
    assert r["irq_suspend_timeout_ns"] >= max(m["batch_ns"]["p99"], 2 * r["gro_flush_timeout_ns"]), (m, r)
    assert r["irq_suspend_timeout_ns"] >= r["gro_flush_timeout_ns"] * m["batch_events"]["max"], (m, r)


def test_metrics_of_the_tuned_guest(h):
    """`irqtune metrics` on virtio-net under latency-suspend with memcached
    opted in: queue vector interrupts and qstats rx packets per NAPI, the
    profile's [napi] unit verified, memcached's preload state."""
    h.profile(h.lab_profile(), variables=suspend(h))
    h.memcached_load(rate=1000, seconds=2)
    rc, out = h.run("irqtune", "metrics", h.nic)
    assert rc == 0, out
    print(out)
    lines = out.splitlines()

    def napi_samples(name):
        return [l for l in lines if l.startswith(name + "{") and 'device="%s"' % h.nic in l]
    assert len(napi_samples("irqtune_napi_interrupts_total")) == 4, out
    rx = napi_samples("irqtune_napi_rx_packets_total")
    assert len(rx) == 4 and sum(float(l.split()[-1]) for l in rx) > 0, out
    assert len([l for l in napi_samples("irqtune_napi_profile_match") if l.endswith(" 1")]) == 4
    assert any(l.startswith("irqtune_unit_verified{") and 'unit="napi"' in l and l.endswith(" 1")
               for l in lines), out
    assert any(l.startswith("irqtune_optin_preload_loaded{") and
               'service="memcached.service"' in l and l.endswith(" 1") for l in lines), out
    assert lines[-1] == "# EOF"
    # the packaged unit (make install put it there) writes the textfile as
    # its unprivileged user into its own directory, which node_exporter's
    # textfile directory links to
    metrics_file = "/var/lib/irqtune-metrics/irqtune.prom"
    h.sh("systemctl daemon-reload && systemctl start irqtune-metrics.service")
    text = h.g.read_file(metrics_file)
    assert "# TYPE irqtune_napi_interrupts_total counter" in text, text
    assert "# EOF" not in text        # the Prometheus text format for *.prom
    assert h.sh("stat -c '%%U %%a' %s" % metrics_file).split() == ["irqtune-metrics", "644"]
    assert h.sh("readlink /var/lib/prometheus/node-exporter/irqtune.prom").strip() == metrics_file


def test_preload_missing_is_named(h):
    h.profile(h.lab_profile(), variables={VARS: {"suspend_nics": h.nic}})
    h.sh("systemctl restart memcached")
    assert "libirqtune-busypoll.so" not in h.main_pid_maps("memcached")
    rc, report = doctor_under_load(h)
    broken = first_broken(report)
    assert rc == 1 and broken["group"] == "process", report
    assert "the preload is not loaded" in broken["text"], broken
    assert "optin_services=memcached" in broken["fix"], broken


def test_deferral_off_is_named(h):
    h.profile(h.lab_profile(), variables=suspend(h, defer_hard_irqs="0"))
    rc, report = doctor_under_load(h)
    broken = first_broken(report)
    assert rc == 1 and broken["group"] == "napi", report
    assert "deferral is off (defer-hard-irqs is 0)" in broken["text"], broken


def xps(h, masks=None):
    """{xps_cpus path: mask} of the NIC's tx queues; with masks, write them."""
    base = "/sys/class/net/%s/queues" % h.nic
    paths = ["%s/%s/xps_cpus" % (base, q) for q in h.sh("ls %s" % base).split() if q.startswith("tx-")]
    if masks is None:
        return {p: h.g.read_file(p).strip() for p in paths}
    for p in paths:
        h.write(p, masks[p] if isinstance(masks, dict) else masks)


def test_two_napis_behind_one_epoll_instance_are_named(h):
    h.sh("echo '-t 1' >> %s" % MEMCACHED_CONF)
    h.profile(h.lab_profile(), variables=suspend(h))      # restarts memcached with -t 1
    original = xps(h)
    xps(h, "0")
    try:
        rc, report = doctor_under_load(h, conns=8)
    finally:
        xps(h, original)
    broken = first_broken(report)
    assert rc == 1 and broken["group"] == "epoll", report
    assert len(broken["data"]["napi_ids"]) >= 2, broken
    assert "SO_INCOMING_CPU" in broken["fix"], broken


def test_bad_input_is_one_line(h):
    rc, out = h.run("irqtune", "doctor", "--service", "no-such-unit.service")
    assert rc == 2 and out.strip().splitlines() == [
        "irqtune doctor: --service no-such-unit.service: no such unit "
        "(systemctl show: LoadState=not-found)"], out
