# SPDX-License-Identifier: GPL-2.0-or-later
"""How long a service takes per request and per batch, measured from its
epoll waits, and the IRQ suspension values that fit it."""
