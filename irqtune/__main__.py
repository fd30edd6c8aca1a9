# SPDX-License-Identifier: GPL-2.0-or-later
"""The `irqtune` command (irqtune.cli), also as `python3 -m irqtune`.
Installed to the bin directory with its first line set to the Python the
library was installed for (TuneD's), so that it works whatever `python3`
comes first on PATH."""

import sys

from irqtune.cli import main

if __name__ == "__main__":
    sys.exit(main())
