# SPDX-License-Identifier: GPL-2.0-or-later
"""Every suite: the host's TuneD state is put back after a run that was
killed, before anything else runs (support/hostguard.py)."""

from support.pytest_hostguard import host_tuned, pytest_configure  # noqa: F401
