# SPDX-License-Identifier: GPL-2.0-or-later
# irqtune - see README.md.  Targets: deps, install, uninstall, check, bench,
# lab (kernel build + QEMU guest tests), rpm, srpm, rpmlint, man.

NAME      := irqtune
VERSION   := $(shell sed -n 's/^__version__ = "\(.*\)"/\1/p' irqtune/__init__.py)
PYTHON    ?= /usr/bin/python3
DESTDIR   ?=
# TuneD has no plugin path setting: plugins go into TuneD's own package and
# the library beside it, in the site-packages of the Python TuneD runs on.
TUNED_PLUGIN_DIR ?= $(shell $(PYTHON) -c 'import os, tuned.plugins as p; print(os.path.dirname(p.__file__))' 2>/dev/null)
PYTHON_SITELIB   ?= $(patsubst %/tuned/plugins,%,$(TUNED_PLUGIN_DIR))
# Profile functions (${f:irqtune_default:...}) go where TuneD imports its own.
TUNED_FUNCTION_DIR ?= $(PYTHON_SITELIB)/tuned/profiles/functions
# TuneD >= 2.23 looks for profiles in /usr/lib/tuned/profiles.
TUNED_PROFILE_DIR ?= $(shell if [ -d /usr/lib/tuned/profiles ]; then echo /usr/lib/tuned/profiles; else echo /usr/lib/tuned; fi)
SYSCONFDIR ?= /etc
BINDIR     ?= /usr/bin
LIBDIR     ?= /usr/lib
MANDIR     ?= /usr/share/man
DATADIR    ?= /usr/share

LIB_FILES     := $(wildcard irqtune/*.py irqtune/*/*.py irqtune/*/*/*.py irqtune/*/*/*/*.py)
PLUGIN_FILES  := $(wildcard tuned-plugins/*.py)
FUNCTION_FILES := $(wildcard tuned-functions/function_*.py)
PROFILES      := $(notdir $(wildcard profiles/*))
VARIABLE_FILES := $(wildcard profiles/*/*-variables.conf)

# Debian 12 / Fedora / RHEL package names: what the project runs and is
# built on (make deploy installs only these), then what its tests need
# (rpm-build, rpmlint and groff for the packaging tests, memcached for the
# preload and doctor tests, PCP with pmdaopenmetrics, Prometheus and
# node_exporter for the metrics tests).
DEB_RUN_DEPS  := tuned python3-pyroute2 python3-dbus dbus udev iproute2 ethtool gcc make libc6-dev
DEB_TEST_DEPS := python3-pytest rpm rpmlint groff-base memcached libmemcached-tools \
	python3-pip python3-wheel python3-setuptools \
	pcp python3-requests prometheus prometheus-node-exporter
RPM_RUN_DEPS  := tuned python3-pyroute2 python3-dbus dbus-daemon systemd-udev iproute ethtool gcc make
RPM_TEST_DEPS := python3-pytest rpm-build rpmlint groff-base memcached pyproject-rpm-macros \
	pcp pcp-pmda-openmetrics golang-github-prometheus golang-github-prometheus-node-exporter

# $(call install-packages,DEBIAN PACKAGES,RPM PACKAGES)
# On a host where systemd is installed but not PID 1 (containers, CI, a
# host where TuneD pulled systemd in) maintainer scripts that call
# `systemctl daemon-reload` (pcp's) fail the install: a systemctl that
# does nothing stands in for it there.  APT runs dpkg with a PATH of its
# own (DPkg::Path), so the stand-in goes onto that PATH; `dpkg --configure
# -a` finishes a package an earlier install left half-configured.
install-packages = \
	if command -v apt-get >/dev/null; then \
		shim=$$(mktemp -d) && chmod 0755 $$shim && dpath=/usr/sbin:/usr/bin:/sbin:/bin && \
		if [ ! -d /run/systemd/system ]; then \
			printf '\043!/bin/sh\nexit 0\n' > $$shim/systemctl && chmod 0755 $$shim/systemctl && \
			dpath=$$shim:$$dpath; fi && \
		{ PATH=$$dpath dpkg --configure -a && \
		  { dpkg -s $(1) >/dev/null 2>&1 || { apt-get update -q && \
		    DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Path=$$dpath $(1); }; }; }; \
		rc=$$?; rm -rf $$shim; exit $$rc; \
	elif command -v dnf >/dev/null; then dnf install -y $(2); \
	else echo "neither apt-get nor dnf found; install: $(2)" >&2; exit 1; fi

.PHONY: all deps deploy-deps install install-files install-library install-plugins install-profiles install-kernel-patches uninstall check crash-check bench lab rpm srpm clean deploy start-tuned \
	man install-man uninstall-man rpmlint

all: preload

deps:
	@$(call install-packages,$(DEB_RUN_DEPS) $(DEB_TEST_DEPS),$(RPM_RUN_DEPS) $(RPM_TEST_DEPS))

deploy-deps:
	@$(call install-packages,$(DEB_RUN_DEPS),$(RPM_RUN_DEPS))

install: install-files install-preload install-man install-metrics

# What TuneD needs: library (and the irqtune command), plugins, profiles
# and their variables files.  The RPM installs the library as a Python
# distribution (pyproject.toml) and uses install-plugins and
# install-profiles only.
install-files: install-library install-plugins install-profiles

# Bytecode is compiled here, as the packages do: TuneD's daemon runs with
# umask 0, and the first import of an uncompiled module would create its
# __pycache__ world-writable - bytecode that root runs.  Every directory
# and file gets its mode from install/chmod, not from a umask.
# $(call compile-bytecode,FILES OR DIRECTORIES)
compile-bytecode = (umask 022 && $(PYTHON) -m compileall -q \
	$(if $(DESTDIR),-s $(DESTDIR) -p /) $(1))

# The installed library is replaced whole: a module that became a package
# (irqtune/napi.py -> irqtune/napi/, irqtune/napi/ -> irqtune/features/napi/) must
# not linger beside it.
install-library:
	@test -n "$(PYTHON_SITELIB)" || { echo "TuneD not found for $(PYTHON)" >&2; exit 1; }
	rm -rf $(DESTDIR)$(PYTHON_SITELIB)/irqtune
	for f in $(LIB_FILES); do install -D -m 0644 $$f $(DESTDIR)$(PYTHON_SITELIB)/$$f; done
	$(call compile-bytecode,$(DESTDIR)$(PYTHON_SITELIB)/irqtune)
	find $(DESTDIR)$(PYTHON_SITELIB)/irqtune -type d -exec chmod 0755 {} +
	find $(DESTDIR)$(PYTHON_SITELIB)/irqtune -type f -exec chmod 0644 {} +
	install -d build
	{ echo '#!$(PYTHON)'; cat irqtune/__main__.py; } > build/irqtune.cmd
	install -D -m 0755 build/irqtune.cmd $(DESTDIR)$(BINDIR)/irqtune

# TuneD imports the plugins from its own package: their bytecode goes
# into TuneD's __pycache__, which must not be writable by others either.
PLUGIN_STEMS := $(basename $(notdir $(PLUGIN_FILES)))
FUNCTION_STEMS := $(basename $(notdir $(FUNCTION_FILES)))
install-plugins:
	@test -n "$(TUNED_PLUGIN_DIR)" || { echo "TuneD not found for $(PYTHON)" >&2; exit 1; }
	install -d $(DESTDIR)$(TUNED_PLUGIN_DIR)
	install -m 0644 $(PLUGIN_FILES) $(DESTDIR)$(TUNED_PLUGIN_DIR)/
	$(call compile-bytecode,$(addprefix $(DESTDIR)$(TUNED_PLUGIN_DIR)/,$(notdir $(PLUGIN_FILES))))
	chmod go-w $(DESTDIR)$(TUNED_PLUGIN_DIR)/__pycache__
	for s in $(PLUGIN_STEMS); do chmod 0644 $(DESTDIR)$(TUNED_PLUGIN_DIR)/__pycache__/$$s.*.pyc; done
	install -d $(DESTDIR)$(TUNED_FUNCTION_DIR)
	install -m 0644 $(FUNCTION_FILES) $(DESTDIR)$(TUNED_FUNCTION_DIR)/
	$(call compile-bytecode,$(addprefix $(DESTDIR)$(TUNED_FUNCTION_DIR)/,$(notdir $(FUNCTION_FILES))))
	chmod go-w $(DESTDIR)$(TUNED_FUNCTION_DIR)/__pycache__
	for s in $(FUNCTION_STEMS); do chmod 0644 $(DESTDIR)$(TUNED_FUNCTION_DIR)/__pycache__/$$s.*.pyc; done

install-profiles:
	for p in $(PROFILES); do \
		install -D -m 0644 profiles/$$p/tuned.conf $(DESTDIR)$(TUNED_PROFILE_DIR)/$$p/tuned.conf; done
	for f in $(VARIABLE_FILES); do \
		test -e $(DESTDIR)$(SYSCONFDIR)/tuned/$$(basename $$f) || \
		install -D -m 0644 $$f $(DESTDIR)$(SYSCONFDIR)/tuned/$$(basename $$f); done

# Each series: its patches (cover letter included), series file and README.
install-kernel-patches:
	set -e; for s in kernel-patches/*/series kernel-patches/*/*/series; do \
		d=$${s%series}; \
		if grep -q '^# lab-only' $$s; then continue; fi; \
		install -d $(DESTDIR)$(DATADIR)/$(NAME)/$$d; \
		install -m 0644 $$d*.patch $$s $(DESTDIR)$(DATADIR)/$(NAME)/$$d; \
		if [ -f $${d}README ]; then install -m 0644 $${d}README $(DESTDIR)$(DATADIR)/$(NAME)/$$d; fi; \
	done
	install -m 0644 kernel-patches/README.md $(DESTDIR)$(DATADIR)/$(NAME)/kernel-patches/

# Man pages: tuned-plugins-irqtune(7) is generated from the plugins'
# docstrings and the library's option declarations (what `tuned-adm list
# plugins -v` shows; docs/options.md is made the same way, with --markdown);
# tuned-profiles-irqtune(7) is written by hand.  (irqtune-busypoll-run(1)
# belongs to preload/preload.mk.)
MAN_PLUGINS := build/man/tuned-plugins-irqtune.7
MAN7_PAGES  := $(MAN_PLUGINS) docs/man/tuned-profiles-irqtune.7

man: $(MAN_PLUGINS)

$(MAN_PLUGINS): docs/man/plugin-man.py docs/man/tuned-plugins-irqtune.7.in $(PLUGIN_FILES) $(LIB_FILES)
	$(PYTHON) docs/man/plugin-man.py $(VERSION) $@

install-man: man
	install -d $(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(MANDIR)/man8
	install -m 0644 $(MAN7_PAGES) $(DESTDIR)$(MANDIR)/man7/
	install -m 0644 docs/man/irqtune.8 $(DESTDIR)$(MANDIR)/man8/

uninstall-man:
	rm -f $(addprefix $(DESTDIR)$(MANDIR)/man7/,$(notdir $(MAN7_PAGES)))
	rm -f $(DESTDIR)$(MANDIR)/man8/irqtune.8

# Packages are built from what is committed (git archive of HEAD).
# On Debian: --nodeps (its rpm database is empty), and brp-compress under
# bash (Debian's uses bash's `read -d` but runs under dash, so it compresses
# no man page; Fedora's /bin/sh is bash).  Koji sets the Packager of Fedora
# builds; local builds name the project.
RPMTOP := $(CURDIR)/build/rpm
RPMBUILD_FLAGS ?= $(if $(shell command -v dpkg 2>/dev/null),--nodeps \
	--define "__brp_compress bash %{_rpmconfigdir}/brp-compress %{?_prefix}")
RPM_PACKAGER ?= irqtune developers <irqtune@example.org>
RPMBUILD := rpmbuild $(RPMBUILD_FLAGS) --define "_topdir $(RPMTOP)" \
	--define "packager $(RPM_PACKAGER)" 
TARBALL := $(RPMTOP)/SOURCES/$(NAME)-$(VERSION).tar.gz
$(TARBALL): FORCE
	mkdir -p $(RPMTOP)/SOURCES
	git archive --format=tar.gz --prefix=$(NAME)-$(VERSION)/ -o $@ HEAD

srpm: $(TARBALL)
	$(RPMBUILD) -bs $(RPM_DEFINES) spec/$(NAME).spec

rpm: $(TARBALL)
	$(RPMBUILD) -ba $(RPM_DEFINES) spec/$(NAME).spec

# rpmlint on the spec, the source package and the binary packages of the
# last `make rpm`, with spec/rpmlint.toml (docs/packaging.md explains it).
rpmlint:
	rpmlint -c spec/rpmlint.toml spec/$(NAME).spec $(RPMTOP)/SRPMS/*.src.rpm $(RPMTOP)/RPMS/*/*.rpm

FORCE:

uninstall: uninstall-preload uninstall-man uninstall-metrics
	rm -rf $(DESTDIR)$(PYTHON_SITELIB)/irqtune
	rm -f $(addprefix $(DESTDIR)$(TUNED_PLUGIN_DIR)/,$(notdir $(PLUGIN_FILES)))
	rm -f $(foreach s,$(PLUGIN_STEMS),$(DESTDIR)$(TUNED_PLUGIN_DIR)/__pycache__/$(s).*.pyc)
	rm -f $(addprefix $(DESTDIR)$(TUNED_FUNCTION_DIR)/,$(notdir $(FUNCTION_FILES)))
	rm -f $(foreach s,$(FUNCTION_STEMS),$(DESTDIR)$(TUNED_FUNCTION_DIR)/__pycache__/$(s).*.pyc)
	rm -rf $(addprefix $(DESTDIR)$(TUNED_PROFILE_DIR)/,$(PROFILES))
	rm -f $(addprefix $(DESTDIR)$(SYSCONFDIR)/tuned/,$(notdir $(VARIABLE_FILES)))
	rm -f $(DESTDIR)$(BINDIR)/irqtune

# The README's first command: everything from a fresh machine to an active,
# verified latency-suspend profile, then the per-NAPI values.  `irqtune
# verify` passes when the only verify failures are kernel command-line
# arguments TuneD installed for the next boot (it lists them) and fails,
# showing TuneD's log lines, on anything else (irqtune/frontends/verify_report.py).
deploy: deploy-deps install start-tuned
	tuned-adm profile latency-suspend
	$(BINDIR)/irqtune verify
	$(BINDIR)/irqtune status

# A running daemon is judged by its pid file, not by tuned-adm's text: without
# a daemon "tuned-adm active" prints "No current active profile.", which any
# grep for "active profile" also matches.  Then wait until it answers D-Bus.
# Without systemd the system bus is started here when nothing answers on its
# socket; a bus that died leaves its pid file, which stops a new one.
start-tuned:
	@if [ -d /run/systemd/system ]; then systemctl enable --now tuned; \
	elif ! kill -0 "$$(cat /run/tuned/tuned.pid 2>/dev/null)" 2>/dev/null; then \
		mkdir -p /run/dbus; \
		$(PYTHON) -c 'import socket; socket.socket(socket.AF_UNIX).connect("/run/dbus/system_bus_socket")' \
			2>/dev/null || { rm -f /run/dbus/system_bus_socket /run/dbus/pid; dbus-daemon --system --fork; }; \
		tuned --daemon; fi
	@for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do \
		tuned-adm active 2>&1 | grep -q "Cannot talk to TuneD daemon" || exit 0; \
		sleep 1; done; \
	echo "make deploy: the TuneD daemon did not answer on D-Bus within 20 s" >&2; exit 1

# The scripts run outside pytest find the repository's library (and the
# suites' package `support` in tests/) through PYTHONPATH, as pytest.ini
# gives them to the suites.
bench:
	PYTHONPATH=$(CURDIR) $(PYTHON) tests/bench/bench_napi.py 256

# Every suite in pytest.ini runs under TuneD's Python with the distribution's
# pyroute2; the library's unit and netlink suites run again under PyPI's
# pyroute2 0.9 in a virtualenv.  Integration suites drive the real daemon in
# network namespaces (root).  The kernel lab is `make lab` (tests/lab).
VENV := build/venv-pyroute2-0.9
# The unit suite runs once more against Debian unstable's TuneD (2.27 at the
# time of writing): RHEL 9.5+, RHEL 10 and Fedora run 2.24-2.28, Debian 12
# has 2.20.  The package is fetched with a private apt configuration
# (tools/sid-apt) and only unpacked under build/, never installed.
TUNED_SID := build/tuned-sid
# TuneD itself comes from the system (the doctor and the metrics read the
# active profile through TuneD's own loader); the venv's own pyroute2 and
# pytest come first on its path.
$(VENV)/bin/python:
	$(PYTHON) -m venv --system-site-packages $(VENV)
	$(VENV)/bin/pip install -q "pyroute2>=0.9,<0.10" pytest

# The library's layers (.importlinter, docs/architecture.md) and the
# bench's (bench/.importlinter, run from bench/, which holds its package)
# are checked by import-linter, from PyPI into the same virtualenv.
$(VENV)/bin/lint-imports: $(VENV)/bin/python
	$(VENV)/bin/pip install -q import-linter

check: deps install $(VENV)/bin/python $(VENV)/bin/lint-imports $(TUNED_SID)/.unpacked
	cd $(CURDIR) && $(VENV)/bin/lint-imports --no-cache
	cd $(CURDIR)/bench && $(abspath $(VENV))/bin/lint-imports --no-cache
	$(PYTHON) -m pytest -v -p no:cacheprovider $(PYTEST_ARGS)
	$(VENV)/bin/python -m pytest -v -p no:cacheprovider tests/unit tests/netlink $(PYTEST_ARGS)
	PYTHONPATH=$(CURDIR)/$(TUNED_SID)/root/usr/lib/python3/dist-packages \
	IRQTUNE_TUNED_VERSION=$$(cat $(TUNED_SID)/version) \
		$(PYTHON) -m pytest -v -p no:cacheprovider tests/unit $(PYTEST_ARGS)

# The crash-point harness (tests/crash/run.py, README's Test section): every
# tuner killed after each kernel write of apply, switch, restore and move,
# then restarted and switched off.  About six minutes on two cores: not in
# check.  CRASH_ARGS: --seed N, --only NAME..., --time-limit S.
crash-check: deps install
	PYTHONPATH=$(CURDIR):$(CURDIR)/tests:$(CURDIR)/bench $(PYTHON) tests/crash/run.py $(CRASH_ARGS)

$(TUNED_SID)/.unpacked:
	rm -rf $(TUNED_SID) && mkdir -p $(TUNED_SID)/deb
	cd $(TUNED_SID)/deb && $(CURDIR)/tools/sid-apt download tuned
	dpkg-deb -x $(TUNED_SID)/deb/tuned_*_all.deb $(TUNED_SID)/root
	$(PYTHON) -c 'import sys; sys.path.insert(0, sys.argv[1]); from tuned import version; \
		print(version.TUNED_VERSION_STR)' $(TUNED_SID)/root/usr/lib/python3/dist-packages \
		> $(TUNED_SID)/version
	touch $@

# Fragments owned by the parts they build.
-include preload/preload.mk tests/lab/lab.mk metrics/metrics.mk bench/bench.mk
-include ansible/fleet.mk
