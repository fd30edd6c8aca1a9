# SPDX-License-Identifier: GPL-2.0-or-later
"""Global Software Interrupt Moderation (GSIM): detect, configure, restore.

GSIM (seed 001) is not in mainline; three procfs shapes were posted and a
kernel may carry any of them (see kernel-patches/gsim for the one this
project builds):

  v1-v3   /proc/irq/soft_moderation, one file: write "name=value"; reading
          gives a per-CPU table and "name value" lines.  Per IRQ:
          /proc/irq/N/soft_moderation (reads on/off).  Knob target_irq_rate
          (later postings: target_intr_rate).
  v4      /proc/irq/soft_moderation/ directory, one file per knob plus
          stats.  Per IRQ: /proc/irq/N/soft_moderation (the cover letter
          says "moderation").  Out-of-range values are clamped.
  latest  /proc/irq/sw_moderation/ with delay_us, target_intr_rate,
          hardirq_percent, update_ms, stats; per IRQ
          /proc/irq/N/allow_sw_moderation; out-of-range writes give ERANGE.

Users name the rate target target_intr_rate on every shape; the interface
maps it to the file or key the kernel has.  Values are range-checked here
before anything is written; what the kernel still rejects is reported with
the option, value and range.
"""

import errno
import logging
import os
import re
from dataclasses import dataclass, field, fields

from . import irqs as irqs_mod
from .errors import IrqtuneError, OptionError
from .values import parse_int

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
OPTIONS = tuple(RANGES)
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

_TRUE_WORDS = {"1", "on", "y", "yes", "true", "enabled"}
_FALSE_WORDS = {"0", "off", "n", "no", "false", "disabled"}


def accepted_range(option):
    low, high = RANGES[option]
    return "an integer from %d to %d" % (low, high)


class GsimWriteError(IrqtuneError):
    """The kernel refused a write; errno kept for the caller's judgement."""

    def __init__(self, path, value, err):
        self.path = path
        self.value = value
        self.errno = err.errno
        self.errname = errno.errorcode.get(err.errno, str(err.errno))
        super().__init__("%s: writing '%s' failed: %s (%s)"
                         % (path, value, err.strerror or err, self.errname))


# File access goes through these two, so that tests can stand in for the
# kernel's write semantics (ERANGE, clamping, name=value) on plain files.

def _read_text(path):
    with open(path) as f:
        return f.read()


def _write_text(path, text):
    with open(path, "w") as f:
        f.write(text)


# -- /proc/interrupts ------------------------------------------------------

@dataclass(frozen=True)
class IrqInfo:
    irq: int
    chip: str = ""
    kind: str = ""      # trigger column, e.g. "1-edge", "Edge", "fasteoi"
    name: str = ""      # action name(s), the last column(s)
    count: int = 0      # sum over CPUs

    @property
    def msi(self):
        return "MSI" in self.chip.upper()

    @property
    def edge(self):
        kind = self.kind.lower()
        return "edge" in kind or "fasteoi" in kind

    @property
    def eligible(self):
        """What GSIM can moderate: MSI/MSI-X, edge or fasteoi (not level)."""
        return self.msi and self.edge and "level" not in self.kind.lower()


_KIND = re.compile(r"(?i)^(\d+-)?(edge|level|fasteoi)$|(-edge|-level|-fasteoi)$")


def parse_interrupts(text):
    """{irq: IrqInfo} of the numbered lines of /proc/interrupts."""
    lines = text.splitlines()
    if not lines:
        return {}
    ncpu = len(lines[0].split())
    result = {}
    for line in lines[1:]:
        head, sep, rest = line.partition(":")
        if not sep or not head.strip().isdigit():
            continue
        irq = int(head)
        tokens = rest.split()
        counts = []
        while tokens and len(counts) < ncpu and tokens[0].isdigit():
            counts.append(int(tokens.pop(0)))
        chip = tokens.pop(0) if tokens else ""
        kind = ""
        # The hwirq and trigger come as one token ("1-edge") or two ("27 Edge").
        for i, tok in enumerate(tokens[:3]):
            if _KIND.search(tok):
                kind = tok
                tokens = tokens[i + 1:]
                break
        result[irq] = IrqInfo(irq, chip, kind, " ".join(tokens), sum(counts))
    return result


def read_interrupts(proc_root="/proc"):
    return parse_interrupts(_read_text(os.path.join(proc_root, "interrupts")))


# -- stats -------------------------------------------------------------------

# Column names of the shapes' per-CPU tables -> record fields.
_COLUMN_FIELDS = {
    "cpu": "cpu",
    "irq_rate": "irq_rate",         # latest: this CPU's rate
    "my_irq/s": "irq_rate",         # v1-v3
    "loc_irq/s": "irq_rate",        # v4
    "global_rate": "global_rate",   # latest
    "irq/s": "global_rate",         # v1-v4: smoothed global rate
    "hardirq_pm": "hardirq_pm",
    "delay_ns": "delay_ns",
}


@dataclass(frozen=True)
class CpuStats:
    cpu: int
    irq_rate: int = None        # interrupts/s on this CPU
    global_rate: int = None     # this CPU's estimate of the global rate
    hardirq_pm: int = None      # hard interrupt time share, per mille
    delay_ns: int = None        # current moderation delay
    columns: dict = field(default_factory=dict, compare=False)  # every column, raw names


@dataclass(frozen=True)
class GsimStats:
    cpus: list
    info: dict      # "name value" / "# mode ..." settings lines, values as text

    def total_rate(self):
        return sum(c.irq_rate or 0 for c in self.cpus)

    def max_delay_ns(self):
        return max((c.delay_ns or 0 for c in self.cpus), default=0)


def parse_stats(text):
    """GsimStats of any shape's statistics text."""
    cpus, info, header = [], {}, None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        bare = stripped.lstrip("#").strip()
        tokens = bare.split()
        if tokens and tokens[0].lower() == "cpu" and len(tokens) > 1:
            header = [t.lower() for t in tokens]
            continue
        if header is not None and not stripped.startswith("#") and tokens \
                and tokens[0].isdigit() and len(tokens) == len(header):
            raw = {}
            for name, value in zip(header, tokens):
                try:
                    raw[name] = int(value)
                except ValueError:
                    raw[name] = value
            known = {}
            for name, value in raw.items():
                target = _COLUMN_FIELDS.get(name)
                if target and isinstance(value, int):
                    known.setdefault(target, value)
            known.setdefault("cpu", int(tokens[0]))
            cpus.append(CpuStats(columns=raw, **known))
            continue
        _parse_info(stripped, info)
    return GsimStats(cpus, info)


def _parse_info(line, info):
    if line.startswith("#"):
        words = line.lstrip("#").split()
        if words[:2] == ["hardirq", "time"] and len(words) > 2:
            info["hardirq_time"] = words[2]
        elif words and words[0] == "mode":
            # "# mode adaptive delay_us 100 target_intr_rate 1000000 ..."
            for key, value in zip(words[::2], words[1::2]):
                info[key] = value
        return
    match = re.match(r"^([A-Za-z_][\w]*)\s*(?:[:=]\s*|\s+)(\S+)$", line)
    if match:
        info[match.group(1)] = match.group(2)


# -- the kernel interface ------------------------------------------------

class GsimInterface:
    """One detected GSIM shape under proc_root."""

    def __init__(self, shape, proc_root="/proc"):
        self.shape = shape
        self.proc_root = proc_root
        self.irq_dir = os.path.join(proc_root, "irq")
        if shape == SHAPE_LATEST:
            self.base = os.path.join(self.irq_dir, "sw_moderation")
        else:
            self.base = os.path.join(self.irq_dir, "soft_moderation")
        self.kernel_names = self._kernel_names()

    def __str__(self):
        return SHAPE_NAMES[self.shape]

    def _kernel_names(self):
        names = {o: o for o in OPTIONS}
        if self.shape == SHAPE_V4:
            if not os.path.exists(os.path.join(self.base, "target_intr_rate")) and \
                    os.path.exists(os.path.join(self.base, "target_irq_rate")):
                names["target_intr_rate"] = "target_irq_rate"
        elif self.shape == SHAPE_V1:
            info = self._v1_info()
            if "target_intr_rate" not in info:
                names["target_intr_rate"] = "target_irq_rate"
        return names

    def _v1_info(self):
        try:
            return parse_stats(_read_text(self.base)).info
        except OSError:
            return {}

    # knobs

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
        return int(_read_text(self.knob_path(option)).strip())

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

    def read_knobs(self):
        values = {}
        for option in OPTIONS:
            try:
                values[option] = self.read_knob(option)
            except (OSError, ValueError):
                values[option] = None
        return values

    # per-IRQ switches

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
            return parse_switch(_read_text(path))
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

    # statistics

    def stats_path(self):
        return self.base if self.shape == SHAPE_V1 else os.path.join(self.base, "stats")

    def stats(self):
        return parse_stats(_read_text(self.stats_path()))


def parse_switch(text):
    word = text.strip().lower()
    if word in _TRUE_WORDS:
        return True
    if word in _FALSE_WORDS:
        return False
    raise ValueError("not a switch state: %r" % text)


def detect(proc_root="/proc"):
    """The GSIM interface the kernel offers, or None."""
    irq_dir = os.path.join(proc_root, "irq")
    if os.path.isdir(os.path.join(irq_dir, "sw_moderation")):
        return GsimInterface(SHAPE_LATEST, proc_root)
    soft = os.path.join(irq_dir, "soft_moderation")
    if os.path.isdir(soft):
        return GsimInterface(SHAPE_V4, proc_root)
    if os.path.isfile(soft):
        return GsimInterface(SHAPE_V1, proc_root)
    return None


# -- configuration -----------------------------------------------------------

@dataclass(frozen=True)
class GsimConfig:
    """Target values (user option names); None leaves a knob alone."""

    delay_us: int = None
    target_intr_rate: int = None
    hardirq_percent: int = None
    update_ms: int = None

    @classmethod
    def from_options(cls, options):
        """(config, [OptionError]); a bad value is left out and reported."""
        values, errors = {}, []
        for option, (low, high) in RANGES.items():
            text = options.get(option)
            if text is None or str(text).strip() == "":
                continue
            try:
                values[option] = parse_int(option, str(text).replace("_", ""), low, high)
            except OptionError as err:
                errors.append(err)
        return cls(**values), errors

    def items(self):
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) is not None}


# -- which IRQs ------------------------------------------------------------------

class IrqSelection:
    """Which IRQs to moderate, from the `irqs` option.

    Selectors separated by ";" (any one matching selects an IRQ):
      nic:eth0,eth1   queue IRQs of these NICs (shell wildcards allowed)
      name:REGEX      IRQs whose name in /proc/interrupts matches (re.search)
      all             every IRQ GSIM can moderate
    Empty: no per-IRQ switch is touched.
    """

    ACCEPTED = ("selectors separated by ';': 'nic:' with NIC names (wildcards allowed), "
                "'name:' with a regular expression, or 'all'")

    def __init__(self, nics=(), patterns=(), everything=False, text=""):
        self.nics = tuple(nics)
        self.patterns = tuple(patterns)
        self.everything = everything
        self.text = text

    @classmethod
    def parse(cls, text, option="irqs"):
        text = "" if text is None else str(text).strip()
        nics, patterns, everything = [], [], False
        for part in text.split(";"):
            part = part.strip()
            if not part:
                continue
            kind, sep, arg = part.partition(":")
            kind = kind.strip().lower()
            if kind == "all" and not sep:
                everything = True
            elif kind == "nic" and sep:
                names = [n for n in re.split(r"[\s,]+", arg.strip()) if n]
                if not names or any(not re.match(r"^[\w.*?\[\]!:@-]+$", n) for n in names):
                    raise OptionError(option, text, cls.ACCEPTED)
                nics.extend(names)
            elif kind == "name" and sep:
                try:
                    patterns.append(re.compile(arg.strip()))
                except re.error as err:
                    raise OptionError(option, text, cls.ACCEPTED + " (%s)" % err) from None
                if not arg.strip():
                    raise OptionError(option, text, cls.ACCEPTED)
            else:
                raise OptionError(option, text, cls.ACCEPTED)
        return cls(nics, patterns, everything, text)

    def __bool__(self):
        return bool(self.nics or self.patterns or self.everything)

    def select(self, interrupts, proc_root="/proc", sysfs_root="/sys",
               napi_irqs=irqs_mod.napi_irqs):
        """{irq: reason} of the IRQs these selectors match (eligibility aside).

        NIC queue IRQs come from irqtune.irqs.queue_irqs(); napi_irqs(ifname)
        gives the IRQs the driver links to its NAPIs (None: not asked).
        """
        import fnmatch
        chosen = {}
        if self.everything:
            for irq in interrupts:
                chosen[irq] = "all"
        for pattern in self.patterns:
            for irq, info in interrupts.items():
                if info.name and pattern.search(info.name):
                    chosen.setdefault(irq, "name:" + pattern.pattern)
        if self.nics:
            try:
                present = sorted(os.listdir(os.path.join(sysfs_root, "class/net")))
            except OSError:
                present = []
            for ifname in present:
                if not any(fnmatch.fnmatchcase(ifname, n) for n in self.nics):
                    continue
                napi = set(napi_irqs(ifname)) if napi_irqs is not None else ()
                for irq in irqs_mod.queue_irqs(ifname, proc_root, sysfs_root, napi=napi):
                    if irq in interrupts:
                        chosen.setdefault(irq, "nic:" + ifname)
        return chosen


# -- the tuner -----------------------------------------------------------------

class GsimTuner:
    """Applies one GsimConfig and IrqSelection, restores what was there.

    originals (mirrored in the state file):
      {"shape": ..., "knobs": {option: value},
       "irqs": {"<irq>": {"name": action name, "allow": 0/1}}}
    The first value seen before any change; never overwritten while the
    tuning is active, so a restarted daemon cannot take tuned values for
    originals.  An IRQ number whose name changed is a different interrupt.
    """

    def __init__(self, config, selection, iface, state=None, sysfs_root="/sys",
                 napi_irqs=irqs_mod.napi_irqs):
        self.config = config
        self.selection = selection
        self.iface = iface
        self.state = state
        self.sysfs_root = sysfs_root
        self.napi_irqs = napi_irqs
        self.rejected = {}          # option -> OptionError / text from the kernel
        self.unsupported = {}       # option -> why
        self.failed_irqs = {}       # irq -> why (writes refused, not vanished)
        self._ineligible_seen = set()
        self.originals = self._load_state()
        for option in config.items():
            missing = iface.missing_knob(option)
            if missing:
                self.unsupported[option] = missing
                log.warning("gsim: %s not applied: %s", option, missing)

    # -- state ------------------------------------------------------------

    def _load_state(self):
        empty = {"shape": self.iface.shape, "knobs": {}, "irqs": {}}
        if self.state is None:
            return empty
        data = self.state.load()
        if not data:
            return empty
        if data.get("shape") != self.iface.shape:
            log.info("gsim: ignoring saved originals of another interface shape")
            return empty
        data.setdefault("knobs", {})
        data.setdefault("irqs", {})
        log.info("gsim: restoring saved originals from %s", self.state.path)
        return data

    def _save_state(self):
        if self.state is None:
            return
        try:
            self.state.save(self.originals)
        except OSError as err:
            log.warning("gsim: cannot save originals to %s: %s", self.state.path, err)

    # -- apply ------------------------------------------------------------

    def wanted_knobs(self):
        return {o: v for o, v in self.config.items().items()
                if o not in self.unsupported}

    def apply(self):
        """Set the knobs and the switches; returns (knobs written, IRQs switched)."""
        interrupts = self._interrupts()
        knobs = 0
        wanted = self.wanted_knobs()
        # Targets first, then the per-IRQ switches, delay_us last: moderation
        # starts with its final targets on every selected IRQ at once.
        for option in APPLY_ORDER:
            if option in wanted and option != "delay_us":
                knobs += self._apply_knob(option, wanted[option])
        switched = self._apply_switches(interrupts)
        if "delay_us" in wanted:
            knobs += self._apply_knob("delay_us", wanted["delay_us"])
        self._save_state()
        return knobs, switched

    def _apply_knob(self, option, value):
        saved = self.originals["knobs"]
        try:
            current = self.iface.read_knob(option)
        except (OSError, ValueError) as err:
            msg = "cannot read %s (%s), so it could not be restored: not changed" % (
                self.iface.knob_path(option), getattr(err, "strerror", None) or err)
            self.unsupported[option] = msg
            log.error("gsim: %s: %s", option, msg)
            return 0
        if option not in saved:
            saved[option] = current
            self._save_state()
        if current == value:
            return 0
        try:
            self.iface.write_knob(option, value)
        except GsimWriteError as err:
            self._knob_rejected(option, value, err)
            return 0
        # Early shapes clamp silently: check what the kernel kept.
        try:
            now = self.iface.read_knob(option)
        except (OSError, ValueError):
            now = value
        if now != value:
            reason = OptionError(option, value, "%s; the kernel kept %s instead (%s clamps)"
                                 % (accepted_range(option), now, self.iface))
            self.rejected[option] = reason
            log.error("gsim: %s", reason)
        return 1

    def _knob_rejected(self, option, value, err):
        if err.errno == errno.ERANGE:
            reason = OptionError(option, value, "%s; the kernel rejected it with ERANGE "
                                 "(%s)" % (accepted_range(option), self.iface.knob_path(option)))
            self.rejected[option] = reason
            log.error("gsim: %s", reason)
        elif err.errno == errno.EOPNOTSUPP and option == "hardirq_percent":
            why = ("the kernel cannot measure hard interrupt time "
                   "(CONFIG_IRQ_TIME_ACCOUNTING) and refuses a non-zero %s" % option)
            self.unsupported[option] = why
            log.error("gsim: %s not applied: %s", option, why)
        elif err.errno == errno.EINVAL:
            reason = OptionError(option, value, "%s; the kernel rejected it with EINVAL (%s)"
                                 % (accepted_range(option), self.iface.knob_path(option)))
            self.rejected[option] = reason
            log.error("gsim: %s", reason)
        else:
            self.rejected[option] = err
            log.error("gsim: %s: %s", option, err)

    def _interrupts(self):
        try:
            return read_interrupts(self.iface.proc_root)
        except OSError as err:
            log.error("gsim: cannot read %s/interrupts: %s", self.iface.proc_root, err)
            return {}

    def selected(self, interrupts):
        """{irq: IrqInfo} of selected IRQs that GSIM can moderate."""
        if not self.selection:
            return {}
        chosen = self.selection.select(interrupts, self.iface.proc_root, self.sysfs_root,
                                       self.napi_irqs)
        result = {}
        for irq, reason in sorted(chosen.items()):
            info = interrupts[irq]
            if not info.eligible or self.iface.switch_path(irq) is None:
                if reason != "all" and irq not in self._ineligible_seen:
                    self._ineligible_seen.add(irq)
                    log.info("gsim: IRQ %d (%s, %s %s) matches %s but GSIM cannot moderate it "
                             "(MSI/MSI-X edge interrupts with a per-IRQ switch only)",
                             irq, info.name or "unnamed", info.chip, info.kind, reason)
                continue
            result[irq] = info
        return result

    def _forget_changed(self, interrupts):
        """Drop originals of IRQs that are gone or were reused by another device."""
        saved = self.originals["irqs"]
        for key in list(saved):
            info = interrupts.get(int(key))
            if info is None or info.name != saved[key].get("name"):
                log.debug("gsim: IRQ %s (%s) gone", key, saved[key].get("name"))
                del saved[key]

    def _apply_switches(self, interrupts):
        if not self.selection:
            return 0
        self._forget_changed(interrupts)
        saved = self.originals["irqs"]
        count = 0
        for irq, info in self.selected(interrupts).items():
            key = str(irq)
            current = self.iface.read_switch(irq)
            if current is None:
                continue            # vanished since /proc/interrupts was read
            if key not in saved:
                saved[key] = {"name": info.name, "allow": int(current)}
                self._save_state()
            if current:
                continue
            try:
                self.iface.write_switch(irq, True)
                count += 1
                self.failed_irqs.pop(irq, None)
            except GsimWriteError as err:
                if self._vanished(irq):
                    log.debug("gsim: IRQ %d vanished while being switched", irq)
                    saved.pop(key, None)
                    continue
                self.failed_irqs[irq] = "%s (%s)" % (err.errname, err.path)
                log.error("gsim: IRQ %d (%s): cannot allow moderation: %s", irq, info.name, err)
        return count

    def _vanished(self, irq):
        return not os.path.isdir(os.path.join(self.iface.irq_dir, str(irq)))

    def apply_new_irqs(self):
        """Moderate selected IRQs that appeared since the last apply (NIC
        hot-added, channel count changed) or whose switch went back to 0.

        A re-probed device frees its vectors and requests them again,
        often with the same numbers and names, and the new descriptors
        start with moderation disallowed: they cannot be told apart from
        the old ones, so every selected IRQ found off is allowed again
        (its saved original stays the first one seen).
        """
        interrupts = self._interrupts()
        if not interrupts:
            return 0
        count = self._apply_switches(interrupts)
        self._save_state()
        if count:
            log.info("gsim: allowed moderation on %d new or reset IRQs", count)
        return count

    # -- verify -------------------------------------------------------------

    def verify_knobs(self):
        """[(option, where, current, expected)] of knobs to compare."""
        results = []
        for option, value in self.config.items().items():
            if option in self.unsupported or option in self.rejected:
                continue
            try:
                current = self.iface.read_knob(option)
            except (OSError, ValueError):
                current = None
            results.append((option, self.iface.knob_path(option), current, value))
        return results

    def verify_switches(self):
        """[(irq, name, path, current, expected)] for the IRQs selected now."""
        results = []
        for irq, info in self.selected(self._interrupts()).items():
            current = self.iface.read_switch(irq)
            if current is None:
                continue            # gone between the two reads
            results.append((irq, info.name, self.iface.switch_path(irq), int(current), 1))
        return results

    # -- restore -------------------------------------------------------------

    def restore_all(self):
        """Put back every original and forget them."""
        knobs = self.originals.get("knobs", {})
        for option in RESTORE_ORDER:
            if option not in knobs or knobs[option] is None:
                continue
            value = knobs[option]
            try:
                if self.iface.read_knob(option) == value:
                    continue
            except (OSError, ValueError):
                pass
            try:
                self.iface.write_knob(option, value)
            except GsimWriteError as err:
                log.error("gsim: cannot restore %s to %s: %s", option, value, err)
        interrupts = self._interrupts()
        for key, saved in sorted(self.originals.get("irqs", {}).items(), key=lambda x: int(x[0])):
            irq = int(key)
            info = interrupts.get(irq)
            if info is None or info.name != saved.get("name"):
                continue            # gone (or reused): nothing of ours to restore
            current = self.iface.read_switch(irq)
            if current is None or int(current) == saved["allow"]:
                continue
            try:
                self.iface.write_switch(irq, bool(saved["allow"]))
            except GsimWriteError as err:
                if not self._vanished(irq):
                    log.error("gsim: IRQ %d: cannot restore its switch: %s", irq, err)
        self.originals = {"shape": self.iface.shape, "knobs": {}, "irqs": {}}
        if self.state is not None:
            self.state.remove()
