# SPDX-License-Identifier: GPL-2.0-or-later
"""The RPMs built from the committed tree: contents, rpmlint, collisions with
the stock TuneD packages, and an installation into a scratch root that
TuneD's own loader and profile locator must find.

Two builds: the default (profiles in /usr/lib/tuned/profiles, TuneD 2.23+,
RHEL 10 and Fedora) and the RHEL < 10 layout (/usr/lib/tuned).
"""

import glob
import gzip
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HERE = os.path.dirname(os.path.abspath(__file__))
PROFILES = sorted(os.listdir(os.path.join(ROOT, "profiles")))
PLUGINS = sorted(os.path.basename(p)[len("plugin_"):-3]
                 for p in glob.glob(os.path.join(ROOT, "tuned-plugins", "plugin_*.py")))
FUNCTIONS = sorted(os.path.basename(p)[len("function_"):-3]
                   for p in glob.glob(os.path.join(ROOT, "tuned-functions", "function_*.py")))
LAYOUTS = {
    # layout: (profile directory, TuneD's default profile_dirs for it).
    # old: TuneD 2.20-2.22 consts.LOAD_DIRECTORIES, and RHEL 9 builds of later
    # versions; new: consts.CFG_DEF_PROFILE_DIRS of TuneD 2.23+.
    "old": ("/usr/lib/tuned", ["/usr/lib/tuned", "/etc/tuned"]),
    "new": ("/usr/lib/tuned/profiles", ["/usr/lib/tuned/profiles", "/etc/tuned/profiles"]),
}
REALTIME_PROFILES = {"realtime-virtual-host-irqtune"}
PROFILE_PACKAGES = {"tuned-profiles-irqtune": sorted(set(PROFILES) - REALTIME_PROFILES),
                    "tuned-profiles-irqtune-realtime": sorted(REALTIME_PROFILES)}
NAMES = {"python3-irqtune", "tuned-plugins-irqtune", "tuned-profiles-irqtune",
         "tuned-profiles-irqtune-realtime",
         "irqtune-kernel-patches",
         "irqtune-preload", "irqtune-metrics", "irqtune-bench"}
ARCH_PACKAGES = {"irqtune-preload", "irqtune-bench"}     # compiled code


def rpm_q(path, *query):
    return subprocess.run(["rpm", "-qp", *query, path], check=True, capture_output=True,
                          text=True).stdout.splitlines()


TUNED_SID = os.path.join(ROOT, "build", "tuned-sid")


def build(top, layout):
    """make rpm; %check runs the unit suite against a TuneD of the layout's
    era: the old layout (RHEL 9, TuneD < 2.23) against the host's 2.20, the
    new one (RHEL 10, Fedora) against Debian unstable's, unpacked."""
    if layout == "old":
        defines = ['RPM_DEFINES=--define "tuned_profile_dir /usr/lib/tuned"']
    else:
        subprocess.run(["make", "-C", ROOT, "build/tuned-sid/.unpacked"], check=True,
                       capture_output=True)
        with open(os.path.join(TUNED_SID, "version")) as f:
            version = f.read().strip()
        defines = ['RPM_DEFINES=--define "tuned_pythonpath %s" --define "tuned_version %s"'
                   % (os.path.join(TUNED_SID, "root/usr/lib/python3/dist-packages"), version)]
    result = subprocess.run(["make", "-C", ROOT, "rpm", "RPMTOP=%s" % top, *defines],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (top / "build.log").write_text(result.stdout + result.stderr)
    found = {}
    for path in glob.glob(str(top / "RPMS/*/*.rpm")):
        found[rpm_q(path, "--qf", "%{NAME}")[0]] = path
    found["src"] = glob.glob(str(top / "SRPMS/*.src.rpm"))[0]
    return found


@pytest.fixture(scope="module", params=["new", "old"])
def layout(request):
    return request.param


_BUILDS = {}


@pytest.fixture(scope="module")
def packages(tmp_path_factory, layout):
    if not shutil.which("rpmbuild"):
        pytest.skip("rpmbuild is not installed")
    if layout not in _BUILDS:
        _BUILDS[layout] = build(tmp_path_factory.mktemp("rpm-" + layout), layout)
    return _BUILDS[layout]


def files_of(packages):
    """{path: package} of every packaged file and directory."""
    owned = {}
    for name in NAMES:
        for path in rpm_q(packages[name], "-l"):
            owned[path] = name
    return owned


def sitelib_of(packages):
    lib = [f for f in rpm_q(packages["python3-irqtune"], "-l")
           if f.endswith("/irqtune/__init__.py")]
    assert len(lib) == 1, lib
    return os.path.dirname(os.path.dirname(lib[0]))


# -- contents -------------------------------------------------------------

def test_check_ran_against_the_tuned_of_the_layout(packages, layout):
    """The guard test of the unit suite ran (not skipped) in the new
    layout's %check, so that suite really ran under the newer TuneD."""
    log = (pathlib.Path(packages["src"]).parents[1] / "build.log").read_text()
    assert re.search(r"^=+ \d+ passed", log, re.M), log[-2000:]
    skipped_guard = "IRQTUNE_TUNED_VERSION not set" in log
    assert skipped_guard == (layout == "old"), log[-2000:]


def test_packages_and_architectures(packages):
    assert set(packages) - {"src"} == NAMES
    for name in NAMES:
        arch = rpm_q(packages[name], "--qf", "%{ARCH}")[0]
        assert (arch == "noarch") == (name not in ARCH_PACKAGES), (name, arch)


def test_plugin_package_puts_library_and_plugins_where_tuned_looks(packages):
    files = rpm_q(packages["tuned-plugins-irqtune"], "-l")
    site = sitelib_of(packages)
    assert re.fullmatch(r"/usr/lib/python3\.\d+/site-packages", site), site
    for plugin in PLUGINS:
        assert "%s/tuned/plugins/plugin_%s.py" % (site, plugin) in files
    assert site + "/tuned/plugins/irqtune_common.py" in files
    assert site + "/tuned/plugins/irqtune_tunedlog.py" in files
    assert site + "/tuned/plugins/irqtune_netdev.py" in files
    # only irqtune's own modules in TuneD's package, no directory of TuneD's
    for f in files:
        if "/tuned/plugins" in f:
            assert re.search(r"/tuned/plugins/(__pycache__/)?(plugin_[a-z_]+|irqtune_common|irqtune_tunedlog|irqtune_netdev)"
                             r"(\.cpython-\d+(\.opt-\d)?)?\.pyc?$", f), f
    # the profile functions, where TuneD imports its own from; nothing else there
    for function in FUNCTIONS:
        assert "%s/tuned/profiles/functions/function_%s.py" % (site, function) in files
    for f in files:
        if "/tuned/profiles" in f:
            assert re.search(r"/tuned/profiles/functions/(__pycache__/)?function_irqtune_[a-z]+"
                             r"(\.cpython-\d+(\.opt-\d)?)?\.pyc?$", f), f
    assert "/usr/share/man/man7/tuned-plugins-irqtune.7.gz" in files
    assert not [f for f in files if "/irqtune/" in f and "/tuned/" not in f], files
    version = rpm_q(packages["tuned-plugins-irqtune"], "--qf", "%{VERSION}-%{RELEASE}")[0]
    requires = rpm_q(packages["tuned-plugins-irqtune"], "--requires")
    assert "python3-irqtune = " + version in requires


def test_library_package_is_a_python_distribution(packages):
    """python3-irqtune: the package, its dist-info (what python3dist()
    requirements and pip see), the irqtune command; pyroute2's floor."""
    files = rpm_q(packages["python3-irqtune"], "-l")
    site = sitelib_of(packages)
    version = rpm_q(packages["python3-irqtune"], "--qf", "%{VERSION}")[0]
    meta = "%s/irqtune-%s.dist-info/METADATA" % (site, version)
    assert meta in files and site + "/irqtune/features/napi/tuner.py" in files, files
    assert "/usr/bin/irqtune" in files and "/usr/share/man/man8/irqtune.8.gz" in files
    assert not [f for f in files if "/tuned/" in f], files
    assert "python3-pyroute2 >= 0.7" in rpm_q(packages["python3-irqtune"], "--requires")


def test_profile_packages_layout_and_requirements(packages, layout):
    profile_dir = LAYOUTS[layout][0]
    other = LAYOUTS["new" if layout == "old" else "old"][0]
    for name, profiles in PROFILE_PACKAGES.items():
        path = packages[name]
        files, configs = rpm_q(path, "-l"), rpm_q(path, "-c")
        assert {f.split("/")[-2] for f in files if f.endswith("/tuned.conf")} == set(profiles), name
        for profile in profiles:
            assert "%s/%s/tuned.conf" % (profile_dir, profile) in files
            assert "%s/%s/tuned.conf" % (other, profile) not in files
            if os.path.exists(os.path.join(ROOT, "profiles", profile, profile + "-variables.conf")):
                assert "/etc/tuned/%s-variables.conf" % profile in configs, profile
        # %config(noreplace): flag bit 4 (RPMFILE_NOREPLACE) with bit 0 (CONFIG)
        for line in rpm_q(path, "--qf", "[%{FILEFLAGS} %{FILENAMES}\n]"):
            flag, fname = line.split(" ", 1)
            if fname.startswith("/etc/tuned/"):
                assert int(flag) & 0x11 == 0x11, line
    path = packages["tuned-profiles-irqtune"]
    version = rpm_q(path, "--qf", "%{VERSION}-%{RELEASE}")[0]
    assert "tuned-plugins-irqtune = " + version in rpm_q(path, "--requires")
    assert "/usr/share/man/man7/tuned-profiles-irqtune.7.gz" in rpm_q(path, "-l")
    tuned_req = [r for r in rpm_q(path, "--requires") if r.startswith("tuned ")]
    assert tuned_req == ["tuned >= " + ("2.20" if layout == "old" else "2.23")]
    tuned_req = [r for r in rpm_q(packages["tuned-plugins-irqtune"], "--requires")
                 if r.startswith("tuned ")]
    assert tuned_req == ["tuned >= 2.20"]
    # the realtime flavour includes realtime-virtual-host: a hard dependency
    realtime = rpm_q(packages["tuned-profiles-irqtune-realtime"], "--requires")
    assert "tuned-profiles-nfv-host" in realtime and "tuned-profiles-irqtune = " + version in realtime
    assert not [r for r in rpm_q(path, "--requires") + rpm_q(path, "--recommends")
                if "nfv" in r]


def test_kernel_patch_package(packages):
    files = rpm_q(packages["irqtune-kernel-patches"], "-l")
    base = "/usr/share/irqtune/kernel-patches"
    assert base + "/README.md" in files
    shipped = 0
    for series in glob.glob(os.path.join(ROOT, "kernel-patches/*/series")) + \
            glob.glob(os.path.join(ROOT, "kernel-patches/*/*/series")):
        name = os.path.relpath(os.path.dirname(series), os.path.join(ROOT, "kernel-patches"))
        with open(series) as f:
            lines = [line.split("#", 1)[0].strip() for line in f]
        with open(series) as f:
            if f.readline().startswith("# lab-only"):
                assert not any("/%s/" % name in path for path in files), name
                continue
        shipped += 1
        assert "%s/%s/series" % (base, name) in files
        assert "%s/%s/0000-cover-letter.patch" % (base, name) in files
        for patch in filter(None, lines):
            assert "%s/%s/%s" % (base, name, patch) in files
    assert shipped >= 3
    assert all(f.startswith(base) or f.startswith("/usr/share/licenses/") or f == "/usr/share/irqtune"
               for f in files), files


def test_preload_package(packages):
    files = rpm_q(packages["irqtune-preload"], "-l")
    libs = [f for f in files if f.endswith("/irqtune/libirqtune-busypoll.so")]
    assert libs, files
    assert "/usr/bin/irqtune-busypoll-run" in files
    assert "/usr/share/man/man1/irqtune-busypoll-run.1.gz" in files
    # loaded by path, never linked against: no soname provide
    provides = rpm_q(packages["irqtune-preload"], "--provides")
    assert not [p for p in provides if "libirqtune" in p], provides
    # the packaged build does not turn a newer compiler's warnings into errors
    log = (pathlib.Path(packages["src"]).parents[1] / "build.log").read_text()
    compiles = [line for line in log.splitlines() if "-soname,libirqtune-busypoll.so" in line]
    assert compiles and not any("-Werror" in line for line in compiles), compiles


def test_bench_package(packages):
    """irqtune-bench: the command, the generator, the shim, the package;
    the generator and the shim built with the distribution's flags; no
    hard dependency (the client needs none of irqtune's other packages)."""
    pkg = packages["irqtune-bench"]
    files = rpm_q(pkg, "-l")
    site = sitelib_of(packages)
    for path in ("/usr/bin/irqtune-bench", "/usr/libexec/irqtune-bench/mcload",
                 "/usr/share/man/man1/irqtune-bench.1.gz",
                 site + "/irqtune_bench/cli.py", site + "/irqtune_bench/server.py"):
        assert path in files, (path, files)
    shims = [f for f in files if re.fullmatch(r"/usr/lib(64)?/irqtune-bench/epoll_slice\.so", f)]
    assert len(shims) == 1, files
    modes = dict(line.split()[::-1] for line in rpm_q(pkg, "--qf", "[%{FILEMODES:perms} %{FILENAMES}\n]"))
    assert modes["/usr/bin/irqtune-bench"] == modes["/usr/libexec/irqtune-bench/mcload"] == "-rwxr-xr-x"
    assert not [p for p in rpm_q(pkg, "--provides") if "epoll_slice" in p]
    requires = [r for r in rpm_q(pkg, "--requires") if not r.startswith(("rpmlib(", "/", "lib", "ld-"))]
    assert not [r for r in requires if "irqtune" in r or "tuned" in r], requires
    suggests = rpm_q(pkg, "--suggests")
    assert "memcached" in suggests and any(r.startswith("tuned-profiles-irqtune") for r in suggests)
    log = (pathlib.Path(packages["src"]).parents[1] / "build.log").read_text()
    compiles = [line for line in log.splitlines() if "bench/mcload.c" in line or "bench/epoll_slice.c" in line]
    assert len(compiles) == 2 and not any("-Werror" in line.split() for line in compiles), compiles


def test_bench_command_names_the_packaged_generator_and_shim(packages, installed):
    files = rpm_q(packages["irqtune-bench"], "-l")
    shim = [f for f in files if f.endswith("/epoll_slice.so")][0]
    path = str(installed) + "/usr/bin/irqtune-bench"
    with open(path) as f:
        text = f.read()
    assert 'mcload="/usr/libexec/irqtune-bench/mcload"' in text and 'shim="%s"' % shim in text, text
    python = text.splitlines()[0][2:]
    site = str(installed) + sitelib_of(packages)
    result = subprocess.run([python, path, "run", "--help"], capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=site), cwd="/")
    assert result.returncode == 0 and "--server-addr" in result.stdout, result.stderr


def test_metrics_package(packages):
    """The PCP entry (executable: pmdaopenmetrics runs only executables)
    and the textfile timer, and nothing else."""
    pkg = packages["irqtune-metrics"]
    files = rpm_q(pkg, "-l")
    entry = "/var/lib/pcp/pmdas/openmetrics/config.d/irqtune.sh"
    assert entry in files, files
    units = {"/usr/lib/systemd/system/irqtune-metrics.service",
             "/usr/lib/systemd/system/irqtune-metrics.timer"}
    assert units <= set(files), files
    modes = dict(line.split()[::-1] for line in rpm_q(pkg, "--qf", "[%{FILEMODES:perms} %{FILENAMES}\n]"))
    assert modes[entry] == "-rwxr-xr-x", modes
    assert any(r.startswith("python3-irqtune =") for r in rpm_q(pkg, "--requires"))
    # the unprivileged user and its directory, linked where node_exporter reads
    assert {"/usr/lib/sysusers.d/irqtune-metrics.conf",
            "/usr/lib/tmpfiles.d/irqtune-metrics.conf"} <= set(files), files


def test_no_packaged_path_is_writable_by_others(packages):
    """Root runs what the packages install (TuneD imports the library and
    the plugins, the timer and pmcd run the command): no file or directory
    may be group- or world-writable, and the bytecode caches are packaged
    (not left for TuneD's umask-0 daemon to create)."""
    for name in sorted(NAMES):
        for line in rpm_q(packages[name], "--qf",
                          "[%{FILEMODES:octal} %{FILEUSERNAME} %{FILENAMES}\n]"):
            mode, user, path = line.split(" ", 2)
            mode = int(mode, 8)
            if mode & 0o170000 == 0o120000:      # a symlink's own mode means nothing
                continue
            assert not mode & 0o022 and user == "root", (name, oct(mode), user, path)
    for name in ("python3-irqtune", "tuned-plugins-irqtune"):
        caches = [p for p in rpm_q(packages[name], "-l") if "/__pycache__/" in p]
        assert caches, name


def test_license_per_package(packages):
    """Kernel changes carry the kernel's licence; the rest is the project's."""
    for name in NAMES:
        wanted = "GPL-2.0-only" if name == "irqtune-kernel-patches" else "GPL-2.0-or-later"
        assert rpm_q(packages[name], "--qf", "%{LICENSE}") == [wanted], name


def test_only_an_update_of_the_plugins_restarts_tuned(packages):
    """The one scriptlet: postun of tuned-plugins-irqtune, restarting a
    running TuneD on update ($1 >= 1) only."""
    for name in NAMES - {"tuned-plugins-irqtune"}:
        assert rpm_q(packages[name], "--scripts") == [], name
    script = rpm_q(packages["tuned-plugins-irqtune"], "--scripts")
    assert script[0].startswith("postuninstall scriptlet"), script
    body = "\n".join(script[1:])
    assert 'if [ "$1" -ge 1 ]' in body and "systemctl try-restart tuned.service" in body, body
    probe = body.replace("systemctl try-restart tuned.service >/dev/null 2>&1 || :", "echo RESTART")
    ran = {arg: subprocess.run(["sh", "-c", probe, "postun", arg], capture_output=True,
                               text=True).stdout.strip() for arg in ("0", "1", "2")}
    assert ran == {"0": "", "1": "RESTART", "2": "RESTART"}, ran     # 0: erase


# -- rpmlint --------------------------------------------------------------

def test_rpmlint_no_errors_and_only_documented_warnings(packages):
    if not shutil.which("rpmlint"):
        pytest.skip("rpmlint is not installed")
    argv = ["rpmlint", "-c", os.path.join(ROOT, "spec/rpmlint.toml"),
            os.path.join(ROOT, "spec/irqtune.spec"), packages["src"]] + \
        [packages[n] for n in sorted(NAMES)]
    out = subprocess.run(argv, capture_output=True, text=True).stdout
    summary = re.search(r"(\d+) errors, (\d+) warnings", out)
    assert summary, out
    assert summary.group(1) == "0", out
    with open(os.path.join(ROOT, "docs/packaging.md")) as f:
        documented = f.read()
    for kind, warning in re.findall(r": ([EW]): ([a-z0-9-]+)", out):
        assert "`" + warning in documented, "undocumented rpmlint %s %s:\n%s" % (
            kind, warning, out)


# -- collisions with stock TuneD packages ---------------------------------

def stock_lists(layout, sitelib):
    with open(os.path.join(HERE, "stock_tuned_files.json")) as f:
        data = json.load(f)
    lists = {}
    for package, paths in data["layouts"][layout].items():
        lists["upstream " + package] = {p.replace("{sitelib}", sitelib) for p in paths}
    if shutil.which("dpkg"):
        out = subprocess.run(["dpkg", "-L", "tuned"], capture_output=True, text=True)
        if out.returncode == 0:
            debian = set()
            for path in out.stdout.split():
                debian.add(re.sub(r"^/usr/lib/python3/dist-packages", sitelib, path))
            lists["Debian tuned"] = debian
    return lists


def normalise(path):
    return re.sub(r"\.(gz|bz2|xz|zst)$", "", path)


def test_no_file_of_a_stock_tuned_package(packages, layout):
    ours = files_of(packages)
    sitelib = sitelib_of(packages)
    lists = stock_lists(layout, sitelib)
    assert any(p.startswith("upstream tuned-profiles-realtime") for p in lists)
    assert any(p.startswith("upstream tuned-profiles-nfv-host") for p in lists)
    stock_dirs = set()
    for paths in lists.values():
        for p in paths:
            d = os.path.dirname(p)
            while d not in ("/", ""):
                stock_dirs.add(d)
                d = os.path.dirname(d)
    for package, paths in lists.items():
        stock = {normalise(p) for p in paths}
        clash = sorted(p for p in ours if normalise(p) in stock and p not in stock_dirs)
        assert not clash, "%s ships %s" % (package, clash)
    # the profile names: none may shadow a stock profile in either layout
    stock_profiles = set()
    for paths in lists.values():
        for p in paths:
            m = re.match(r"^/usr/lib/tuned/(?:profiles/)?([^/]+)/tuned\.conf$", p)
            if m:
                stock_profiles.add(m.group(1))
    assert {"realtime", "realtime-virtual-host", "network-latency"} <= stock_profiles
    assert not set(PROFILES) & stock_profiles
    # and no file of ours sits inside a stock profile's directory
    for path in ours:
        m = re.match(r"^/usr/lib/tuned/(?:profiles/)?([^/]+)/", path)
        if m:
            assert m.group(1) not in stock_profiles, path


# -- installed into a scratch root ----------------------------------------

@pytest.fixture(scope="module")
def installed(packages, tmp_path_factory, layout):
    root = tmp_path_factory.mktemp("root-" + layout)
    subprocess.run(["rpm", "--root", str(root), "--initdb"], check=True)
    result = subprocess.run(["rpm", "--root", str(root), "-i", "--nodeps", "--noscripts",
                             *[packages[n] for n in sorted(NAMES)]],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return root


def test_every_packaged_file_is_installed(packages, installed):
    for path, name in files_of(packages).items():
        if "/.build-id" in path:
            continue
        assert os.path.lexists(str(installed) + path), (name, path)


def tuned_package_dir():
    """The system's TuneD package (the Python TuneD runs on)."""
    out = subprocess.run([sys.executable, "-Ic", "import os, tuned; "
                          "print(os.path.dirname(tuned.__file__))"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("TuneD is not installed for %s" % sys.executable)
    return out.stdout.strip()


LOADER = textwrap.dedent("""
    import json, os, sys
    root, sitelib, layout_dirs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    sys.path.insert(0, root + sitelib)
    import tuned, irqtune
    import tuned.plugins.repository as repository
    from tuned.profiles.locator import Locator
    repo = repository.Repository(*[None] * 8)
    load_one = getattr(repo, "load_class", None) or repo.load_plugin
    load_all = getattr(repo, "load_all_classes", None) or repo.load_all_plugins
    plugins = {}
    for cls in load_all():
        module = sys.modules[cls.__module__]
        plugins[module.__name__.split("plugin_", 1)[1]] = {
            "file": module.__file__, "class": cls.__name__,
            "options": sorted(cls._get_config_options()),
            "hints": cls.get_config_options_hints(),
            "doc": bool((cls.__doc__ or "").strip())}
    loaded = {}
    for name in sys.argv[4].split(","):
        cls = load_one(name)
        loaded[name] = [c.__module__ for c in cls.__mro__]
    locator = Locator([root + d for d in layout_dirs])
    print(json.dumps({"tuned": tuned.__file__, "irqtune": irqtune.__file__,
                      "plugins": plugins, "loaded": loaded,
                      "profiles": sorted(locator.get_known_names()),
                      "summaries": dict(locator.get_known_names_summary())}))
""")


@pytest.fixture(scope="module")
def tuned_view(packages, installed, layout):
    """What TuneD's loader and locator see in the scratch root, with the
    system's TuneD package copied beside irqtune's files there (as rpm
    would have it: both in the same site-packages)."""
    sitelib = sitelib_of(packages)
    target = str(installed) + sitelib + "/tuned"
    def copy_missing(src, dst):         # never over a file the packages installed
        if not os.path.lexists(dst):
            shutil.copy2(src, dst)
    def ignore(directory, names):       # irqtune files of another installation
        skip = {n for n in names if n == "__pycache__"}
        if directory.rstrip("/").endswith("tuned/plugins"):
            skip |= {n for n in names if n.startswith("irqtune_")
                     or n[:-3] in ("plugin_" + p for p in PLUGINS)}
        return skip
    shutil.copytree(tuned_package_dir(), target, dirs_exist_ok=True, copy_function=copy_missing,
                    ignore=ignore)
    for plugin in PLUGINS:     # the committed plugin, not another installed copy
        committed = subprocess.run(["git", "-C", ROOT, "show", "HEAD:tuned-plugins/plugin_%s.py"
                                    % plugin], capture_output=True, text=True).stdout
        with open(target + "/plugins/plugin_%s.py" % plugin) as f:
            assert f.read() == committed, plugin
    out = subprocess.run([sys.executable, "-I", "-c", LOADER, str(installed), sitelib,
                          json.dumps(LAYOUTS[layout][1]), ",".join(PLUGINS)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.splitlines()[-1])


def test_tuned_loader_finds_the_plugins_in_the_installed_tree(tuned_view, installed):
    assert tuned_view["irqtune"].startswith(str(installed))
    assert tuned_view["tuned"].startswith(str(installed))
    for plugin in PLUGINS:
        info = tuned_view["plugins"][plugin]       # what tuned-adm list plugins shows
        assert info["file"].startswith(str(installed)), info
        assert info["options"] and info["options"] == sorted(info["hints"]), info
        assert info["doc"], plugin
        assert "tuned.plugins.base" in tuned_view["loaded"][plugin]
        assert tuned_view["loaded"][plugin][0] == "tuned.plugins.plugin_" + plugin
    assert "irqtune_common" not in tuned_view["plugins"]
    assert "irqtune_tunedlog" not in tuned_view["plugins"]
    assert "irqtune_netdev" not in tuned_view["plugins"]


def test_tuned_adm_list_would_show_the_profiles(tuned_view):
    for profile in PROFILES:
        assert profile in tuned_view["profiles"]
        assert tuned_view["summaries"][profile].strip(), profile


def test_profiles_read_their_packaged_variables_files(packages, installed, layout):
    configs = [c for name in PROFILE_PACKAGES for c in rpm_q(packages[name], "-c")]
    for profile in PROFILES:
        conf = "%s%s/%s/tuned.conf" % (installed, LAYOUTS[layout][0], profile)
        with open(conf) as f:
            text = f.read()
        variables = "/etc/tuned/%s-variables.conf" % profile
        assert variables in configs, profile
        assert os.path.isfile(str(installed) + variables), variables
        # [variables] include= or a plugin option such as gsim's variables_file=
        assert re.search(r"^\w+\s*=\s*%s\s*$" % re.escape(variables), text, re.M), profile


def test_preload_runner_names_the_packaged_library(packages, installed):
    lib = [f for f in rpm_q(packages["irqtune-preload"], "-l")
           if f.endswith("libirqtune-busypoll.so")][0]
    with open(str(installed) + "/usr/bin/irqtune-busypoll-run") as f:
        assert lib in f.read()


def test_irqtune_command_runs_on_the_python_of_the_library(packages, installed):
    """/usr/bin/irqtune names the Python whose site-packages hold the
    library, not whatever python3 comes first on PATH; and it runs."""
    path = str(installed) + "/usr/bin/irqtune"
    with open(path) as f:
        shebang = f.readline().strip()
    python = shebang[2:]
    assert shebang.startswith("#!/") and os.path.basename(python).startswith("python3"), shebang
    assert os.access(path, os.X_OK)
    site = str(installed) + sitelib_of(packages)
    result = subprocess.run([python, path, "--help"], capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=site), cwd="/")
    assert result.returncode == 0 and "status" in result.stdout, result.stderr


def read_man(path):
    with gzip.open(path, "rt") as f:
        return f.read()


def test_man_pages_render_without_warnings(installed):
    if not shutil.which("groff"):
        pytest.skip("groff is not installed")
    pages = glob.glob(str(installed) + "/usr/share/man/man*/*.gz")
    assert len(pages) == 5, pages
    for page in pages:
        out = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z"], input=read_man(page),
                             capture_output=True, text=True)
        assert out.returncode == 0 and out.stderr == "", (page, out.stderr)
        if shutil.which("lexgrog"):     # what man-db's mandb reads for whatis
            assert subprocess.run(["lexgrog", page], capture_output=True).returncode == 0, page


def test_plugin_man_page_documents_every_option(tuned_view, installed):
    text = read_man(str(installed) + "/usr/share/man/man7/tuned-plugins-irqtune.7.gz")
    for plugin in PLUGINS:
        assert '.SS "%s"' % plugin in text
        section = text.split('.SS "%s"' % plugin, 1)[1].split(".SS", 1)[0]
        hints = tuned_view["plugins"][plugin]["hints"]    # tuned-adm list plugins -v
        for option in tuned_view["plugins"][plugin]["options"]:
            assert "\\fB%s\\fR\n%s\n" % (option, hints[option].replace("\\", "\\e")) \
                in section, (plugin, option)


def test_profile_man_page_names_every_profile_and_variable(installed):
    text = read_man(str(installed) + "/usr/share/man/man7/tuned-profiles-irqtune.7.gz")
    for profile in PROFILES:
        assert ".B " + profile.replace("-", "\\-") in text, profile
        with open(str(installed) + "/etc/tuned/%s-variables.conf" % profile) as f:
            names = re.findall(r"^#?([a-z][a-z0-9_]*)=", f.read(), re.M)
        assert names, profile
        for name in names:
            assert "\\fB%s\\fR" % name in text, (profile, name)


# -- the spec as each target's rpm expands it --------------------------------

TARGETS = {
    # --define: (profile directory, TuneD floor of the profiles package)
    "fedora 41": ("/usr/lib/tuned/profiles", "2.23"),
    "rhel 9": ("/usr/lib/tuned", "2.20"),
    "rhel 10": ("/usr/lib/tuned/profiles", "2.23"),
}


def expanded_spec(define):
    if not shutil.which("rpmspec"):
        pytest.skip("rpmspec is not installed")
    result = subprocess.run(["rpmspec", "-P", "--define", define,
                             os.path.join(ROOT, "spec/irqtune.spec")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    sections, current = {}, "preamble"
    for line in result.stdout.splitlines():
        if line.startswith("%package") or line.startswith("%files"):
            words = line.split()
            current = words[0] + " " + (words[-1] if "-n" in words else "irqtune-" + words[-1])
        sections.setdefault(current, []).append(line)
    return sections


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_spec_per_target(target):
    profile_dir, tuned_floor = TARGETS[target]
    spec = expanded_spec(target)

    def requires(package):
        return [line.split(":", 1)[1].strip() for line in spec["%package " + package]
                if line.startswith("Requires:")]

    profiles = [line for line in spec["%files tuned-profiles-irqtune"]
                + spec["%files tuned-profiles-irqtune-realtime"] if "/tuned/" in line]
    assert profiles and all(line.startswith(profile_dir + "/") or line.startswith("%config")
                            for line in profiles), profiles
    for profile in PROFILES:
        assert any(line == "%s/%s/" % (profile_dir, profile) for line in profiles), profile
    assert "tuned >= " + tuned_floor in requires("tuned-profiles-irqtune")
    assert "tuned >= 2.20" in requires("tuned-plugins-irqtune")
    assert "python3-pyroute2 >= 0.7" in requires("python3-irqtune")
    assert "python3-irqtune = 0.1.0-1" in requires("tuned-plugins-irqtune")
    assert "tuned-profiles-nfv-host" in requires("tuned-profiles-irqtune-realtime")
    assert not [r for r in requires("tuned-profiles-irqtune") if "nfv" in r]
    plugin_files = [line for line in spec["%files tuned-plugins-irqtune"] if "plugin_" in line]
    assert plugin_files and all(re.match(r"/usr/lib/python3\.\d+/site-packages/tuned/plugins/",
                                         line) for line in plugin_files), plugin_files


def test_spec_uses_the_pyproject_macros_where_they_exist():
    """Where pyproject-rpm-macros are installed (Fedora, RHEL), the library
    is built and installed with them and its requirements are generated
    from its metadata; the pip commands are the fallback for rpm builds
    without those macros (this machine's)."""
    if not shutil.which("rpmspec"):
        pytest.skip("rpmspec is not installed")
    markers = {"pyproject_wheel": "MACRO_WHEEL", "pyproject_install": "MACRO_INSTALL",
               "pyproject_buildrequires": "MACRO_BUILDREQUIRES",
               "pyproject_files": "MACRO_FILES", "pyproject_save_files": "MACRO_SAVE_FILES"}
    argv = ["rpmspec", "-P", "--define", "fedora 41"]
    for name, marker in markers.items():
        argv += ["--define", "%s %s" % (name, marker)]
    text = subprocess.run(argv + [os.path.join(ROOT, "spec/irqtune.spec")], check=True,
                          capture_output=True, text=True).stdout
    for marker in markers.values():
        assert marker in text, marker
    assert "%files -n python3-irqtune -f MACRO_FILES" in text
    assert "pip wheel" not in text and "pip install" not in text
    assert "python3-pyroute2" not in text.split("%description -n python3-irqtune")[0] \
        .split("%package -n python3-irqtune")[1]
