# SPDX-License-Identifier: GPL-2.0-or-later
"""The collection's Python code is imported from ansible/collections, as
Ansible itself finds it; none of it needs Ansible to be importable."""

import os
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
COLLECTIONS = os.path.join(REPO, "ansible", "collections")
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)
