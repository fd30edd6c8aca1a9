#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Write tuned-plugins-irqtune(7) from the plugins' own documentation.

TuneD documents a plugin by its class docstring (AsciiDoc, the text of the
reference manual) and its options by get_config_options_hints() (what
`tuned-adm list plugins -v` prints).  This script reads both from
tuned-plugins/plugin_*.py with the ast module - TuneD need not be
installed - and puts them between the hand-written parts in
docs/man/tuned-plugins-irqtune.7.in, so the man page cannot drift from
the code:

    docs/man/plugin-man.py VERSION OUTPUT
"""

import ast
import glob
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TEMPLATE = os.path.join(HERE, "tuned-plugins-irqtune.7.in")


def plugin_info(path):
    """(name, docstring, {option: default}, {option: hint}) of a plugin file."""
    tree = ast.parse(open(path).read(), path)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.endswith("Plugin"):
            doc = ast.get_docstring(node, clean=True) or ""
            options, hints = {}, {}
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name in (
                        "_get_config_options", "get_config_options_hints"):
                    returned = [n.value for n in ast.walk(item) if isinstance(n, ast.Return)]
                    value = ast.literal_eval(returned[0])
                    if item.name == "_get_config_options":
                        options = value
                    else:
                        hints = value
            name = os.path.basename(path)[len("plugin_"):-len(".py")]
            return name, doc, options, hints
    raise SystemExit("%s: no plugin class" % path)


def escape(text):
    return text.replace("\\", "\\e")


def inline(text):
    """AsciiDoc inline markup of the docstrings -> troff font changes."""
    text = escape(text)

    def code(m):
        inner = m.group(1).replace("-", "\\-")
        inner = re.sub(r"(?<![A-Za-z0-9])_([A-Za-z0-9]+)_(?![A-Za-z0-9])", r"\\fI\1\\fB", inner)
        return "\\fB" + inner + "\\fR"
    text = re.sub(r"\[option\]`([^`]+)`", code, text)
    text = re.sub(r"`([^`]+)`", code, text)
    return text


def line_out(text):
    # a leading dot or quote would be read as a request
    return "\\&" + text if text[:1] in (".", "'") else text


def docstring_troff(doc):
    """The docstring body (after the "`name`::" line) as troff."""
    lines = doc.splitlines()
    if lines and re.match(r"^`[a-z_]+`::$", lines[0].strip()):
        lines = lines[1:]
    out, i, paragraph = [], 0, []

    def flush():
        if paragraph:
            out.append(".PP")
            out.extend(line_out(inline(x)) for x in paragraph)
            paragraph.clear()
    while i < len(lines):
        line = lines[i].strip()
        if line in ("", "+"):
            flush()
        elif line.startswith(".") and len(line) > 1 and line[1] != ".":
            flush()
            out.append(".PP")
            out.append(".I " + '"' + inline(line[1:]).replace('"', '\\(dq') + '"')
        elif line == "====":
            flush()
        elif line == "----":
            flush()
            out.extend([".RS 4", ".nf"])
            i += 1
            while i < len(lines) and lines[i].strip() != "----":
                out.append(line_out(escape(lines[i].rstrip()).replace("-", "\\-")))
                i += 1
            out.extend([".fi", ".RE"])
        else:
            paragraph.append(line)
        i += 1
    flush()
    return out


def plugin_section(path):
    name, doc, options, hints = plugin_info(path)
    out = [".SS \"%s\"" % name]
    out.extend(docstring_troff(doc))
    out.append(".PP")
    out.append("Options (\\fBtuned\\-adm list plugins \\-v\\fR shows the same hints):")
    for option in options:
        out.append(".TP")
        out.append("\\fB%s\\fR" % option)
        hint = hints.get(option, "")
        out.append(line_out(inline(hint)) if hint else "(no hint)")
    return out


def main(version, output):
    plugins = sorted(glob.glob(os.path.join(ROOT, "tuned-plugins", "plugin_*.py")))
    sections = []
    for path in plugins:
        sections.extend(plugin_section(path))
    names = ", ".join("\\fB%s\\fR" % plugin_info(p)[0] for p in plugins)
    text = open(TEMPLATE).read()
    # The newest plugin's mtime: the commit time in a git archive tarball.
    date = time.strftime("%Y-%m-%d", time.gmtime(max(os.path.getmtime(p) for p in plugins)))
    text = text.replace("@VERSION@", version).replace("@DATE@", date)
    text = text.replace("@PLUGIN_NAMES@", names)
    text = text.replace("@PLUGINS@\n", "\n".join(sections) + "\n")
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    with open(output + ".tmp", "w") as f:
        f.write(text)
    os.replace(output + ".tmp", output)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
