# SPDX-License-Identifier: GPL-2.0-or-later
"""python3 -m irqtune_bench: the irqtune-bench command from a source tree
(the lab runs its server side this way in the guest)."""

import sys

from .cli import main

sys.exit(main())
