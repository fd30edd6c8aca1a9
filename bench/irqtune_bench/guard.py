# SPDX-License-Identifier: GPL-2.0-or-later
"""The bench's two refusals and its one output guard, below every other
module of the bench (the command line, the orchestrator, the reports and
what runs on the server import them alike):

  BadArgument  an argument, a run file or a value for the server's files
               refused in one line (the command exits 2)
  BenchError   a host could not do what the bench asked (exits 1)
  shown()      how a string from an argument, a run file or a remote host
               reaches a terminal, a log or a document; md() for markdown,
               written_error() for an OSError of the bench's files
"""

# How much of a value a refusal quotes; of a string from a run file or a
# remote host a report, a document or a log line shows; of a whole line.
QUOTED_MAX, TEXT_MAX, LINE_MAX = 80, 1000, 2000


class BadArgument(ValueError):
    """One line refusing an argument: its name, its value, what is accepted."""


class BenchError(Exception):
    """The server could not do what the bench asked."""


def shown(value, limit=QUOTED_MAX):
    """The bench's one output guard: how a string from an argument, a run
    file or a remote host reaches a terminal, a log or a document -
    everything but printable ASCII escaped (control characters, so nothing
    reaches a terminal that acts on it and a line stays one line; and
    non-ASCII, so no look-alike or invisible character passes for another),
    cut to limit.  Printable ASCII is left as it is, so shown(shown(x)) is
    shown(x) and a line may pass it twice."""
    text = value if isinstance(value, str) else str(value)
    text = text.encode("ascii", "backslashreplace").decode()
    text = "".join(c if c.isprintable() else "\\x%02x" % ord(c) for c in text)
    return text if len(text) <= limit else text[:limit - 3] + "..."


# what markdown acts on inside a line: a table cell's end, a code span,
# HTML and autolinks, a link or image; and the backslash escaping them
MARKDOWN_ACTIVE = str.maketrans({c: "\\" + c for c in "\\`|<>[]"})


def md(value, limit=TEXT_MAX):
    """shown() for a markdown document: also each character markdown acts
    on inside a line backslash-escaped (GitHub's tables take \\| in a
    code span too), so a run file's string stays one cell of plain text."""
    return shown(value, limit).translate(MARKDOWN_ACTIVE)


def written_error(err):
    """An OSError of the bench's files as a line's text."""
    if err.filename is None:
        return shown(err, LINE_MAX)
    return "%s: %s" % (shown(err.filename, TEXT_MAX), shown(err.strerror or err, TEXT_MAX))
