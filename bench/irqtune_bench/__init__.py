# SPDX-License-Identifier: GPL-2.0-or-later
"""irqtune-bench: the IRQ suspension series' memcached benchmark (the
v9 cover letter's eleven modes), run against a server with the NIC under
test from a client host - on an administrator's own hardware over ssh
(`irqtune-bench run`), or inside the project's QEMU lab
(tests/lab/bench/memcached_modes.py), with one set of modes, read-backs,
load schedule, JSON, table and plots.

Modules:
  modes      the modes, who sets what, the read-back check
  server     what runs on the server: the read-back, the NIC of an
             address, the instruction counter (perf)
  netlink    napi-get, queue-get, qstats-get without the library under test
  placement  where threads ran: /proc/PID/task parsing, pinning, windows
  runner     the schedule: saturation search, interleaved rounds
  report     cells, table, verdicts, plots, the before/after spread table
  ssh        the testbed of two real hosts reached over ssh
  cli        the irqtune-bench command
"""
