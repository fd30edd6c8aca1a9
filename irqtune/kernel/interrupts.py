# SPDX-License-Identifier: GPL-2.0-or-later
"""/proc/interrupts: every numbered line as an IrqInfo."""

import re
from dataclasses import dataclass

from .kfs import KFS

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


def read_interrupts(kfs=KFS):
    return parse_interrupts(kfs.read_text(kfs.proc_path("interrupts")))
