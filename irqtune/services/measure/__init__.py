# SPDX-License-Identifier: GPL-2.0-or-later
"""How long a service takes per request and per batch, measured from its
epoll waits, and the IRQ suspension values that fit it.

Modules: perf (perf_event_open and its ring buffers, no perf tool
needed), tracefs (tracepoint ids and layouts), epolltrace (a bounded
window over a process's threads), busy (busy periods, decoded as the
rings drain, and their figures), recommend (the series' rule, and the
one way from a recording to values), procstat (what /proc/PID/stat
says of a process), auto (values that follow measured services).
"""
