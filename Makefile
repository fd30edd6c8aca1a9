# SPDX-License-Identifier: GPL-2.0-or-later
# irqtune - see README.md.  Targets: deps, install, uninstall, check, bench,
# lab (kernel build + QEMU guest tests), rpm, srpm.

NAME      := irqtune
VERSION   := $(shell sed -n 's/^__version__ = "\(.*\)"/\1/p' irqtune/__init__.py)
PYTHON    ?= /usr/bin/python3
DESTDIR   ?=
# TuneD has no plugin path setting: plugins go into TuneD's own package and
# the library beside it, in the site-packages of the Python TuneD runs on.
TUNED_PLUGIN_DIR ?= $(shell $(PYTHON) -c 'import os, tuned.plugins as p; print(os.path.dirname(p.__file__))' 2>/dev/null)
PYTHON_SITELIB   ?= $(patsubst %/tuned/plugins,%,$(TUNED_PLUGIN_DIR))
# TuneD >= 2.23 looks for profiles in /usr/lib/tuned/profiles.
TUNED_PROFILE_DIR ?= $(shell if [ -d /usr/lib/tuned/profiles ]; then echo /usr/lib/tuned/profiles; else echo /usr/lib/tuned; fi)
SYSCONFDIR ?= /etc
BINDIR     ?= /usr/bin
LIBDIR     ?= /usr/lib
MANDIR     ?= /usr/share/man

.PHONY: all deps install uninstall check bench lab rpm srpm clean

all:

# Fragments owned by the parts they build.
-include preload/preload.mk tests/lab/lab.mk
