# SPDX-License-Identifier: GPL-2.0-or-later
"""Features, one per kernel mechanism, each a tuner with its options:
per-NAPI deferral and suspension (napi), housekeeping NIC queues
(channels), GSIM (gsim), zero-copy receive (zerocopy), the services'
busy-poll opt-in (service_optin).

A feature imports the services and kernel access, never another feature
(.importlinter).
"""
