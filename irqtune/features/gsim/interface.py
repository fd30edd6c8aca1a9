# SPDX-License-Identifier: GPL-2.0-or-later
"""The GSIM procfs interface: which shape the kernel has, knobs and
switches.

GSIM (seed 001) is not in mainline; three procfs shapes were posted and a
kernel may carry any of them (see kernel-patches/gsim for the one this
project builds):

  v1-v3   /proc/irq/soft_moderation, one file: write "name=value"; reading
          gives a per-CPU table and "name value" lines.  Per IRQ:
          /proc/irq/N/soft_moderation; reading it gives one line that
          starts with the state, e.g. "on irq 25 trigger 0x0 Edge
          unmanaged lazy handle_irq handle_edge_irq+0x0/0x170".  Knob
          target_irq_rate (later postings: target_intr_rate).
  v4      /proc/irq/soft_moderation/ directory, one file per knob plus
          stats.  Per IRQ: /proc/irq/N/soft_moderation (the cover letter
          says "moderation").  Out-of-range values are clamped.
  latest  /proc/irq/sw_moderation/ with delay_us, target_intr_rate,
          hardirq_percent, update_ms (stats there too, or, since the fixed
          GSIM of kernel-patches/gsim, in debugfs irq_sw_moderation/stats
          with a per-IRQ hold table); per IRQ
          /proc/irq/N/allow_sw_moderation; out-of-range writes give ERANGE,
          interrupts GSIM cannot moderate EOPNOTSUPP.

Users name the rate target target_intr_rate on every shape; the interface
maps it to the file or key the kernel has.  Values are range-checked here
before anything is written; what the kernel still rejects is reported with
the option, value and range.
"""

import errno
import logging
import os
import re

from ...kernel.errors import IrqtuneError, describe_os_error
from ...kernel.kfs import KFS, KernelFs
from ...kernel.names import shown

log = logging.getLogger(__name__)

SHAPE_V1 = "v1-v3"
SHAPE_V4 = "v4"
SHAPE_LATEST = "latest"

SHAPE_NAMES = {
    SHAPE_V1: "/proc/irq/soft_moderation (file, GSIM v1-v3)",
    SHAPE_V4: "/proc/irq/soft_moderation/ (directory, GSIM v4)",
    SHAPE_LATEST: "/proc/irq/sw_moderation/ (directory, GSIM latest)",
}

# User-facing option: (minimum, maximum), from the postings.
RANGES = {
    "delay_us": (0, 500),
    "target_intr_rate": (0, 50000000),
    "hardirq_percent": (0, 100),
    "update_ms": (1, 100),
}
KNOBS = tuple(RANGES)
# Apply: enabling delay_us last, so that moderation starts with the final
# targets; restore: delay_us first, so that moderation stops first.
APPLY_ORDER = ("update_ms", "target_intr_rate", "hardirq_percent", "delay_us")
RESTORE_ORDER = ("delay_us", "target_intr_rate", "hardirq_percent", "update_ms")

MISSING_MESSAGE = (
    "GSIM (global software interrupt moderation) is not available: the running "
    "kernel has neither /proc/irq/sw_moderation/ nor /proc/irq/soft_moderation. "
    "It needs a kernel built with the irqtune GSIM patches (kernel-patches/gsim in "
    "the irqtune sources, /usr/share/irqtune/kernel-patches/gsim when packaged; "
    "CONFIG_IRQ_SW_MODERATION=y); the GSIM options are not applied, the rest of "
    "the profile is")

# The same, on a PREEMPT_RT kernel: no GSIM kernel can be built there.
RT_MISSING_MESSAGE = (
    "GSIM (global software interrupt moderation) is not available: the running "
    "kernel is PREEMPT_RT, and the GSIM patches refuse PREEMPT_RT "
    "(CONFIG_IRQ_SW_MODERATION depends on !PREEMPT_RT: every device interrupt is a "
    "thread there, and GSIM moderates only interrupts handled in hard interrupt "
    "context); the GSIM options are not applied, the rest of the profile is")


_TRUE_WORDS = {"1", "on", "y", "yes", "true", "enabled"}
_FALSE_WORDS = {"0", "off", "n", "no", "false", "disabled"}
# A settings line of the v1-v3 file, "name value" (or name: value, name=value);
# the per-CPU table's header starts with "#", its rows with a number.
_V1_SETTING = re.compile(r"^([A-Za-z_]\w*)\s*(?:[:=]\s*|\s+)(\S+)$")


def accepted_range(option):
    low, high = RANGES[option]
    return "an integer from %d to %d" % (low, high)


class GsimWriteError(IrqtuneError):
    """The kernel refused a write; errno kept for the caller's judgement."""

    def __init__(self, path, value, err):
        self.path = path
        self.errno = err.errno
        super().__init__("%s: writing '%s' failed: %s"
                         % (path, value, describe_os_error(err, with_path=False)))


# Writes go through this (over the kernel fs seam), so that tests can stand
# in for the kernel's write semantics (ERANGE, clamping, name=value) on
# plain files.
def _write_text(path, text):
    KernelFs.write_text(path, text.rstrip("\n"))


class GsimInterface:
    """One detected GSIM shape in kfs's procfs."""

    def __init__(self, shape, kfs=KFS):
        self.shape = shape
        self.kfs = kfs
        self.irq_dir = kfs.proc_path("irq")
        self.base = os.path.join(self.irq_dir, "sw_moderation" if shape == SHAPE_LATEST
                                 else "soft_moderation")
        self.kernel_names = self._kernel_names()

    def __str__(self):
        return SHAPE_NAMES[self.shape]

    def _kernel_names(self):
        names = {o: o for o in KNOBS}
        if self.shape == SHAPE_V4:
            if not os.path.exists(os.path.join(self.base, "target_intr_rate")) and \
                    os.path.exists(os.path.join(self.base, "target_irq_rate")):
                names["target_intr_rate"] = "target_irq_rate"
        elif self.shape == SHAPE_V1 and "target_intr_rate" not in self._v1_info():
            names["target_intr_rate"] = "target_irq_rate"
        return names

    def _v1_info(self):
        """{name: value text} of the v1-v3 file's settings lines."""
        try:
            lines = KernelFs.read_text(self.base).splitlines()
        except OSError:
            return {}
        return dict(m.groups() for m in (_V1_SETTING.match(line.strip()) for line in lines) if m)

    def knob_path(self, option):
        """Where option lives, for messages: a file, or "file key"."""
        if self.shape == SHAPE_V1:
            return "%s %s" % (self.base, self.kernel_names[option])
        return os.path.join(self.base, self.kernel_names[option])

    def missing_knob(self, option):
        """Why option cannot be used on this kernel, or None."""
        if self.shape == SHAPE_V1:
            if self.kernel_names[option] not in self._v1_info():
                return "%s does not list %s" % (self.base, self.kernel_names[option])
            return None
        if not os.path.exists(self.knob_path(option)):
            return "the kernel has no %s" % self.knob_path(option)
        return None

    def read_knob(self, option):
        """The current value (int); OSError/ValueError when unreadable."""
        name = self.kernel_names[option]
        if self.shape == SHAPE_V1:
            info = self._v1_info()
            if name not in info:
                raise FileNotFoundError(errno.ENOENT, "%s does not list %s" % (self.base, name))
            return int(info[name])
        return int(KernelFs.read_text(self.knob_path(option)).strip())

    def write_knob(self, option, value):
        """Write value; GsimWriteError when the kernel refuses it."""
        name = self.kernel_names[option]
        if self.shape == SHAPE_V1:
            path, text = self.base, "%s=%d\n" % (name, value)
        else:
            path, text = self.knob_path(option), "%d\n" % value
        try:
            _write_text(path, text)
        except OSError as err:
            raise GsimWriteError(path, text.strip(), err) from None

    def switch_path(self, irq):
        """The per-IRQ switch file of irq, or None when it has none."""
        d = os.path.join(self.irq_dir, str(irq))
        names = ("allow_sw_moderation",) if self.shape == SHAPE_LATEST else \
            ("soft_moderation", "moderation")
        for name in names:
            path = os.path.join(d, name)
            if os.path.exists(path):
                return path
        return None

    def read_switch(self, irq):
        """True/False, or None when irq (or its switch) is gone."""
        path = self.switch_path(irq)
        if path is None:
            return None
        try:
            return parse_switch(KernelFs.read_text(path))
        except (OSError, ValueError):
            return None

    def write_switch(self, irq, on):
        path = self.switch_path(irq)
        if path is None:
            raise GsimWriteError(os.path.join(self.irq_dir, str(irq)), int(on),
                                 FileNotFoundError(errno.ENOENT, "no such IRQ"))
        try:
            _write_text(path, "%d\n" % int(on))
        except OSError as err:
            raise GsimWriteError(path, int(on), err) from None


def parse_switch(text):
    """The state of a per-IRQ switch file: a bare word ("1", "on", ...) or,
    on v1-v3 kernels, a line whose first word is the state."""
    words = text.split()
    word = words[0].lower() if words else ""
    if word in _TRUE_WORDS:
        return True
    if word in _FALSE_WORDS:
        return False
    raise ValueError("not a switch state: %s" % shown(text, quote="always"))


def detect(kfs=KFS):
    """The GSIM interface the kernel offers, or None."""
    if os.path.isdir(kfs.proc_path("irq", "sw_moderation")):
        return GsimInterface(SHAPE_LATEST, kfs)
    soft = kfs.proc_path("irq", "soft_moderation")
    if os.path.isdir(soft):
        return GsimInterface(SHAPE_V4, kfs)
    if os.path.isfile(soft):
        return GsimInterface(SHAPE_V1, kfs)
    return None
