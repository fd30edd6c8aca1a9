# SPDX-License-Identifier: GPL-2.0-or-later
"""Fakes of kernel interfaces, for unit tests and for the crash harness's
fixtures where no real kernel object exists on the test host - never for
integration tests, which use the real thing.

  netdev      the netdev generic netlink family (napi-get/-set, queue-get)
  gsim        GSIM's procfs/sysfs files and the kernel's write rules
  ethtool     a NIC's ethtool netlink state and its ntuple rule table
  interrupts  /proc/interrupts of a virtio-net NIC
  channels    a driver's channels and its queue IRQs' affinity
  optin       a root for the service opt-in (systemd's directories, the library)
  replay      a netlink family answering with the kernel's recorded replies

A fake written for one test module stays in that module; one that several
use is here (test modules never import each other; fixtures are in the
suites' conftest.py).
"""
