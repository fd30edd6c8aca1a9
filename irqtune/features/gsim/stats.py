# SPDX-License-Identifier: GPL-2.0-or-later
"""GSIM statistics: the per-CPU table, settings lines and (fixed GSIM) the
per-IRQ hold table of any shape's stats file, as records.

GsimInterface.stats() reads them; on v1-v3 kernels the knobs' values are
the settings lines of the same file (GsimInterface.read_knobs).
"""

import re
from dataclasses import dataclass, field

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
    irqs: dict = field(default_factory=dict)   # irq -> {"allowed": 0/1, "holds": n}

    def total_rate(self):
        return sum(c.irq_rate or 0 for c in self.cpus)

    def max_delay_ns(self):
        return max((c.delay_ns or 0 for c in self.cpus), default=0)


def parse_stats(text):
    """GsimStats of any shape's statistics text."""
    cpus, info, irqs, header = [], {}, {}, None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        bare = stripped.lstrip("#").strip()
        tokens = bare.split()
        if tokens and tokens[0].lower() in ("cpu", "irq") and len(tokens) > 1:
            header = [t.lower() for t in tokens]
            continue
        if header and header[0] == "irq" and tokens and len(tokens) == len(header) \
                and all(t.isdigit() for t in tokens):
            # the fixed GSIM's per-IRQ table: "irq allowed holds"
            irqs[int(tokens[0])] = dict(zip(header[1:], (int(t) for t in tokens[1:])))
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
    return GsimStats(cpus, info, irqs)


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
