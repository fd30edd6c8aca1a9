# SPDX-License-Identifier: GPL-2.0-or-later
"""The bench's read-back check (bench/irqtune_bench/modes.py, check()):
before every run, a mode counts only if the server holds it.

Fixture: lab_fixtures/bench-readback.json holds, per mode, the read-back
of a real `make lab-bench` run (Linux 7.2 guest, virtio-net with 4 rx
NAPIs; napi-get of every rx NAPI, EPIOCGPARAMS of each of memcached's
epoll instances, the epoll shim's slice, memcached's CPU affinity), as the
bench stores it in build/lab-bench.json.
"""

import json
from pathlib import Path

import pytest

from irqtune_bench import modes as bench

HERE = Path(__file__).resolve().parent

READBACK = json.loads((HERE.parent / "lab_fixtures" / "bench-readback.json").read_text())["readback"]
CPU = 2     # the bench's default vCPU for memcached


def state(readback):
    """The server-state fields check() reads, from a stored read-back (the
    fixture's runs stored memcached's CPUs as "memcached_vcpus")."""
    return {"napis": readback["napis"], "rx_queues": readback["rx_queues"],
            "epoll": readback["epoll"], "slice_ms": readback["epoll_slice_ms"],
            "affinity": readback.get("memcached_cpus", readback.get("memcached_vcpus"))}


def test_fixture_covers_every_mode():
    assert set(READBACK) == set(bench.SERIES_MODES)


@pytest.mark.parametrize("mode", sorted(READBACK))
def test_the_guest_holding_a_mode_passes(mode):
    assert bench.check(bench.MODES[mode], state(READBACK[mode]), CPU) == []


@pytest.mark.parametrize("held,wanted", [
    ("defer20", "defer50"),       # NAPI gro-flush-timeout only
    ("suspend20", "defer20"),     # irq-suspend-timeout and the epoll opt-in
    ("napibusy", "fullbusy"),     # epoll busy_poll_usecs, the slice shim
    ("suspend0", "base"),         # epoll opt-in only (NAPI values alike)
])
def test_another_mode_in_the_guest_fails_the_run(held, wanted):
    problems = bench.check(bench.MODES[wanted], state(READBACK[held]), CPU)
    assert problems
    m, h = bench.MODES[wanted], bench.MODES[held]
    text = "; ".join(problems)
    for key, attr in (("defer_hard_irqs", "defer-hard-irqs"), ("gro_flush_timeout_ns", "gro-flush-timeout"),
                      ("irq_suspend_timeout_ns", "irq-suspend-timeout")):
        assert (attr in text) == (m[key] != h[key]), (attr, text)
    assert ("epoll fd" in text) == (m["epoll"] != h["epoll"]), text
    assert ("epoll slice" in text) == (m["epoll_slice_ms"] != h["epoll_slice_ms"]), text


def test_one_napi_off_the_mode_is_named():
    st = state(READBACK["suspend20"])
    st["napis"] = [dict(n) for n in st["napis"]]
    st["napis"][-1]["irq-suspend-timeout"] = 0
    problems = bench.check(bench.MODES["suspend20"], st, CPU)
    assert problems == ["NAPI %d irq-suspend-timeout=0, mode wants 20000000" % st["napis"][-1]["id"]]


def test_memcached_unpinned_or_without_epoll_fails():
    st = state(READBACK["base"])
    assert bench.check(bench.MODES["base"], dict(st, affinity=[0, 1, 2, 3]), CPU)
    assert bench.check(bench.MODES["base"], dict(st, epoll=[]), CPU) == ["memcached holds no epoll instance"]
    assert bench.check(bench.MODES["base"], dict(st, rx_queues={}), CPU) == ["queue-get lists no rx NAPI"]
