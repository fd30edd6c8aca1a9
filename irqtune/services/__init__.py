# SPDX-License-Identifier: GPL-2.0-or-later
"""Shared services, over kernel access: the ledger of originals (ledger),
the tuner contract (tuner), option declarations (options), overlay
variables files (overlay), systemd (systemd), the NAPI counters and the
doctor's window over them (counters, window), a process's epoll instances
(epoll, retag) and the measurement of a service's epoll waits (measure/).

Imports kernel access only (.importlinter).
"""
