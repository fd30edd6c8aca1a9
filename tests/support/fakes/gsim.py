# SPDX-License-Identifier: GPL-2.0-or-later
"""GSIM's procfs and sysfs files as plain files, and the kernel's write rules.

FakeKernel builds the files of one GSIM shape (latest, v4, v1-v3) under a
root and, as the library's write function, does what each shape's kernel
code does on a write: ERANGE or clamping, "name=value" on the v1-v3 file,
EOPNOTSUPP for hardirq_percent without IRQ time accounting, interrupts that
disappear.  Used by the unit tests (tests/unit/features/test_gsim.py) and the crash
harness's GSIM fixture (tests/crash/run.py).
"""

import errno
import os
import re
import time

from irqtune.features import gsim
from irqtune.kernel.kfs import KernelFs

NCPU = 4
# irq: (chip, kind, name)
IRQS = {
    1: ("IO-APIC", "1-edge", "i8042"),
    9: ("IO-APIC", "9-fasteoi", "acpi"),
    24: ("PCI-MSIX-0000:00:03.0", "0-edge", "virtio0-config"),
    25: ("PCI-MSIX-0000:00:03.0", "1-edge", "virtio0-input.0"),
    26: ("PCI-MSIX-0000:00:03.0", "2-edge", "virtio0-output.0"),
    27: ("PCI-MSIX-0000:00:03.0", "3-edge", "virtio0-input.1"),
    28: ("PCI-MSIX-0000:00:03.0", "4-edge", "virtio0-output.1"),
    30: ("PCI-MSIX-0000:00:04.0", "0-edge", "virtio1-config"),
    31: ("PCI-MSIX-0000:00:04.0", "1-edge", "virtio1-input.0"),
    40: ("IR-PCI-MSIX-0000:5e:00.0", "0-edge", "nvme0q0"),
    41: ("IR-PCI-MSIX-0000:5e:00.0", "1-edge", "nvme0q1"),
    42: ("IR-PCI-MSIX-0000:5e:00.0", "2-edge", "nvme0q2"),
    50: ("PCI-MSI-0000:00:1f.2", "512000-edge", "ahci[0000:00:1f.2]"),
}
NICS = {  # ifname: (pci function, virtio name, msi irqs)
    "eth0": ("0000:00:03.0", "virtio0", (24, 25, 26, 27, 28)),
    "eth1": ("0000:00:04.0", "virtio1", (30, 31)),
}
LATEST_KNOBS = ("delay_us", "target_intr_rate", "hardirq_percent", "update_ms")


def interrupts_text(irqs):
    lines = ["".join("%11s" % ("CPU%d" % c) for c in range(NCPU))]
    for irq, (chip, kind, name) in sorted(irqs.items()):
        counts = "".join("%11d" % (irq * 10 + c) for c in range(NCPU))
        lines.append("%4d:%s  %-22s %-10s %s" % (irq, counts, chip, kind, name))
    lines.append(" NMI:" + "".join("%11d" % 0 for _ in range(NCPU)) + "   Non-maskable interrupts")
    lines.append(" LOC:" + "".join("%11d" % 5 for _ in range(NCPU)) + "   Local timer interrupts")
    lines.append(" ERR:          0")
    return "\n".join(lines) + "\n"


class FakeKernel:
    """A procfs/sysfs fixture of one GSIM shape and the kernel's write rules."""

    def __init__(self, root, shape, irqs=None, target_name="target_intr_rate",
                 time_accounting=True, knobs=None, switch_name=None):
        self.root = str(root)
        self.proc = os.path.join(self.root, "proc")
        self.sys = os.path.join(self.root, "sys")
        self.kfs = KernelFs(self.proc, self.sys)
        self.shape = shape
        self.irqs = dict(IRQS if irqs is None else irqs)
        self.target_name = target_name
        self.time_accounting = time_accounting
        self.ranges = {"delay_us": (0, 500), target_name: (0, 50000000),
                       "hardirq_percent": (0, 100), "update_ms": (1, 100)}
        self.values = dict(knobs or {"delay_us": 0, target_name: 0, "hardirq_percent": 0,
                                     "update_ms": 5})
        self.switch_name = switch_name or {gsim.SHAPE_LATEST: "allow_sw_moderation"}.get(
            shape, "soft_moderation")
        self.writes = []            # (path relative to proc, text)
        self.fail = {}              # relative path -> errno, injected
        self.on_write = []          # callables(rel) run before a write is judged
        os.makedirs(os.path.join(self.proc, "irq"))
        for irq in self.irqs:
            self._make_irq_dir(irq)
        self._write_interrupts()
        self._write_knobs()
        self._make_sysfs()

    # -- fixture files --------------------------------------------------

    def _make_irq_dir(self, irq, allow=False):
        d = os.path.join(self.proc, "irq", str(irq))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "smp_affinity_list"), "w") as f:
            f.write("0-%d\n" % (NCPU - 1))
        if self.shape is not None:
            self._set_switch(irq, allow)

    def _set_switch(self, irq, on):
        if self.shape == gsim.SHAPE_LATEST:
            text = "1" if on else "0"
        elif self.shape == gsim.SHAPE_V1:
            # What the v1-v3 postings' mode_show() prints (LKML, GSIM v2,
            # 2025-11-16: "%s irq %u trigger 0x%x %s %smanaged %slazy
            # handle_irq %pB"), for an x86 PCI-MSI-X vector.
            text = ("%s irq %d trigger 0x0 Edge unmanaged lazy handle_irq "
                    "handle_edge_irq+0x0/0x170" % ("on" if on else "off", irq))
        else:
            text = "on" if on else "off"
        with open(os.path.join(self.proc, "irq", str(irq), self.switch_name), "w") as f:
            f.write(text + "\n")

    def _write_interrupts(self):
        with open(os.path.join(self.proc, "interrupts"), "w") as f:
            f.write(interrupts_text(self.irqs))

    def stats_rows(self):
        return [(c, 1000 * (c + 1), 10000, 10 * c, 0) for c in range(NCPU)]

    def _write_knobs(self):
        v = self.values
        if self.shape == gsim.SHAPE_LATEST:
            d = os.path.join(self.proc, "irq", "sw_moderation")
            os.makedirs(d, exist_ok=True)
            for name in LATEST_KNOBS:
                with open(os.path.join(d, name), "w") as f:
                    f.write("%d\n" % v[name])
            rows = ["# mode %s delay_us %d target_intr_rate %d hardirq_percent %d update_ms %d"
                    % ("off" if not v["delay_us"] else "adaptive", v["delay_us"],
                       v["target_intr_rate"], v["hardirq_percent"], v["update_ms"]),
                    "# hardirq time %s" % ("precise" if self.time_accounting else "unavailable"),
                    "%-4s %12s %12s %10s %9s %12s %12s %12s %12s" % (
                        "cpu", "irq_rate", "global_rate", "hardirq_pm", "delay_ns",
                        "irqs", "holds", "deferred", "releases")]
            for c, rate, glob, pm, delay in self.stats_rows():
                rows.append("%-4d %12d %12d %10d %9d %12d %12d %12d %12d"
                            % (c, rate, glob, pm, delay, 100, 10, 1, 10))
            with open(os.path.join(d, "stats"), "w") as f:
                f.write("\n".join(rows) + "\n")
        elif self.shape == gsim.SHAPE_V4:
            d = os.path.join(self.proc, "irq", "soft_moderation")
            os.makedirs(d, exist_ok=True)
            for name in v:
                with open(os.path.join(d, name), "w") as f:
                    f.write("%d\n" % v[name])
            rows = ["%5s  %8s  %10s  %4s  %8s  %11s" % ("# CPU", "irq/s", "loc_irq/s", "cpus",
                                                       "delay_ns", "irq_hi")]
            for c, rate, glob, pm, delay in self.stats_rows():
                rows.append("%5d  %8d  %10d  %4d  %8d  %11d" % (c, glob, rate, 2, delay, 0))
            rows += ["", "enabled              %s" % ("yes" if v["delay_us"] else "no")]
            rows += ["%-20s %d" % (k, v[k]) for k in v]
            with open(os.path.join(d, "stats"), "w") as f:
                f.write("\n".join(rows) + "\n")
        elif self.shape == gsim.SHAPE_V1:
            rows = ["# CPU     irq/s  my_irq/s  cpus  srcs  delay_ns       irq_hi"]
            for c, rate, glob, pm, delay in self.stats_rows():
                rows.append("%5d  %8d  %8d  %4d  %4d  %8d  %11d" % (c, glob, rate, 2, 1, delay, 0))
            rows += ["", "enabled              %s" % ("yes" if v["delay_us"] else "no")]
            rows += ["%-20s %d" % (k, v[k]) for k in v]
            rows += ["timer_rounds         0"]
            with open(os.path.join(self.proc, "irq", "soft_moderation"), "w") as f:
                f.write("\n".join(rows) + "\n")

    def _make_sysfs(self):
        for ifname, (pci, virtio, msi) in NICS.items():
            pdev = os.path.join(self.sys, "devices/pci0000:00", pci)
            os.makedirs(os.path.join(pdev, "msi_irqs"), exist_ok=True)
            os.makedirs(os.path.join(pdev, virtio, "net", ifname), exist_ok=True)
            for irq in msi:
                open(os.path.join(pdev, "msi_irqs", str(irq)), "w").close()
            net = os.path.join(self.sys, "class/net")
            os.makedirs(net, exist_ok=True)
            os.symlink(os.path.join(pdev, virtio, "net", ifname), os.path.join(net, ifname))
            os.symlink(os.path.join(pdev, virtio), os.path.join(pdev, virtio, "net", ifname,
                                                                 "device"))
        # a virtual device: no device link
        os.makedirs(os.path.join(self.sys, "devices/virtual/net/veth0"))
        os.symlink(os.path.join(self.sys, "devices/virtual/net/veth0"),
                   os.path.join(self.sys, "class/net/veth0"))

    # -- state changes ---------------------------------------------------

    def add_irq(self, irq, chip, kind, name, msi_of=None):
        self.irqs[irq] = (chip, kind, name)
        self._make_irq_dir(irq)
        self._write_interrupts()
        if msi_of:
            pci = NICS[msi_of][0]
            open(os.path.join(self.sys, "devices/pci0000:00", pci, "msi_irqs", str(irq)),
                 "w").close()

    def remove_irq(self, irq):
        import shutil
        self.irqs.pop(irq, None)
        shutil.rmtree(os.path.join(self.proc, "irq", str(irq)), ignore_errors=True)
        self._write_interrupts()

    def switch(self, irq):
        # Read independently of the library's parser, which is under test.
        # The fake switch is a plain file: a read racing the plugin's
        # watcher thread can find it truncated but not yet written (the
        # kernel's procfs write is one call), which is "not written yet".
        path = os.path.join(self.proc, "irq", str(irq), self.switch_name)
        for _ in range(50):
            with open(path) as f:
                words = f.read().split()
            if words:
                return {"1": True, "on": True, "0": False, "off": False}[words[0]]
            time.sleep(0.01)
        raise AssertionError("%s stayed empty" % path)

    def switches(self, irqs):
        return {i: self.switch(i) for i in irqs}

    def knobs(self):
        return dict(self.values)

    def set_knob(self, name, value):
        self.values[name] = value
        self._write_knobs()

    # -- the kernel's write rules -----------------------------------------

    def write(self, path, text):
        rel = os.path.relpath(path, self.proc)
        for hook in list(self.on_write):
            hook(rel)
        if rel in self.fail:
            raise OSError(self.fail[rel], os.strerror(self.fail[rel]))
        if not os.path.exists(path):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
        self.writes.append((rel, text.strip()))
        parts = rel.split("/")
        if parts[0] == "irq" and parts[1].isdigit():
            return self._write_switch(int(parts[1]), text)
        if self.shape == gsim.SHAPE_V1:
            match = re.match(r"^(\w+)=(-?\d+)\s*$", text)
            if not match or match.group(1) not in self.values:
                raise OSError(errno.EINVAL, "Invalid argument")
            return self._set_value(match.group(1), int(match.group(2)), clamp=True)
        name = parts[-1]
        if name not in self.values:
            raise OSError(errno.EACCES, "Permission denied")
        try:
            value = int(text.strip())
        except ValueError:
            raise OSError(errno.EINVAL, "Invalid argument") from None
        return self._set_value(name, value, clamp=self.shape == gsim.SHAPE_V4)

    def _set_value(self, name, value, clamp):
        low, high = self.ranges[name]
        if not low <= value <= high:
            if not clamp:
                raise OSError(errno.ERANGE, "Numerical result out of range")
            value = min(max(value, low), high)
        if name == "hardirq_percent" and value and not self.time_accounting:
            raise OSError(errno.EOPNOTSUPP, "Operation not supported")
        self.values[name] = value
        self._write_knobs()

    def _write_switch(self, irq, text):
        word = text.strip().lower()
        if self.shape == gsim.SHAPE_LATEST:
            if word not in ("0", "1", "on", "off", "y", "n"):
                raise OSError(errno.ERANGE, "Numerical result out of range")
        elif word not in ("0", "1", "on", "off", "y", "n", "yes", "no"):
            raise OSError(errno.EINVAL, "Invalid argument")
        on = word in ("1", "on", "y", "yes")
        chip, kind, _ = self.irqs[irq]
        if self.shape == gsim.SHAPE_V4 and on and ("MSI" not in chip or "level" in kind):
            raise OSError(errno.EOPNOTSUPP, "Operation not supported")
        self._set_switch(irq, on)


# What the unit tests start from and set: the knobs' originals, the options
# most tests apply, eth0's queue vectors.
ORIGINAL_KNOBS = {"delay_us": 7, "target_intr_rate": 12345, "hardirq_percent": 33,
                  "update_ms": 9}
SEED = {"delay_us": "100", "target_intr_rate": "1000000", "hardirq_percent": "70"}
ETH0_QUEUES = [25, 26, 27, 28]


def set_originals(k, switches_on=(26,)):
    for name, value in ORIGINAL_KNOBS.items():
        k.set_knob(k.target_name if name == "target_intr_rate" else name, value)
    for irq in switches_on:
        k._set_switch(irq, True)


def gsim_tuner(kernel, options, irqs="nic:eth0", state=None):
    """A GsimTuner of options on a FakeKernel (IRQs given as the irqs option)."""
    config, errors = gsim.GsimConfig.from_options(options)
    assert errors == []
    iface = gsim.detect(kernel.kfs)
    assert iface is not None
    return gsim.GsimTuner(config, gsim.IrqSelection.parse(irqs), iface, ledger=state,
                          kfs=kernel.kfs, napi_irqs=None)
