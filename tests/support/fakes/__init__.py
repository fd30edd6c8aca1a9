# SPDX-License-Identifier: GPL-2.0-or-later
"""Fakes of kernel interfaces, for unit tests and for the crash harness's
fixtures where no real kernel object exists on the test host - never for
integration tests, which use the real thing.

  netdev      the netdev generic netlink family (napi-get/-set, queue-get)
  gsim        GSIM's procfs/sysfs files and the kernel's write rules
  ethtool     a NIC's ethtool netlink state and its ntuple rule table
  interrupts  /proc/interrupts of a virtio-net NIC

A fake written for one test module stays in that module.
"""
