# SPDX-License-Identifier: GPL-2.0-or-later
# bench/ - irqtune-bench: the IRQ suspension series' memcached benchmark on
# an administrator's own server and client (over ssh), and in the lab
# (tests/lab/bench).  The Python package irqtune_bench, the load generator
# mcload (C) and fullbusy's epoll shim epoll_slice.so.
# Included by the top-level Makefile; uses its DESTDIR, BINDIR, LIBDIR,
# MANDIR, PYTHON and PYTHON_SITELIB.  Not part of `make install`: the bench is a
# package of its own (irqtune-bench), wanted on the bench's hosts only.
#
# Targets: bench-tools, install-bench, uninstall-bench, clean-bench, bench-docs, bench-local.

BENCH_SRCDIR     := bench
BENCH_BUILDDIR   := build/bench
LIBEXECDIR       ?= /usr/libexec
BENCH_LIBEXECDIR ?= $(LIBEXECDIR)/irqtune-bench
BENCH_LIBDIR     ?= $(LIBDIR)/irqtune-bench
BENCH_CC         ?= $(CC)
# Warnings of a newer compiler stay warnings in a distribution's build
# (BENCH_WERROR=), as for the preload library.
BENCH_WERROR     ?= -Werror
BENCH_CFLAGS     := -std=gnu11 -O2 -g -Wall -Wextra $(BENCH_WERROR) -fstack-protector-strong \
	-fstack-clash-protection $(if $(findstring _FORTIFY_SOURCE,$(CFLAGS)),,-D_FORTIFY_SOURCE=2)
BENCH_LDFLAGS    := -Wl,-z,relro -Wl,-z,now -Wl,-z,noexecstack -Wl,--as-needed
BENCH_PY_FILES   := $(wildcard $(BENCH_SRCDIR)/irqtune_bench/*.py)
# Beside the irqtune library where TuneD is installed; a client without
# TuneD takes its Python's own site directory.
BENCH_SITELIB    ?= $(or $(PYTHON_SITELIB),$(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null))

BENCH_MCLOAD := $(BENCH_BUILDDIR)/mcload
BENCH_SHIM   := $(BENCH_BUILDDIR)/epoll_slice.so
BENCH_CMD    := $(BENCH_BUILDDIR)/irqtune-bench

.PHONY: bench-tools install-bench uninstall-bench clean-bench bench-docs bench-local

bench-tools: $(BENCH_MCLOAD) $(BENCH_SHIM) $(BENCH_CMD)

$(BENCH_BUILDDIR):
	mkdir -p $@

$(BENCH_MCLOAD): $(BENCH_SRCDIR)/mcload.c | $(BENCH_BUILDDIR)
	$(BENCH_CC) $(BENCH_CFLAGS) $(CFLAGS) $(BENCH_LDFLAGS) $(LDFLAGS) -o $@ $< -lm

$(BENCH_SHIM): $(BENCH_SRCDIR)/epoll_slice.c | $(BENCH_BUILDDIR)
	$(BENCH_CC) $(BENCH_CFLAGS) -fPIC -fvisibility=hidden $(CFLAGS) -shared $(BENCH_LDFLAGS) $(LDFLAGS) -o $@ $< -ldl

# The installed command names the installed generator and shim.
$(BENCH_CMD): $(BENCH_SRCDIR)/irqtune-bench.in | $(BENCH_BUILDDIR)
	sed -e 's|@PYTHON@|$(PYTHON)|' -e 's|@MCLOAD@|$(BENCH_LIBEXECDIR)/mcload|' \
		-e 's|@SHIM@|$(BENCH_LIBDIR)/epoll_slice.so|' $< > $@.tmp
	chmod 0755 $@.tmp
	mv $@.tmp $@

install-bench: bench-tools
	@test -n "$(BENCH_SITELIB)" || { echo "no site-packages for $(PYTHON) (BENCH_SITELIB)" >&2; exit 1; }
	rm -rf $(DESTDIR)$(BENCH_SITELIB)/irqtune_bench
	install -d -m 0755 $(DESTDIR)$(BENCH_SITELIB)/irqtune_bench $(DESTDIR)$(BINDIR) \
		$(DESTDIR)$(BENCH_LIBEXECDIR) $(DESTDIR)$(BENCH_LIBDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 0644 $(BENCH_PY_FILES) $(DESTDIR)$(BENCH_SITELIB)/irqtune_bench/
	install -m 0755 $(BENCH_CMD) $(DESTDIR)$(BINDIR)/irqtune-bench
	install -m 0755 $(BENCH_MCLOAD) $(DESTDIR)$(BENCH_LIBEXECDIR)/mcload
	install -m 0755 $(BENCH_SHIM) $(DESTDIR)$(BENCH_LIBDIR)/epoll_slice.so
	install -m 0644 $(BENCH_SRCDIR)/irqtune-bench.1 $(DESTDIR)$(MANDIR)/man1/irqtune-bench.1

uninstall-bench:
	rm -rf $(DESTDIR)$(BENCH_SITELIB)/irqtune_bench $(DESTDIR)$(BENCH_LIBEXECDIR) $(DESTDIR)$(BENCH_LIBDIR)
	rm -f $(DESTDIR)$(BINDIR)/irqtune-bench $(DESTDIR)$(MANDIR)/man1/irqtune-bench.1

clean-bench:
	rm -rf $(BENCH_BUILDDIR)

# docs/benchmarks.md's run-derived parts and their plots, one per committed
# run (tests/unit/bench/test_bench_docs.py checks they match them): the judged run
# on a real kernel, and the lab's emulated one (instruction counts).
BENCH_DOCS_RUNS ?= $(wildcard docs/data/local-bench.json.xz) docs/data/lab-bench.json.xz
bench-docs:
	for run in $(BENCH_DOCS_RUNS); do \
		PYTHONPATH=$(BENCH_SRCDIR) $(PYTHON) -m irqtune_bench docs $$run docs/benchmarks.md --images docs/img \
			|| exit 1; done

# The judged run on this machine's own kernel (bench/irqtune_bench/netns.py,
# docs/benchmarks.md "A real kernel"): needs root, memcached, the project
# installed and TuneD running (make deploy), and the machine to itself for
# about two hours.  The results go to build/bench-local; commit the JSON as
# docs/data/local-bench.json.xz (xz -9) and run make bench-docs.
BENCH_LOCAL_ARGS ?= --modes base,fullbusy,keepbusy,suspend20,suspend200,recommend,auto \
	--fractions 0.1,0.3,0.5,0.7,0.9 --repeats 8 --seconds 20 --warmup 2
bench-local: bench-tools
	PYTHONPATH=$(BENCH_SRCDIR) $(PYTHON) -m irqtune_bench local --mcload $(CURDIR)/$(BENCH_MCLOAD) \
		--shim $(CURDIR)/$(BENCH_SHIM) --out $(CURDIR)/build/bench-local $(BENCH_LOCAL_ARGS)
