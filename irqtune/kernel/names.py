# SPDX-License-Identifier: GPL-2.0-or-later
"""The spellings of a value's name, converted here only, and the one way a
name someone else chose is shown (shown()).

Profiles and log lines use option names (defer_hard_irqs); the netdev
family's attributes and the gsim procfs files use attribute names
(defer-hard-irqs); pyroute2 names netlink attributes with a prefix
(NETDEV_A_NAPI_DEFER_HARD_IRQS).
"""


def attr_name(option):
    """defer_hard_irqs -> defer-hard-irqs."""
    return option.replace("_", "-")


def option_name(attr):
    """defer-hard-irqs -> defer_hard_irqs."""
    return attr.replace("-", "_")


def nla_name(prefix, attr):
    """("NETDEV_A_NAPI_", "defer-hard-irqs") -> NETDEV_A_NAPI_DEFER_HARD_IRQS."""
    return prefix + option_name(attr).upper()


def attr_of_nla(prefix, name):
    """The attribute name of a prefixed netlink attribute name, or None
    when the name does not carry the prefix."""
    if not name.startswith(prefix):
        return None
    return attr_name(name[len(prefix):].lower())


# The longest run of a name or value that reaches a message: a device or
# process name (15 characters) and a unit name fit; a value longer than
# this is cut, and the message says how long it was, so a 100 KB profile
# value or file line costs one short line.
SHOWN_MAX = 64
# A file's path: longer than a name, and cut at this.
SHOWN_PATH_MAX = 256
# The longest line the front ends print or log (their last guard, over a
# whole line: what no shown() of a name caught is still escaped and cut).
LINE_MAX = 2000


def _escaped_char(char):
    """A character that is not printable as Python's own literals write
    it (\\n, \\x1b, \\u202e); a byte that was not UTF-8 (surrogateescape) as
    that byte (\\xff)."""
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:
        return "\\x%02x" % (code - 0xDC00)
    return repr(char)[1:-1]     # repr escapes exactly what is not printable


def shown(value, limit=SHOWN_MAX, quote=False):
    """The one way a name or value someone else chose (a process's comm, a
    device name - also from another network namespace -, a unit name, a
    value read from a profile or a file) goes into a terminal line or a
    log line: every character that is not printable (control characters
    such as ESC and newline, DEL, C1 controls, line and paragraph
    separators, bidirectional overrides, undecodable bytes) written as an
    escape, so nothing reaches a terminal that acts on it and the line
    stays one line; and at most limit characters of it, followed by
    "...(N characters)" when it was longer.

    quote=True puts it in single quotes where it would not read as one
    word: empty, holding a space or an escape, or cut.  A backslash stays
    as it is: systemd's unit names carry their own escapes (\\x2d).
    """
    text = value if isinstance(value, str) else str(value)
    cut = len(text) > limit
    head = text[:limit]
    if head.isprintable():
        out = head
    else:
        out = "".join(c if c.isprintable() else _escaped_char(c) for c in head)
    if quote and (out != head or cut or not out or any(c.isspace() for c in out)):
        out = "'%s'" % out
    if cut:
        out += "...(%d characters)" % len(text)
    return out
