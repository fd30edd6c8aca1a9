# SPDX-License-Identifier: GPL-2.0-or-later
"""Ledger before the change against the real kernel (veth in a namespace):
at the napi-set and the channel change the originals are on disk, NAPIs
are kept by position (veth recreates them with new ids on down/up).
Kernel writes are seen through the crash-point hook, with the ledger read
from disk at that moment; values are read back with rawnapi and ethtool."""

import json
import os
import re
import socket
import subprocess

import pytest

from irqtune.kernel import crashpoint
from irqtune.kernel.caps import detect_napi_capabilities
from irqtune.shared.ledger import Ledger
from irqtune.features.napi import NapiConfig, NapiTuner
from support.rawnapi import RawGenl

ORIGINAL = {"defer-hard-irqs": 3, "gro-flush-timeout": 5000}


@pytest.fixture
def ledger_at_writes(monkeypatch, tmp_path):
    """[(what, {ledger name: data on disk})] of each kernel write."""
    run = tmp_path / "run"
    writes = []

    def wrote(what):
        disk = {}
        for name in sorted(os.listdir(run)) if run.is_dir() else ():
            with open(run / name) as f:
                disk[name[:-5]] = json.load(f)
        writes.append((what, disk))
    monkeypatch.setattr(crashpoint, "ENABLED", True)
    monkeypatch.setattr(crashpoint, "wrote", wrote)
    return str(run), writes


def set_originals(dev):
    raw = RawGenl()
    try:
        for napi in raw.napis(dev):
            raw.set(napi["id"], **ORIGINAL)
        return raw.napis(dev)
    finally:
        raw.close()


def napi_tuner(run):
    caps = detect_napi_capabilities()
    if not caps.napi_set:
        pytest.skip("the kernel has no napi-set")
    return NapiTuner(NapiConfig(defer_hard_irqs=100, gro_flush_timeout=20000), caps,
                     ledger=Ledger("napi-test", run))


def test_napi_originals_are_on_disk_at_the_napi_set(netns, ledger_at_writes):
    run, writes = ledger_at_writes
    napis = set_originals("vn0")
    assert len(napis) == 2
    napi_tuner(run).apply("vn0")
    assert len(writes) == 1 and writes[0][0].startswith("netdev batch"), writes
    saved = writes[0][1].get("napi-test", {}).get("vn0", {}).get("napi", {})
    # every NAPI written has its original on disk, under its position
    assert saved == {"0": ORIGINAL, "1": ORIGINAL}, writes[0]


def test_napis_are_kept_by_position_not_by_id(netns, tmp_path):
    """Down/up: veth frees its NAPIs and makes new ones with new ids; the
    originals saved for the old ones go to the new ones in the same place."""
    run = str(tmp_path / "run")
    before = set_originals("vn0")
    tuner = napi_tuner(run)
    tuner.apply("vn0")
    with open(os.path.join(run, "napi-test.json")) as f:
        assert sorted(json.load(f)["vn0"]["napi"]) == ["0", "1"]
    for dev in ("vn0", "vn0p"):
        subprocess.run(["ip", "link", "set", dev, "down"], check=True)
    for dev in ("vn0", "vn0p"):
        subprocess.run(["ip", "link", "set", dev, "up"], check=True)
    raw = RawGenl()
    try:
        after = raw.napis("vn0")
        assert {n["id"] for n in after}.isdisjoint(n["id"] for n in before), \
            "veth kept its NAPIs: no churn to test"
        for napi in after:           # the new NAPIs carry values the tuning left
            raw.set(napi["id"], defer_hard_irqs=100, gro_flush_timeout=20000)
        tuner.restore_all()
        assert [{k: n[k] for k in ORIGINAL} for n in raw.napis("vn0")] == [ORIGINAL, ORIGINAL]
    finally:
        raw.close()


def ethtool_channels(dev):
    text = subprocess.run(["ethtool", "-l", dev], check=True, capture_output=True,
                          text=True).stdout.split("Current hardware settings:")[1]
    return {k: int(re.search(r"^%s:\s+(\d+)" % k.upper(), text, re.M).group(1))
            for k in ("rx", "tx")}


def test_channel_counts_are_on_disk_at_the_channel_change(netns, ledger_at_writes):
    from irqtune.features.channels import HousekeepingConfig, HousekeepingTuner
    run, writes = ledger_at_writes
    subprocess.run(["ethtool", "-L", "vn0", "rx", "2", "tx", "2"], check=True)
    config, errors = HousekeepingConfig.from_options({"channels": "1",
                                                      "housekeeping_cpus": "0"})
    assert not errors
    tuner = HousekeepingTuner(config, ledger=Ledger("nic_housekeeping-test", run))
    tuner.apply("vn0")
    assert ethtool_channels("vn0") == {"rx": 1, "tx": 1}
    assert len(writes) == 1 and writes[0][0].startswith("ethtool setting channels"), writes
    saved = writes[0][1]["nic_housekeeping-test"]["vn0"]
    assert saved["ifindex"] == socket.if_nametoindex("vn0")
    assert saved["channels"] == {"rx": 2, "tx": 2}, writes[0]
    tuner.restore_all()
    assert ethtool_channels("vn0") == {"rx": 2, "tx": 2}


def test_a_position_with_originals_of_other_values_gets_this_configs_too(netns, tmp_path):
    """First value wins per value: a ledger taken over from another profile
    or instance (after a crash) holds a NAPI's position with originals of
    other attributes; the ones this configuration sets are added before
    the change, and all of them come back."""
    run = str(tmp_path / "run")
    set_originals("vn0")
    Ledger("napi-test", run).save({"vn0": {
        "ifindex": socket.if_nametoindex("vn0"), "ids": [], "sysfs": {},
        "napi": {"0": {"defer-hard-irqs": 3}, "1": {"defer-hard-irqs": 3}}}})
    napi_tuner(run).apply("vn0")
    with open(os.path.join(run, "napi-test.json")) as f:
        assert json.load(f)["vn0"]["napi"] == {"0": ORIGINAL, "1": ORIGINAL}
    napi_tuner(run).restore_all()
    raw = RawGenl()
    try:
        assert [{k: n[k] for k in ORIGINAL} for n in raw.napis("vn0")] == [ORIGINAL, ORIGINAL]
    finally:
        raw.close()
