# SPDX-License-Identifier: GPL-2.0-or-later
"""Saved runs: `irqtune-bench report`, `compare` and `docs` read the JSON
a run wrote (plain, or xz-compressed as docs/data keeps it).  A file that
is not a regular file, is not JSON or does not have a run's shape is
refused in one line naming the file and what is wrong (exit 2)."""

import json
import lzma
import os
import stat
import sys
from pathlib import Path

from .cli import BadArgument, shown

LIMIT = 256 << 20       # bytes read (decompressed) at most


def read_regular(path):
    """The bytes of path if it is a regular file; never waits on a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as err:
        raise BadArgument("%s: %s" % (shown(str(path), 300), err.strerror)) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise BadArgument("%s: not a regular file" % shown(str(path), 300))
        chunks, size = [], 0
        while size <= LIMIT:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
    except OSError as err:
        raise BadArgument("%s: %s" % (shown(str(path), 300), err.strerror)) from None
    finally:
        os.close(fd)
    if str(path).endswith(".xz"):
        try:
            data = lzma.LZMADecompressor().decompress(data, max_length=LIMIT + 1)
        except lzma.LZMAError as err:
            raise BadArgument("%s: not xz data (%s)" % (shown(str(path), 300), err)) from None
    if len(data) > LIMIT:
        raise BadArgument("%s: larger than %d MiB" % (shown(str(path), 300), LIMIT >> 20))
    return data


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# what report.py reads of each run: key -> test (None allowed for numbers)
RUN_KEYS = {"mode": lambda v: isinstance(v, str), "offered": lambda v: isinstance(v, int),
            "round": lambda v: isinstance(v, int), "topology": lambda v: isinstance(v, str),
            "failed": lambda v: isinstance(v, str), "disturbed": lambda v: isinstance(v, list),
            "hist": lambda v: isinstance(v, dict) and isinstance(v.get("counts"), list)
            and all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, int) for x in p)
                    for p in v["counts"]),
            "slices_p99_us": lambda v: isinstance(v, list) and all(x is None or _number(x) for x in v),
            "attempts": lambda v: isinstance(v, list) and all(isinstance(a, dict) for a in v)}


def shape_problem(run):
    """What keeps a decoded JSON value from being a saved run, or None."""
    from .report import KEYS
    if not isinstance(run, dict):
        return "not a run of irqtune-bench (a JSON object with settings, loads and runs)"
    if not isinstance(run.get("settings"), dict) or not isinstance(run["settings"].get("modes"), list) \
            or not all(isinstance(m, str) for m in run["settings"]["modes"]):
        return "settings.modes: missing or not a list of mode names"
    if not isinstance(run.get("loads"), list) or not all(isinstance(x, int) and not isinstance(x, bool)
                                                          for x in run["loads"]):
        return "loads: missing or not a list of whole numbers"
    if not isinstance(run.get("runs"), list):
        return "runs: missing or not a list"
    for key in ("testbed", "who_sets"):
        if not isinstance(run.get(key, {}), dict):
            return "%s: not an object" % key
    for key in ("saturation", "recommend", "placement"):
        if not isinstance(run.get(key) or {}, dict):
            return "%s: not an object" % key
    for i, r in enumerate(run["runs"], 1):
        if not isinstance(r, dict):
            return "run %d: not an object" % i
        for key in ("mode", "offered"):
            if key not in r:
                return "run %d: no %s" % (i, key)
        for key, test in RUN_KEYS.items():
            if key in r and not test(r[key]):
                return "run %d: %s is %s" % (i, key, shown(json.dumps(r[key])[:40]))
        for key in KEYS:
            if r.get(key) is not None and not _number(r[key]):
                return "run %d: %s is %s, not a number" % (i, key, shown(json.dumps(r[key])[:40]))
    return None


def load(path):
    """The saved run at path; BadArgument when it is not one."""
    data = read_regular(path)
    try:
        run = json.loads(data)
    except ValueError as err:
        raise BadArgument("%s: not JSON (%s)" % (shown(str(path), 300), err)) from None
    problem = shape_problem(run)
    if problem:
        raise BadArgument("%s: %s" % (shown(str(path), 300), problem))
    return run


def main(args):
    """report, compare and docs of saved runs; the exit code."""
    from . import report as rep
    if args.command == "docs":
        from . import docs
        return docs.regenerate(load(args.json), Path(args.markdown), Path(args.images))
    runs = [load(p) for p in ([args.json] if args.command == "report" else args.json)]
    if args.command == "report":
        if args.verdicts_json:
            json.dump({"verdicts": rep.verdict_records(runs[0])}, sys.stdout, indent=1)
            sys.stdout.write("\n")
            return 0
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
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
