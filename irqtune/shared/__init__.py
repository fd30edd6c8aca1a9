# SPDX-License-Identifier: GPL-2.0-or-later
"""What the features and the front ends share, over kernel access: the
ledger, the tuner contract, option declarations, overlay variables files,
systemd, counters, epoll instances, the measurement (docs/architecture.md,
"Layers").  Named "shared", not "services": a service here is a systemd
unit."""
