# SPDX-License-Identifier: GPL-2.0-or-later
"""Running a command the way every suite does: output captured as text."""

import subprocess


def run(*argv, check=True, **kwargs):
    return subprocess.run(argv, check=check, capture_output=True, text=True, **kwargs)
