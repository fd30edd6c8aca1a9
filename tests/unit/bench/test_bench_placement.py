# SPDX-License-Identifier: GPL-2.0-or-later
"""Where the lab's QEMU threads may run and ran (bench/irqtune_bench/placement.py).

Fixture bench_fixtures/qemu-pinned: copied from a running `make lab-bench
--topology both` (2026-11-26; host kernel 6.18, QEMU 7.2 with -name
...,debug-threads=on, a 4-vCPU Linux 7.2 guest): comm, stat, status and
schedstat of each of QEMU's threads, and /proc/stat, 2 s apart
(before/, after/), with the bench's pinning in place - "CPU 2/TCG" (the
serving vCPU) on host CPU 1, every other thread on CPU 0.
"""

from pathlib import Path

import pytest

from irqtune_bench import placement

FIX = Path(__file__).resolve().parent / "bench_fixtures" / "qemu-pinned"
PID, SERVING_TID = 1442, 1448


def snap(which):
    return placement.snapshot(PID, proc=str(FIX / which))


def test_snapshot_reads_every_thread():
    s = snap("after")
    assert len(s) == 11
    assert {tid: t["comm"] for tid, t in s.items() if t["comm"].startswith("CPU")} == \
        {1446: "CPU 0/TCG", 1447: "CPU 1/TCG", 1448: "CPU 2/TCG", 1449: "CPU 3/TCG"}
    assert s[SERVING_TID]["cpus"] == [1]
    assert all(t["cpus"] == [0] for tid, t in s.items() if tid != SERVING_TID)
    assert s[SERVING_TID]["run_ns"] == 82873833542 and s[SERVING_TID]["wait_ns"] == 47014231261
    assert s[SERVING_TID]["last_cpu"] == 1 and s[SERVING_TID]["utime"] == 8015


def test_stat_fields_count_from_the_last_parenthesis():
    line = (FIX / "after" / str(PID) / "task" / str(SERVING_TID) / "stat").read_text()
    odd = line.replace("(CPU 2/TCG)", "(a) b (c d)")
    assert placement.parse_stat(odd) == placement.parse_stat(line)
    assert placement.parse_stat(line)["last_cpu"] == 1


def test_vcpu_threads_and_the_plan():
    s = snap("after")
    assert placement.vcpu_threads(s) == {0: 1446, 1: 1447, 2: 1448, 3: 1449}
    wanted = placement.plan(s, [2], [1], [0])
    assert wanted[SERVING_TID] == [1]
    assert all(cpus == [0] for tid, cpus in wanted.items() if tid != SERVING_TID)
    assert set(wanted) == set(s)
    with pytest.raises(ValueError, match=r"vCPU\(s\) \[7\].*debug-threads=on"):
        placement.plan(s, [7], [1], [0])


def test_plan_refuses_a_qemu_without_thread_names():
    s = {tid: dict(t, comm="qemu-system-x86") for tid, t in snap("after").items()}
    with pytest.raises(ValueError, match="debug-threads"):
        placement.plan(s, [2], [1], [0])


def test_window_of_the_serving_thread_and_its_core():
    before, after = snap("before"), snap("after")
    ct0 = placement.cpu_times((FIX / "before" / "stat").read_text())
    ct1 = placement.cpu_times((FIX / "after" / "stat").read_text())
    w = placement.window(before, after, 2.0, [SERVING_TID], [1], ct0, ct1, hz=100)
    # schedstat: run 82419487502 -> 82873833542 ns, wait 47000510902 -> 47014231261 ns
    assert w["serving_run_ms"] == pytest.approx(454.3, abs=0.05)
    assert w["serving_wait_ms"] == pytest.approx(13.7, abs=0.05)
    assert w["serving_wait_pct"] == pytest.approx(0.69, abs=0.005)
    # cpu1: user 170374 -> 170429, system 95322 -> 95324 ticks: 570 ms busy,
    # of which the serving vCPU ran 454.3 ms; steal 548 -> 548
    assert w["serving_cpu_other_ms"] == pytest.approx(115.7, abs=0.05)
    assert w["serving_cpu_steal_ms"] == 0
    rows = {t["tid"]: t for t in w["threads"]}
    assert rows[SERVING_TID]["cpus"] == [1] and rows[SERVING_TID]["run_ms"] == pytest.approx(454.3, abs=0.05)


def test_no_core_figures_when_the_thread_may_run_elsewhere():
    before, after = snap("before"), snap("after")
    after[SERVING_TID] = dict(after[SERVING_TID], cpus=[0, 1])
    ct = placement.cpu_times((FIX / "after" / "stat").read_text())
    w = placement.window(before, after, 2.0, [SERVING_TID], [1], ct, ct)
    assert w["serving_cpu_other_ms"] is None and w["serving_wait_ms"] == pytest.approx(13.7, abs=0.05)


def test_cpu_times_and_lists():
    ct = placement.cpu_times((FIX / "after" / "stat").read_text())
    assert ct == {0: {"busy": 168793 + 87610 + 83844 + 0 + 7994, "steal": 436},
                  1: {"busy": 170429 + 91402 + 95324 + 0 + 8142, "steal": 548}}
    assert placement.cpu_list("0-2,5") == {0, 1, 2, 5} and placement.cpu_list("\n") == set()
    lines = placement.describe(placement.window(snap("before"), snap("after"), 2.0, [])["threads"])
    assert lines[0].split() == ["tid", "thread", "allowed", "last", "run", "ms", "wait", "ms"]
    assert any("CPU 2/TCG" in line and " 1 " in line for line in lines[1:])


def test_a_kernel_without_sched_info_gives_no_wait_rather_than_zero(tmp_path):
    """The lab's guest kernel has no CONFIG_SCHED_INFO: no schedstat files."""
    import shutil
    for which in ("before", "after"):
        shutil.copytree(FIX / which, tmp_path / which)
        for f in (tmp_path / which).glob("*/task/*/schedstat"):
            f.unlink()
    before = placement.snapshot(PID, proc=str(tmp_path / "before"))
    after = placement.snapshot(PID, proc=str(tmp_path / "after"))
    assert len(after) == 11 and after[SERVING_TID]["wait_ns"] is None
    ct = placement.cpu_times((FIX / "after" / "stat").read_text())
    w = placement.window(before, after, 2.0, [SERVING_TID], [1], ct, ct)
    assert (w["serving_wait_pct"], w["serving_run_ms"], w["serving_cpu_other_ms"]) == (None, None, None)
    assert "-" in placement.describe(w["threads"])[1]
