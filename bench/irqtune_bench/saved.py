# SPDX-License-Identifier: GPL-2.0-or-later
"""Saved runs: `irqtune-bench report`, `compare` and `docs` read the JSON
a run wrote (plain, or xz-compressed as docs/data keeps it).  A file that
is not a regular file, is not JSON or does not have a run's shape is
refused in one line naming the file and what is wrong (exit 2), before
anything is computed from it.

What a run file may cost is bounded before it is decoded, so a small
crafted file cannot take gigabytes or minutes (issue 47): at most
files.LIMIT bytes read and decompressed (files.read_regular; xz's decoder
at most files.XZ_MEMORY), at most MAX_ITEMS JSON values and keys (counted
on the text: each but the first follows a , : [ or {), nested at most
MAX_DEPTH deep (json's parser recurses); then runschema.problem() checks every field the code reads and
bounds the counts of modes, loads, runs, buckets and slices.  The real
run docs/data/lab-bench.json.xz is 3.2 MB, 270,000 values, 7 deep.
Measured (2 cores, issue 47): a refused file costs at most 0.4 s and
80 MiB; one at the bounds about 300 MiB to load (4,000,000 values, or
32 MiB of text that decodes to 4 bytes a character), twice that for
compare's two files."""

import json
import re
import sys
from pathlib import Path

from . import docs, runschema
from . import report as rep
from .files import read_regular, results_dir
from .guard import BadArgument, shown

MAX_ITEMS = 4000000
MAX_DEPTH = 20
STRING = re.compile(rb'"[^"]*"?')        # once escaped quotes and backslashes are gone
PAIR = re.compile(rb"\[\]|\{\}")
OPENERS = re.compile(rb"[\[{]+")
NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))


def cost_problem(data):
    """What makes JSON text too costly to decode (too many values, too
    deep), or None - cheaply, on the bytes."""
    items = 1 + sum(data.count(c) for c in (b",", b":", b"[", b"{"))
    if items > MAX_ITEMS:
        return "values: %d or more, accepted at most %d" % (items, MAX_ITEMS)
    # brackets outside strings; then each pass takes the innermost pairs away
    text = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    brackets = STRING.sub(b"", text).translate(None, NOT_BRACKETS)
    for depth in range(1, MAX_DEPTH + 1):
        brackets, taken = PAIR.subn(b"", brackets)
        if not brackets:
            return None
        if not taken:
            # no pair left: the parser stops at the first closer that
            # remains, after at most the openers before it
            run = max((len(m) for m in OPENERS.findall(brackets)), default=0)
            if depth - 1 + run <= MAX_DEPTH:
                return None
            break
    return "nesting: deeper than %d levels, accepted at most %d" % (MAX_DEPTH, MAX_DEPTH)


def load(path):
    """The saved run at path; BadArgument when it is not one."""
    data = read_regular(path)
    problem = cost_problem(data)
    if problem is None:
        try:
            run = json.loads(data)
        except ValueError as err:
            raise BadArgument("%s: not JSON (%s)" % (shown(str(path), 300), err)) from None
        problem = runschema.problem(run)
    if problem:
        raise BadArgument("%s: %s" % (shown(str(path), 300), problem))
    return run


def main(args):
    """report, compare and docs of saved runs; the exit code."""
    if args.command == "docs":
        return docs.regenerate(load(args.json), Path(args.markdown), Path(args.images),
                               run_name=Path(args.json).name)
    runs = [load(p) for p in ([args.json] if args.command == "report" else args.json)]
    if args.command == "report":
        if args.verdicts_json:
            json.dump({"verdicts": rep.verdict_records(runs[0])}, sys.stdout, indent=1)
            sys.stdout.write("\n")
            return 0
        out = results_dir(args.out)
        rep.write_report(runs[0], out, args.name or Path(args.json).name.split(".", 1)[0])
        return 0
    if len(runs) > 2:
        raise BadArgument("accepted one or two JSON files")
    modes, loads = runs[0]["settings"]["modes"], runs[0]["loads"]
    if len(runs) == 2:
        if runs[1]["loads"] != loads:
            print("irqtune-bench compare: the runs offered different loads (%s, %s): only the "
                  "common ones are compared" % (loads, runs[1]["loads"]), file=sys.stderr)
            loads = [x for x in loads if x in runs[1]["loads"]]
        print(rep.compare(runs[0]["runs"], runs[1]["runs"], modes, loads,
                          labels=tuple(Path(p).name for p in args.json)), end="")
        return 0
    split = rep.split_topologies(runs[0]["runs"])
    if set(split) != {"shared", "pinned"}:
        raise BadArgument("%s holds one topology (%s): name a second run"
                          % (shown(args.json[0]), ", ".join(shown(t) for t in split)))
    print(rep.compare(split["shared"], split["pinned"], modes, loads, labels=("shared", "pinned")), end="")
    return 0
