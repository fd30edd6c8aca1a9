# SPDX-License-Identifier: GPL-2.0-or-later
"""irqtune.shared.measure and the doctor's recommend link, on fixtures.

Fixtures in measure_fixtures/, from Linux 6.18 of the development host
(Debian 12 userland), both from the same boot (tracepoint ids are
per boot):
- events/syscalls/sys_{enter,exit}_epoll_{wait,pwait,pwait2}/format:
  the tracefs format files, copied with cat;
- ring-epoll-6.18.bin: the bytes irqtune.shared.measure.perf copied out of one
  CPU's ring buffer while a Python process (epoll over three pipes) did:
  all three pipes written, wait (3 events), spin 2 ms, wait with timeout
  0 (none), one pipe written, wait (1 event), spin 1 ms, wait (none).
"""

import errno
import math
import os
import struct

import pytest

from irqtune.frontends.doctor.links import Report, format_text
from irqtune.frontends.doctor import recommend as doctor_recommend
from irqtune.kernel.errors import IrqtuneError, describe_os_error, errno_error
from irqtune.shared.measure import busy, epolltrace, perf, recommend, tracefs
from irqtune.shared.measure.epolltrace import Recorded
from irqtune.kernel.values import format_duration_ns, parse_duration_ns

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(os.path.dirname(HERE), "measure_fixtures")


def busy_periods(samples, decoder):
    """(Periods, largest maxevents seen) of (tid, time ns, raw) samples in
    any order, all drained at once through the window's Tracker."""
    tracker = busy.Tracker(decoder, max_pending=float("inf"))
    tracker.add(samples)
    tracker.finish()
    return tracker.periods, tracker.maxevents


def formats():
    return tracefs.read_formats(FIX, "syscalls", busy.TRACEPOINTS)


def ring_fixture():
    with open(os.path.join(FIX, "ring-epoll-6.18.bin"), "rb") as f:
        return f.read()


# -- tracefs ------------------------------------------------------------------

def test_formats_from_real_tracefs():
    found = formats()
    assert sorted(found) == sorted(busy.TRACEPOINTS)
    assert found["sys_exit_epoll_wait"]["id"] == 1068
    assert found["sys_exit_epoll_pwait2"]["fields"]["ret"] == [16, 8, True]
    assert found["sys_enter_epoll_pwait"]["fields"]["maxevents"] == [32, 8, False]
    assert found["sys_enter_epoll_wait"]["fields"]["common_pid"] == [4, 4, True]


def test_formats_read_through_a_detached_mount_without_fork(monkeypatch):
    """Where tracefs is mounted nowhere: read through a mount attached
    nowhere, never by forking TuneD's threaded daemon; the mounts stay."""
    def no_fork():
        raise AssertionError("forked")
    monkeypatch.setattr(os, "fork", no_fork)
    with open("/proc/self/mounts") as f:
        before = f.read()
    try:
        found = tracefs._formats_in_detached_mount("syscalls", busy.TRACEPOINTS)
    except IrqtuneError as err:
        pytest.skip("no tracefs mount here: %s" % err)     # not root, no CAP_SYS_ADMIN
    with open("/proc/self/mounts") as f:
        assert f.read() == before
    assert sorted(found) == sorted(busy.TRACEPOINTS)
    assert found["sys_enter_epoll_wait"]["fields"]["common_pid"] == [4, 4, True]


def test_tracepoints_the_kernel_lacks_are_left_out(tmp_path):
    assert tracefs.read_formats(str(tmp_path), "syscalls", busy.TRACEPOINTS) == {}


def test_tracefs_found_in_mounts():
    mounts = ("sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0\n"
              "debugfs /sys/kernel/debug debugfs rw,nosuid,nodev,noexec,relatime 0 0\n"
              "tracefs /sys/kernel/tracing tracefs rw,nosuid,nodev,noexec,relatime 0 0\n")
    assert tracefs.mounted_tracefs(mounts) == ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
    assert tracefs.mounted_tracefs("proc /proc proc rw 0 0\n") == []


def test_tracepoint_formats_are_read_once_per_process(monkeypatch):
    reads = []

    def read(system, names):
        reads.append(system)
        if len(reads) == 1:
            raise IrqtuneError("tracefs is not mounted and cannot be mounted privately")
        return {"sys_exit_epoll_wait": {"id": 1068, "fields": {}}}
    monkeypatch.setattr(tracefs, "_known", {})
    monkeypatch.setattr(tracefs, "_read", read)
    with pytest.raises(IrqtuneError):           # a failure is not kept: tried again
        tracefs.formats("syscalls", ["sys_exit_epoll_wait"])
    for _ in range(3):
        assert tracefs.formats("syscalls", ["sys_exit_epoll_wait"])["sys_exit_epoll_wait"][
            "id"] == 1068
    assert len(reads) == 2


# -- perf ---------------------------------------------------------------------

def test_attr_is_a_disabled_tracepoint_sampling_every_hit():
    attr = perf.tracepoint_attr(1068, 4096)
    fields = perf._ATTR.unpack(attr)
    assert len(attr) == 112 and fields[:5] == (perf.PERF_TYPE_TRACEPOINT, 112, 1068, 1,
                                               (1 << 1) | (1 << 2) | (1 << 10))
    flags = fields[6]
    assert flags & 1 and flags & (1 << 14) and flags & (1 << 25)     # disabled, watermark, clockid
    assert fields[7] == 4096 and fields[14] == perf.CLOCK_MONOTONIC


def test_rings_shrink_on_hosts_with_many_cpus():
    assert perf.ring_pages(2) == 128
    # 32 MiB of rings at most (4 KiB pages)
    assert perf.ring_pages(64) == 128 and perf.ring_pages(128) == 64
    assert perf.ring_pages(4096) == 8


def test_open_errors_are_named():
    # perf_event_open(2): EACCES and EPERM when kernel.perf_event_paranoid refuses
    assert describe_os_error(errno_error(errno.EACCES), perf.OPEN_MEANINGS) == (
        "not permitted (EACCES): needs root, or CAP_PERFMON with kernel.perf_event_paranoid")
    assert describe_os_error(errno_error(errno.ENOENT), perf.OPEN_MEANINGS) == (
        "the kernel has no such tracepoint (ENOENT)")
    assert describe_os_error(errno_error(errno.EMFILE), perf.OPEN_MEANINGS) == (
        "Too many open files (EMFILE)")


def test_ring_bytes_from_real_kernel():
    samples, lost = perf.records(ring_fixture())
    assert lost == 0 and len(samples) == 8
    decoder = busy.Decoder.from_formats(formats())
    kinds = [decoder.decode(raw) for _, _, raw in samples]
    assert kinds == [("enter", 8), ("exit", 3), ("enter", 1023), ("exit", 0),
                     ("enter", 8), ("exit", 1), ("enter", 1023), ("exit", 0)]
    periods, maxevents = busy_periods(samples, decoder)
    assert [(p.events, p.ns) for p in periods] == [(3, 2053655), (1, 1006808)]
    assert maxevents == 1023


def test_lost_samples_counted_and_a_cut_record_ignored():
    lost = struct.pack("=IHHQQ", perf.PERF_RECORD_LOST, 0, 24, 7, 5)
    data = ring_fixture()
    samples, dropped = perf.records(data + lost + data[:20])
    assert (len(samples), dropped) == (8, 5)


# -- busy periods -------------------------------------------------------------

ENTER_ID, EXIT_ID = 1069, 1068


def enter(tid, t, maxevents=64):
    return (tid, t, struct.pack("=HBBiiiQQQQ", ENTER_ID, 0, 0, tid, 232, 0, 3, 0, maxevents, 0))


def exit_(tid, t, ret):
    return (tid, t, struct.pack("=HBBiiiq", EXIT_ID, 0, 0, tid, 232, 0, ret))


def decoder():
    return busy.Decoder.from_formats(formats())


def test_busy_period_from_return_with_events_to_next_wait_per_thread():
    samples = [exit_(1, 100, 2), enter(2, 150), exit_(2, 160, 1), enter(1, 400),
               exit_(1, 500, 0), enter(2, 1160), enter(3, 10)]
    samples.reverse()                       # several CPUs' rings come in any order
    periods, _ = busy_periods(samples, decoder())
    assert sorted((p.tid, p.ns, p.events) for p in periods) == [(1, 300, 2), (2, 1000, 1)]


def test_returns_without_events_and_open_periods_count_nothing():
    samples = [exit_(1, 100, 0), enter(1, 200), exit_(1, 300, -4), enter(1, 400),
               exit_(1, 500, 3)]            # the last one is still busy at the window's end
    assert list(busy_periods(samples, decoder())[0]) == []


def test_a_lost_entry_drops_the_period_instead_of_stretching_it():
    samples = [exit_(1, 100, 2), exit_(1, 900, 1), enter(1, 950)]
    periods, _ = busy_periods(samples, decoder())
    assert [(p.ns, p.events) for p in periods] == [(50, 1)]
    samples = [exit_(1, 100, 2), exit_(1, 900, 0), enter(1, 950)]
    assert list(busy_periods(samples, decoder())[0]) == []


def test_other_tracepoints_are_ignored():
    assert busy.Decoder.from_formats(formats()).decode(struct.pack("=HBBi", 7, 0, 0, 1)) is None


def test_per_event_percentiles_are_over_events():
    periods = [busy.Period(1, 10000, 10)] * 20 + [busy.Period(1, 100000, 1)] * 2
    f = busy.figures(periods, 64)
    # 202 events: 200 took 1 us, 2 took 100 us -> p99 (rank 200) is 1 us
    assert f.event_ns == {"p50": 1000, "p99": 1000, "max": 100000}
    assert f.batch_ns == {"p99": 100000, "max": 100000}
    assert f.batch_events == {"max": 10} and f.busy_periods == 22


def test_nearest_rank_percentile():
    values = list(range(1, 101))
    assert busy.percentile(values, 99) == 99 and busy.percentile(values, 50) == 50
    assert busy.percentile([], 99) is None


# -- the rule -----------------------------------------------------------------

def figures(event_p99, batch_p99, events_max, periods=1000):
    return busy.Figures(periods, {"p50": event_p99 // 2, "p99": event_p99, "max": event_p99},
                        {"p99": batch_p99, "max": batch_p99}, {"max": events_max}, 64)


def test_rule_covers_a_request_and_the_largest_batch():
    rec = recommend.recommend(figures(event_p99=118000, batch_p99=944000, events_max=8))
    assert rec.gro_flush_timeout_ns == 177000                     # 1.5 x p99, whole us
    assert rec.irq_suspend_timeout_ns == 1890000                  # 2 x batch p99, 10 us
    assert rec.defer_hard_irqs == 100 and rec.notes == []
    assert rec.lines() == ["gro_flush_timeout=177us", "irq_suspend_timeout=1890us",
                           "defer_hard_irqs=100"]


def test_rule_keeps_the_ratio_at_least_the_largest_batch():
    # batches of 64 events whose time p99 happens to be short: gro x 64 wins
    rec = recommend.recommend(figures(event_p99=20000, batch_p99=100000, events_max=64))
    assert rec.gro_flush_timeout_ns == 30000
    assert rec.irq_suspend_timeout_ns == 30000 * 64


def test_rule_bounds_and_their_notes():
    fast = recommend.recommend(figures(event_p99=2000, batch_p99=3000, events_max=1))
    assert fast.gro_flush_timeout_ns == recommend.GRO_MIN_NS
    assert fast.irq_suspend_timeout_ns == 2 * recommend.GRO_MIN_NS and fast.notes == []
    slow = recommend.recommend(figures(event_p99=5000000, batch_p99=90000000, events_max=4))
    assert slow.gro_flush_timeout_ns == recommend.GRO_MAX_NS
    assert slow.irq_suspend_timeout_ns == recommend.SUSPEND_MAX_NS
    assert [n.split(":")[0] for n in slow.notes] == [
        "gro_flush_timeout held at its bound 1ms", "irq_suspend_timeout held at its bound 100ms"]


def test_too_little_traffic_gives_no_values():
    assert recommend.recommend(figures(50000, 100000, 2, periods=99)) is None
    assert recommend.recommend(figures(50000, 100000, 2, periods=100)) is not None


@pytest.mark.parametrize("ns", [10000, 177000, 1890000, 20000000, 1500, 10**9])
def test_lines_read_back_as_the_same_values(ns):
    assert parse_duration_ns("x", format_duration_ns(ns)) == ns


@pytest.mark.parametrize("ns, text", [(None, "-"), (0, "0ns"), (5500, "5.5us"),
                                      (231000, "231us"), (999999, "1ms"),
                                      (1862500, "1.86ms"), (2 * 10**9, "2s")])
def test_durations_for_people_keep_three_digits(ns, text):
    assert format_duration_ns(ns, exact=False) == text


# -- recording plumbing -------------------------------------------------------

def test_tid_filter_folds_consecutive_threads():
    assert epolltrace.tid_filter([10, 5, 6, 7]) == \
        "(common_pid>=5&&common_pid<=7)||common_pid==10"


def test_start_time_survives_a_comm_with_spaces(tmp_path):
    from irqtune.kernel.kfs import KernelFs
    (tmp_path / "42").mkdir()
    stat = "42 (a b) c) S 1 42 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 98765 0 0"
    (tmp_path / "42" / "stat").write_text(stat + "\n")
    assert epolltrace.start_time(42, KernelFs(proc=tmp_path)) == 98765
    assert epolltrace.start_time(43, KernelFs(proc=tmp_path)) is None


# -- the doctor's link --------------------------------------------------------

class FakeTrace:
    def __init__(self, recorded):
        self.recorded = recorded

    def stop(self):
        return self.recorded


def burst_periods(n=200, k=8, per_event=110000):
    return [busy.Period(7, k * per_event, k) for _ in range(n)]


def test_recommend_link_and_json():
    report = Report()
    doctor_recommend.check_service(report, FakeTrace(Recorded(3.0, 1, burst_periods(), 64)),
                                   "pid 7 (server)")
    link, = report.links
    assert (link.group, link.state) == ("recommend", "info")
    assert link.text.startswith("1 thread(s), 3.0 s: 200 busy periods; per event p50 110us, "
                                "p99 110us, max 110us; per batch p99 880us, max 880us, up to 8 "
                                "events (maxevents 64); for /etc/tuned/latency-suspend-"
                                "variables.conf:")
    d = report.as_dict()
    assert d["recommend"] == {"gro_flush_timeout_ns": 165000, "irq_suspend_timeout_ns": 1760000,
                              "defer_hard_irqs": 100}
    assert d["measured"]["event_ns"] == {"p50": 110000, "p99": 110000, "max": 110000}
    assert d["measured"]["batch_events"] == {"max": 8} and d["measured"]["busy_periods"] == 200
    text = format_text(report).splitlines()
    assert text[1:4] == ["                   gro_flush_timeout=165us",
                         "                   irq_suspend_timeout=1760us",
                         "                   defer_hard_irqs=100"]
    assert report.verdict()[0] == 0           # info: the verdict stays that of the chain


def test_a_window_that_ended_early_says_so():
    report = Report()
    doctor_recommend.check_service(report, FakeTrace(Recorded(1.2, 1, burst_periods(), 64,
                                                              truncated=True)), "pid 7 (x)")
    assert "; the window ended early, at the 200 busy periods it keeps; for " in \
        report.links[0].text


def test_too_little_traffic_is_said():
    report = Report()
    doctor_recommend.check_service(report, FakeTrace(Recorded(3.0, 2, burst_periods(n=12), 64)),
                                   "memcached")
    link, = report.links
    assert link.state == "info" and link.text.endswith(
        "12 busy periods; per event p50 110us, p99 110us, max 110us; per batch p99 880us, max "
        "880us, up to 8 events (maxevents 64): too little traffic to judge (fewer than 100 busy "
        "periods); run the doctor while the service has load, or with a longer --seconds")
    assert report.as_dict()["recommend"] is None
    assert report.as_dict()["measured"]["busy_periods"] == 12


def test_no_tracepoints_is_one_info_line():
    report = Report()
    doctor_recommend.check_service(report, "no syscall tracepoints for epoll_wait in tracefs",
                                   "pid 7 (x)")
    assert format_text(report).splitlines() == [
        "info    recommend pid 7 (x): cannot measure the service's busy periods: no syscall "
        "tracepoints for epoll_wait in tracefs",
        "verdict: suspension engaged"]


def test_a_recording_that_failed_is_one_info_line():
    class Failed:
        def stop(self):
            raise IrqtuneError("recording the epoll waits failed: ValueError: bad record")
    report = Report()
    doctor_recommend.check_service(report, Failed(), "pid 7 (x)")
    assert format_text(report).splitlines()[0] == (
        "info    recommend pid 7 (x): cannot measure the service's busy periods: recording the "
        "epoll waits failed: ValueError: bad record")


def test_target_exiting_during_the_window_cannot_tell():
    report = Report()
    doctor_recommend.check_service(report, FakeTrace(Recorded(3.0, 1, burst_periods(), 64,
                                                              exited=[7])), "pid 7 (x)")
    assert report.verdict() == (2, "cannot tell: pid 7 (x): pid 7 exited during the measured "
                                   "window")
    assert report.as_dict()["measured"] is None


def test_rounding_is_upward():
    assert recommend._round_up(177001, 1000) == 178000
    assert math.isclose(recommend._round_up(1890000, 10000), 1890000)
