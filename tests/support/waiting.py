# SPDX-License-Identifier: GPL-2.0-or-later
"""Polling for a condition with a deadline, for every suite."""

import time


def wait_for(predicate, timeout=20.0, interval=0.2, what="condition"):
    """predicate()'s first true value, or AssertionError naming what after timeout s."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(interval)
