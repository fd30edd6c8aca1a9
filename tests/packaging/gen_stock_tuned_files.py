#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Regenerate stock_tuned_files.json: the files of upstream TuneD's RPMs.

Not run by the tests (they read the JSON).  Needs a git clone of
https://github.com/redhat-performance/tuned.  For every tag in TAGS and
every profile layout the tag supports, this runs upstream's own
`make install` into a scratch DESTDIR and assigns each installed file to
the binary package whose `%files` section (in that tag's tuned.spec)
claims it, the most specific pattern winning.  The result is a list of
facts (paths per package), kept as test data:

    tests/packaging/gen_stock_tuned_files.py /path/to/tuned-clone
"""

import fnmatch
import json
import os
import re
import subprocess
import sys
import tempfile

TAGS = ["v2.20.0", "v2.21.0", "v2.22.0", "v2.22.1", "v2.23.0", "v2.24.0", "v2.24.1",
        "v2.25.0", "v2.25.1", "v2.26.0", "v2.27.0", "v2.28.0-rc.1"]
SITELIB = "/SITELIB"       # stands for %{python3_sitelib}; "{sitelib}" in the JSON
LAYOUTS = {
    # name: (system profiles dir, user profiles dir)
    "old": ("/usr/lib/tuned", "/etc/tuned"),
    "new": ("/usr/lib/tuned/profiles", "/etc/tuned/profiles"),
}
MACROS = {
    "_sbindir": "/usr/sbin", "_bindir": "/usr/bin", "_datadir": "/usr/share",
    "_sysconfdir": "/etc", "_libexecdir": "/usr/libexec", "_prefix": "/usr",
    "_mandir": "/usr/share/man", "_unitdir": "/usr/lib/systemd/system",
    "_tmpfilesdir": "/usr/lib/tmpfiles.d", "_var": "/var", "_localstatedir": "/var",
    "docdir": "/usr/share/doc/tuned", "python3_sitelib": SITELIB,
    "python2_sitelib": SITELIB, "python_sitelib": SITELIB,
}


def git(repo, *argv):
    return subprocess.run(["git", "--git-dir", repo, *argv], check=True,
                          capture_output=True).stdout


def installed_files(repo, tag, layout):
    system, user = LAYOUTS[layout]
    with tempfile.TemporaryDirectory() as tmp:
        src, dest = os.path.join(tmp, "src"), os.path.join(tmp, "root")
        os.mkdir(src)
        archive = git(repo, "archive", tag)
        subprocess.run(["tar", "-x", "-C", src], input=archive, check=True)
        args = ["make", "-C", src, "DESTDIR=" + dest, "PYTHON=/usr/bin/python3",
                "PYTHON_SITELIB=" + SITELIB, "DOCDIR=" + MACROS["docdir"],
                "UNITDIR=" + MACROS["_unitdir"], "TMPFILESDIR=" + MACROS["_tmpfilesdir"]]
        makefile = open(os.path.join(src, "Makefile")).read()
        if "TUNED_SYSTEM_PROFILES_DIR" in makefile:      # 2.24.1+
            args += ["TUNED_SYSTEM_PROFILES_DIR=" + system, "TUNED_USER_PROFILES_DIR=" + user]
        elif "TUNED_PROFILESDIR = /usr/lib/tuned/profiles" in makefile:    # 2.23, 2.24.0
            if layout != "new":
                return None
        elif layout != "old":                            # 2.20 - 2.22
            return None
        subprocess.run(args + ["install"], check=True, capture_output=True)
        subprocess.run(args + ["install-ppd"], capture_output=True)    # 2.25+
        found = set()
        for dirpath, _, files in os.walk(dest):
            for f in files:
                path = os.path.join(dirpath, f)[len(dest):]
                if "/__pycache__/" not in path:
                    found.add(path)
        return found


def files_sections(spec_text, system):
    """{package: ([include patterns], [exclude patterns])} from %files."""
    macros = dict(MACROS, system_profiles_dir=system,
                  user_profiles_dir=LAYOUTS["old" if system == "/usr/lib/tuned" else "new"][1])
    sections, current = {}, None
    for line in spec_text.splitlines():
        line = line.strip()
        m = re.match(r"%files(?:\s+(-n\s+)?(\S+))?\s*$", line)
        if m:
            name = m.group(2)
            current = "tuned" if not name else (name if m.group(1) else "tuned-" + name)
            sections.setdefault(current, ([], []))
            continue
        if line.startswith("%changelog") or (line.startswith("%") and re.match(
                r"%(package|description|prep|build|install|check|post|pre|trigger)", line)):
            current = None
            continue
        if current is None or not line or line.startswith("#") or line.startswith("%if") \
                or line.startswith("%else") or line.startswith("%endif"):
            continue
        exclude = line.startswith("%exclude")
        line = re.sub(r"%(exclude|doc|license|ghost|dir|config\([^)]*\)|config|"
                      r"verify\([^)]*\)|attr\([^)]*\))\s*", "", line).strip()
        if not line.startswith("%{") and not line.startswith("/"):
            continue
        path = re.sub(r"%\{\??([A-Za-z0-9_]+)\}", lambda m: macros.get(m.group(1), m.group(0)),
                      line)
        if "%{" in path:
            continue
        sections[current][1 if exclude else 0].append(path)
    return sections


def claims(pattern, path):
    return fnmatch.fnmatchcase(path, pattern) or path.startswith(pattern.rstrip("/") + "/")


def assign(files, sections):
    result = {}
    for path in files:
        best, best_len = "(not in any package)", -1
        for package, (include, exclude) in sections.items():
            if any(claims(p, path) for p in exclude):
                continue
            for pattern in include:
                if claims(pattern, path) and len(pattern) > best_len:
                    best, best_len = package, len(pattern)
        result.setdefault(best, set()).add(path.replace(SITELIB, "{sitelib}"))
    return result


def main(clone):
    repo = os.path.join(clone, ".git") if os.path.isdir(os.path.join(clone, ".git")) else clone
    data = {
        "source": "redhat-performance/tuned, tags %s: each tag's `make install` "
                  "assigned to packages by its tuned.spec %%files sections "
                  "(tests/packaging/gen_stock_tuned_files.py)" % ", ".join(TAGS),
        "sitelib": "{sitelib} is %{python3_sitelib}",
        "layouts": {},
    }
    for layout in LAYOUTS:
        merged = {}
        for tag in TAGS:
            files = installed_files(repo, tag, layout)
            if files is None:
                continue
            spec = git(repo, "show", "%s:tuned.spec" % tag).decode()
            for package, paths in assign(files, files_sections(spec, LAYOUTS[layout][0])).items():
                merged.setdefault(package, {}).update({p: tag for p in paths
                                                       if p not in merged.get(package, {})})
            print(layout, tag, len(files), file=sys.stderr)
        data["layouts"][layout] = {pkg: sorted(paths) for pkg, paths in sorted(merged.items())}
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stock_tuned_files.json")
    with open(out, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
