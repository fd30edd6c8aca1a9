# SPDX-License-Identifier: GPL-2.0-or-later
"""irqtune-bench: the IRQ suspension series' memcached benchmark (the
v9 cover letter's eleven modes), run against a server with the NIC under
test from a client host - on an administrator's own hardware over ssh
(`irqtune-bench run`), on this machine's own kernel (`irqtune-bench
local`), or inside the project's QEMU lab
(tests/lab/bench/memcached_modes.py), with one set of modes, read-backs,
load schedule, JSON, table and plots.

Modules, from the top (bench/.importlinter holds them to it):
  cli           the irqtune-bench command: argument parsing, dispatch
  orchestrator  run and check on the orchestrating host
  ssh           the testbed of two real hosts reached over ssh
  netns         the testbed on this machine's own kernel: network
                namespaces and a veth pair (irqtune-bench local)
  runner        the schedule: saturation search, interleaved rounds, the
                server's changes and their undos
  preflight     what check judges, one finding a line
  saved         report, compare and docs of a saved run, read bounded
  docs          docs/benchmarks.md's run-derived part
  runschema     the one schema of a saved run
  report        cells, table, verdicts, plots, the before/after spread table
  findings      the controls' lines, slice outliers, auto's values, the
                step test
  server        what runs on the server: the read-back, the server's facts,
                the incoming connections' NAPIs, the instruction counter
  client        what runs on the client: connections held for steering
  netlink       napi-get, queue-get, qstats-get without the library under test
  servervalues  what the server's files accept of the values the bench writes
  stats         the load generator's histograms, the verdicts' intervals
  placement     where threads ran: /proc/PID/task parsing, pinning, windows
  modes         the modes, who sets what, the read-back check
  files         the one writer and reader of local files
  guard         BadArgument, BenchError and the output guard shown()

The orchestrator's side (orchestrator, ssh, runner, preflight) and what
runs on the hosts (server, client, netlink) import nothing of each other;
what both need lies below both.
"""
