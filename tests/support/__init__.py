# SPDX-License-Identifier: GPL-2.0-or-later
"""What the test suites share (on pytest's path as `support`)."""
