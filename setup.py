# SPDX-License-Identifier: GPL-2.0-or-later
"""The irqtune library (kernel access and tuning logic).

The TuneD plugins and profiles are not Python distributions: TuneD loads
plugins only from its own package, so `make install` and the RPM put them
there.  This file builds and installs the library alone.
"""

import re

from setuptools import find_packages, setup

with open("irqtune/__init__.py") as f:
    version = re.search(r'__version__ = "([^"]+)"', f.read()).group(1)

setup(
    name="irqtune",
    version=version,
    description="Per-NAPI IRQ suspension, GSIM and housekeeping vectors for TuneD",
    license="GPL-2.0-or-later",
    packages=find_packages(include=["irqtune", "irqtune.*"]),
    python_requires=">=3.6",
    install_requires=["pyroute2>=0.7"],
)
