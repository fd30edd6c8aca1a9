# SPDX-License-Identifier: GPL-2.0-or-later
"""What the test suites share (on pytest's path as `support`).

  commands     run(): a command with its output captured as text
  waiting      wait_for(): polling for a condition with a deadline
  netns        network namespaces with veth NAPIs (NetNs, entered())
  rawnapi      the NAPI reader the tests judge the library by
  tuned_daemon TuneD's daemon started in a namespace (TunedDaemon)
  hostguard    the host's TuneD state kept out of the way and put back
  labvm        the lab's guests from the host side: netns, tap, QEMU, agent
  host7        a generation-7 guest as an administrator's host (tuned-adm)
  rtlab        the realtime guest, and its judgements of placement and latency
  tuned_loader the repository's plugins and profile functions loaded into TuneD
  profiles     the repository's profiles loaded by TuneD's loader, and their problems

Suites import from here, never from each other's directories.
"""
