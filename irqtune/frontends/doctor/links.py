# SPDX-License-Identifier: GPL-2.0-or-later
"""One link of the suspension chain as the doctor reports it, and the
verdict over all of them."""

from dataclasses import asdict, dataclass, field

from ...kernel.names import LINE_MAX, shown

OK, BROKEN, UNKNOWN, INFO = "ok", "broken", "unknown", "info"

# The chain in the order suspension needs it; the verdict names the first
# broken link in this order.
GROUPS = ("kernel", "napi", "process", "epoll", "window", "recommend")

EXIT_ENGAGED, EXIT_NOT_ENGAGED, EXIT_CANNOT_TELL = 0, 1, 2


@dataclass
class Link:
    group: str          # one of GROUPS
    subject: str        # what was checked: "NAPI 8193 (eth0)", "pid 812 (memcached)"
    state: str          # OK, BROKEN, UNKNOWN or INFO
    text: str           # what holds, or what is wrong
    fix: str = ""       # the option, profile or command that repairs it
    data: dict = field(default_factory=dict)   # the values behind it (--json)


@dataclass
class Report:
    links: list = field(default_factory=list)
    measured: dict = None       # the target's busy periods (irqtune.frontends.doctor.recommend)
    recommend: dict = None      # the values that fit them

    def add(self, group, subject, state, text, fix="", **data):
        self.links.append(Link(group, subject, state, text, fix, data))

    def ordered(self):
        return sorted(self.links, key=lambda l: GROUPS.index(l.group))

    def first_broken(self):
        return next((l for l in self.ordered() if l.state == BROKEN), None)

    def verdict(self):
        """(exit status, sentence)."""
        broken = self.first_broken()
        if broken is not None:
            return EXIT_NOT_ENGAGED, "suspension not engaged: %s: %s" % (broken.subject, broken.text)
        unknown = next((l for l in self.ordered() if l.state == UNKNOWN), None)
        if unknown is not None:
            return EXIT_CANNOT_TELL, "cannot tell: %s: %s" % (unknown.subject, unknown.text)
        return EXIT_ENGAGED, "suspension engaged"

    def as_dict(self):
        status, sentence = self.verdict()
        return {"verdict": sentence, "exit_status": status,
                "links": [asdict(l) for l in self.ordered()],
                "measured": self.measured, "recommend": self.recommend}


def format_text(report):
    """The report for a terminal.  Names in it were escaped where they
    entered (irqtune.kernel.names.shown); each line is passed through it once
    more, so that whatever a link holds prints as that one line."""
    def one(line):
        return shown(line, LINE_MAX)
    lines = []
    for link in report.ordered():
        lines.append(one("%-7s %-8s %s: %s" % (link.state, link.group, link.subject, link.text)))
        if link.fix and link.state in (BROKEN, UNKNOWN):
            lines.append("                 fix: " + one(link.fix))
        for extra in link.data.get("lines", ()):     # e.g. lines for a variables file
            lines.append("                   " + one(extra))
    lines.append(one("verdict: " + report.verdict()[1]))
    return "\n".join(lines)
