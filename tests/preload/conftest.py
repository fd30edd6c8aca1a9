# SPDX-License-Identifier: GPL-2.0-or-later
"""Fixtures for the preload library tests: build the library and the probe."""

import os
import shutil
import subprocess

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(REPO, "build", "preload")
LIB = os.path.join(BUILD, "libirqtune-busypoll.so")
RUN = os.path.join(BUILD, "irqtune-busypoll-run")
PROBE = os.path.join(BUILD, "epoll_probe")
ENOTTY = 25


@pytest.fixture(scope="session")
def built():
    """Build the library and run command with the project's make target."""
    if shutil.which("make") is None or shutil.which("cc") is None:
        pytest.skip("make and a C compiler are needed")
    subprocess.run(["make", "-C", REPO, "preload"], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror",
                    "-I", os.path.join(REPO, "preload"), "-o", PROBE,
                    os.path.join(REPO, "tests", "preload", "epoll_probe.c"),
                    "-lpthread"], check=True)
    return {"lib": LIB, "run": RUN, "probe": PROBE}


def clean_env(**extra):
    """The test's environment without any IRQTUNE_* or LD_PRELOAD leftovers."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("IRQTUNE_") and k != "LD_PRELOAD"}
    env.update(extra)
    return env


def parse_probe(stdout):
    """Probe output -> {label: (usecs, budget, prefer, errno_kept)}."""
    result = {}
    for line in stdout.splitlines():
        fields = line.split()
        if fields[1] == "ERR":
            result[fields[0]] = ("ERR", fields[2], int(fields[3]))
            continue
        assert fields[4].startswith("errno-kept="), line
        result[fields[0]] = (int(fields[1]), int(fields[2]), int(fields[3]),
                             fields[4] == "errno-kept=1")
    return result


@pytest.fixture(scope="session")
def kernel_params(built):
    """Skip unless this kernel answers EPIOCGPARAMS (6.9+, NET_RX_BUSY_POLL)."""
    proc = subprocess.run([built["probe"], "--no-exec"], env=clean_env(),
                          capture_output=True, text=True, check=True)
    got = parse_probe(proc.stdout)
    first = got["create"]
    if first[0] == "ERR":
        pytest.skip("EPIOCGPARAMS not available on this kernel (errno %d)" % first[2])
    return got
