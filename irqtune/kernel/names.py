# SPDX-License-Identifier: GPL-2.0-or-later
"""The spellings of a value's name, converted here only, and the one way a
name someone else chose is shown (shown()).

Profiles and log lines use option names (defer_hard_irqs); the netdev
family's attributes and the gsim procfs files use attribute names
(defer-hard-irqs); pyroute2 names netlink attributes with a prefix
(NETDEV_A_NAPI_DEFER_HARD_IRQS).
"""

import unicodedata


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


# Letters and symbols that Python calls printable but that print as
# nothing or a blank (Hangul fillers, the braille blank): "eth0\u3164"
# would read as "eth0".
_BLANK_LOOKING = frozenset("\u115f\u1160\u3164\uffa0\u2800")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\", "'": "\\'"}


def _hidden(char):
    """Not printable (controls, format characters such as U+200B and U+FEFF,
    spaces other than " ", separators, bytes that were not UTF-8), or
    printable but invisible on its own (combining marks, fillers)."""
    return (not char.isprintable() or char in _BLANK_LOOKING
            or unicodedata.category(char) in ("Mn", "Me"))


def _escaped_char(char):
    """char in the shell's $'...' quoting.  \\xNN is a byte - an ASCII
    control, or a byte that was not UTF-8 (surrogateescape) -, every other
    code point is \\uNNNN or \\UNNNNNNNN, so U+0085 and the byte 0x85 differ."""
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if code < 0x80 or 0xDC80 <= code <= 0xDCFF:
        return "\\x%02x" % (code & 0xFF)
    return "\\u%04x" % code if code <= 0xFFFF else "\\U%08x" % code


def _dollar_quoted(text):
    return "$'%s'" % "".join(_escaped_char(c) if c in _NAMED or _hidden(c) else c
                             for c in text)


def shown(value, limit=SHOWN_MAX, quote=False):
    """The one way a name or value someone else chose (a process's comm, a
    device name - also from another network namespace -, a unit name, a
    value read from a profile or a file) goes into a terminal line, a log
    line or a metrics label: at most limit characters of it, followed by
    "...(N characters)" when it was longer, and

    - the name as it is when every character of it is printable and
      visible: unit names keep systemd's own escapes (\\x2d) as systemctl
      prints them, and a log line's backslashes stay single;
    - else the whole name in the shell's $'...' quoting (bash, zsh, ksh,
      POSIX.1-2024 sh), each character that a terminal acts on or that
      does not show (controls such as ESC and newline, DEL, C1 controls,
      line separators, bidirectional overrides, format characters such as
      U+200B, fillers, combining marks) and each byte that was not UTF-8
      written as an escape (\\x1b, \\u200b, \\xff), and \\ and ' escaped too.

    So nothing reaches a terminal that acts on it, the line stays one line,
    and two names never print alike: "q<ESC>" is $'q\\x1b' while a name
    literally "q\\x1b" prints as itself (a name that reads as $'...' is
    always quoted so); pasted into a shell, the quoted form gives the
    name's bytes back.

    Why a quoted form rather than \\\\ for every \\: unit names carry
    systemd's \\x2d, and the front ends pass each whole line, already
    holding shown names, through shown() once more (LINE_MAX) - a doubled
    \\ would double every escape there, where $'...' leaves such a line be.

    quote=True puts a name in single quotes where it would not read as one
    word: empty, holding a space, or cut; quote="always" puts every name in
    them ($'...' is quoted already; a name holding ' is written in $'...').
    """
    text = value if isinstance(value, str) else str(value)
    cut = len(text) > limit
    head = text[:limit]
    plain = head.isascii() and head.isprintable() or not any(map(_hidden, head))
    said_cut = "...(%d characters)" % len(text) if cut else ""
    reads_quoted = head.startswith("$'") and head.endswith("'")
    if not plain or reads_quoted or (quote and "'" in head):
        return _dollar_quoted(head) + said_cut
    if quote == "always":           # a refusal's value, quoted with its length as before
        return "'%s%s'" % (head, said_cut)
    if quote and (cut or not head or " " in head):
        return "'%s'%s" % (head, said_cut)
    return head + said_cut
