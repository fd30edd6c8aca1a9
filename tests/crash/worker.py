# SPDX-License-Identifier: GPL-2.0-or-later
"""The library process of the crash-point harness (tests/crash/run.py).

One run is one process doing what TuneD does with the tuners, in order:
    worker.py SCENARIO WORKDIR STEP...
with steps
    apply:P      build profile P's tuners (ledgers in WORKDIR/run) and apply
    off:P        restore_all of profile P's tuners (built fresh: a restarted
                 daemon's, or the same process's when P was applied here)
    move         instance i1 of profile M gives device MOVED back (restore),
                 instance i2 takes it (apply) - tuned-adm instance_acquire_devices
    arm:N        from here on, SIGKILL after the Nth kernel write
                 (irqtune.kernel.crashpoint; IRQTUNE_CRASH_DIR is WORKDIR/crash)
Profiles are dicts {instance: (options, devices)} per scenario below; a
profile switch is off:A then apply:B, as TuneD unapplies one profile and
applies the next.  Tuners are built from the same option parsers the
plugins use, with the plugins' ledger names.

Where no real kernel object exists on the test host, the scenario's
"kernel" is a fixture under WORKDIR/kernel: procfs/sysfs trees read and
written through the library's KernelFs roots (GSIM, queue IRQ affinity,
the opt-in's systemd root), and for zero-copy rx a NIC whose ethtool
state is a JSON file (netdevsim, which has these settings, is not
available on the host; the kernel lab runs zero-copy rx on netdevsim).
"""

import json
import os
import sys

from irqtune.kernel import crashpoint
from irqtune.shared.ledger import Ledger
from irqtune.kernel.kfs import KernelFs
from irqtune.shared.tuner import Env

MOVED = {"napi-sysfs": "sa0", "affinity": "eth0", "zerocopy-fixture": "eth0"}


# -- napi through the device-wide sysfs files (real veth in a namespace) ----

def napi_sysfs_profiles():
    first = {"defer_hard_irqs": "100", "gro_flush_timeout": "20000", "threaded": "1"}
    second = {"defer_hard_irqs": "200", "gro_flush_timeout": "40000"}
    return {"A": {"i1": (first, ["sa0", "sb0"])},
            "B": {"i1": (second, ["sa0", "sb0"])},
            "M": {"i1": (first, ["sa0", "sb0"]), "i2": (second, [])}}


def napi_sysfs_tuner(work, instance, options):
    from irqtune.kernel.caps import NapiCapabilities
    from irqtune.features.napi import NapiConfig, NapiTuner
    config, errors = NapiConfig.from_options(options)
    assert not errors, errors
    # A kernel without napi-set (before 6.13): every value goes through sysfs.
    return NapiTuner(config, NapiCapabilities(),
                     ledger=Ledger("napi-" + instance, run_dir(work), kin="napi-"))


# -- channels and queue IRQ affinity (procfs fixture, fixture driver) ------

def affinity_profiles():
    first = {"channels": "housekeeping", "irq_affinity": "housekeeping",
             "housekeeping_cpus": "0-1"}
    second = {"channels": "3", "irq_affinity": "2-3", "housekeeping_cpus": "0-1"}
    return {"A": {"i1": (first, ["eth0"])}, "B": {"i1": (second, ["eth0"])},
            "M": {"i1": (first, ["eth0"]), "i2": (second, [])}}


class FileDriver:
    """Channel counts kept in kernel/channels.json; a change re-spreads
    the queue IRQs over every CPU, as drivers do."""

    def __init__(self, work):
        self.path = os.path.join(work, "kernel", "channels.json")
        self.proc = os.path.join(work, "kernel", "proc")

    def channels(self, ifindex):
        with open(self.path) as f:
            state = json.load(f)
        return {"combined-max": state["max"], "combined-count": state["count"]}

    def set_channels(self, ifindex, **counts):
        with open(self.path) as f:
            state = json.load(f)
        state["count"] = counts["combined"]
        with open(self.path, "w") as f:
            json.dump(state, f)
        for irq in AFFINITY_IRQS:
            with open(os.path.join(self.proc, "irq", str(irq), "smp_affinity_list"), "w") as f:
                f.write("0-3\n")
        crashpoint.ENABLED and crashpoint.wrote("fixture channels %s" % counts)


AFFINITY_IRQS = (25, 26, 27, 28)


def affinity_tuner(work, instance, options):
    from irqtune.features import channels as ch
    config, errors = ch.HousekeepingConfig.from_options(options)
    assert not errors, errors
    kernel = os.path.join(work, "kernel")
    return ch.HousekeepingTuner(
        config, ledger=Ledger("nic_housekeeping-" + instance, run_dir(work),
                              kin="nic_housekeeping-"),
        kfs=KernelFs(os.path.join(kernel, "proc"), os.path.join(kernel, "sys")),
        channels=FileDriver(work), ifindex=lambda name: 7 if name == "eth0" else None,
        ifname=lambda index: "eth0" if index == 7 else None, napi=())


# -- GSIM (fixture of the patched kernel's files) -----------------------------

def gsim_profiles():
    first = {"delay_us": "100", "target_intr_rate": "1000000", "hardirq_percent": "70",
             "irqs": "nic:eth0"}
    second = {"delay_us": "250", "target_intr_rate": "2000000", "update_ms": "20",
              "irqs": "nic:eth0,nic:eth1"}
    return {"A": {"i1": (first, [])}, "B": {"i1": (second, [])}}


def gsim_tuner(work, instance, options):
    from irqtune.features import gsim
    kernel = os.path.join(work, "kernel")
    tuner, errors = gsim.build(options, Env(
        instance, state_dir=run_dir(work), napi_irqs=None,
        kfs=KernelFs(os.path.join(kernel, "proc"), os.path.join(kernel, "sys"))))
    assert not errors and tuner is not None, errors
    return tuner


# -- service opt-in drop-ins (a systemd root fixture) -------------------------

OPTIN_LIB = "/usr/lib64/irqtune/libirqtune-busypoll.so"


def optin_profiles():
    return {"A": {"i1": ({"services": "a.service, b.service"}, [])},
            "B": {"i1": ({"services": "b.service,c.service", "busy_poll_usecs": "50"}, [])}}


def optin_tuner(work, instance, options):
    from irqtune.features import service_optin as so
    from support.fakes.systemd import FakeSystemd
    values, _ = so.OptInValues.from_options(options)
    optin = so.ServiceOptIn(options["services"], values, library=OPTIN_LIB,
                            root=os.path.join(work, "kernel", "root"), bus=FakeSystemd())
    return so.OptInTuner(optin, ledger=Ledger("busy_poll_optin-" + instance, run_dir(work)))


# -- zero-copy rx (a NIC fixture whose state is a JSON file) ------------------

def zerocopy_profiles():
    first = {"queues": "1", "flow_rules": "tcp4:5201 udp4:4791"}
    second = {"queues": "2", "flow_rules": "tcp4:7000"}
    return {"A": {"i1": (first, ["eth0"])}, "B": {"i1": (second, ["eth0"])},
            "M": {"i1": (first, ["eth0"]), "i2": (second, [])}}


def zerocopy_tuner(work, instance, options):
    from irqtune.kernel.netlink.ethtool_ntuple import NtupleRules
    from irqtune.features.zerocopy import ZeroCopyConfig, ZeroCopyRxTuner
    config, errors = ZeroCopyConfig.from_options(options)
    assert not errors, errors
    nic = FileNic(os.path.join(work, "kernel", "nic.json"))
    return ZeroCopyRxTuner(
        config, ledger=Ledger("zerocopy_rx-" + instance, run_dir(work), kin="zerocopy_rx-"),
        nic=lambda: nic,
        rules=lambda ifname: NtupleRules("eth9", ioctl=nic.table.ioctl),
        ifindex={"eth0": 7}.get, ifname={7: "eth0"}.get)


def file_nic_class():
    from support.fakes.ethtool import FakeNic, FakeRuleTable

    class FileNic(FakeNic):
        """support's FakeNic with its state (and its rule table's) in
        a JSON file, so that it outlives the killed process."""

        FIELDS = ("max", "count", "split_config", "hds", "wanted", "indir")

        def __init__(self, path):
            super().__init__()
            self.path = path
            self.table = FakeRuleTable(size=64)
            with open(path) as f:
                state = json.load(f)
            for name in self.FIELDS:
                setattr(self, name, state[name])
            self.wanted = set(self.wanted)
            self.table.rules = {int(k): bytes.fromhex(v) for k, v in state["rules"].items()}
            ioctl = self.table.ioctl

            def saving_ioctl(fd, request, ifreq):
                ioctl(fd, request, ifreq)
                self.save()
            self.table.ioctl = saving_ioctl

        def save(self):
            state = {name: getattr(self, name) for name in self.FIELDS}
            state["wanted"] = sorted(self.wanted)
            state["rules"] = {str(k): v.hex() for k, v in self.table.rules.items()}
            with open(self.path, "w") as f:
                json.dump(state, f)

        def _changed(self, what, result=None):
            self.save()
            if crashpoint.ENABLED:
                crashpoint.wrote("fixture nic " + what)
            return result

        def set_channels(self, ifindex, combined):
            super().set_channels(ifindex, combined)
            self._changed("channels")

        def set_rings(self, ifindex, **values):
            return self._changed("rings", super().set_rings(ifindex, **values))

        def set_features(self, ifindex, changes):
            super().set_features(ifindex, changes)
            self._changed("features")

        def set_rss_indir(self, ifindex, table):
            super().set_rss_indir(ifindex, table)
            self._changed("rss")
    return FileNic


_NICS = {}


def FileNic(path):      # noqa: N802 - a class made on first use (imports test fixtures)
    """One fixture NIC per process, shared by every tuner of the process."""
    if path not in _NICS:
        _NICS[path] = file_nic_class()(path)
    return _NICS[path]


SCENARIOS = {
    "napi-sysfs": (napi_sysfs_profiles, napi_sysfs_tuner),
    "affinity": (affinity_profiles, affinity_tuner),
    "gsim": (gsim_profiles, gsim_tuner),
    "optin": (optin_profiles, optin_tuner),
    "zerocopy-fixture": (zerocopy_profiles, zerocopy_tuner),
}


def run_dir(work):
    return os.path.join(work, "run")


def main(argv):
    scenario, work, steps = argv[0], argv[1], argv[2:]
    profiles_of, make = SCENARIOS[scenario]
    profiles = profiles_of()
    live = {}           # (profile, instance) -> tuner of this process

    def tuners(name):
        out = []
        for instance, (options, devices) in sorted(profiles[name].items()):
            key = (name, instance)
            if key not in live:
                live[key] = make(work, instance, options)
            out.append((live[key], devices))
        return out

    for step in steps:
        verb, _, arg = step.partition(":")
        if verb == "arm":
            with open(os.path.join(work, "crash", "after"), "w") as f:
                f.write(arg + "\n")
        elif verb == "apply":
            for tuner, devices in tuners(arg):
                tuner.apply(*devices)
        elif verb == "off":
            # TuneD unapplies instances in the reverse order of applying
            for tuner, _ in reversed(tuners(arg)):
                tuner.restore_all()
        elif verb == "move":
            (first, _), (second, _) = tuners("M")
            first.restore(MOVED[scenario])
            second.apply(MOVED[scenario])
        else:
            raise SystemExit("unknown step " + step)


if __name__ == "__main__":
    main(sys.argv[1:])
