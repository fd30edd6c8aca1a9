# SPDX-License-Identifier: GPL-2.0-or-later
# preload/ - libirqtune-busypoll.so (LD_PRELOAD opt-in to epoll busy polling
# and IRQ suspension) and the irqtune-busypoll-run command.
# Included by the top-level Makefile; uses its DESTDIR, LIBDIR, BINDIR,
# MANDIR and PYTHON.
#
# Targets: preload, install-preload, uninstall-preload, check-preload,
#          clean-preload.

PRELOAD_SRCDIR   := preload
PRELOAD_BUILDDIR := build/preload
PRELOAD_SONAME   := libirqtune-busypoll.so
PRELOAD_LIBDIR   ?= $(LIBDIR)/irqtune
PRELOAD_CC       ?= $(CC)
# Hardening as Fedora's redhat-rpm-config would add; an rpm build passes its
# own flags in CFLAGS/LDFLAGS, which come after these.
# PRELOAD_WERROR= turns warnings of a newer compiler back into warnings.
PRELOAD_WERROR   ?= -Werror
PRELOAD_CFLAGS   := -std=gnu11 -O2 -g -fPIC -Wall -Wextra $(PRELOAD_WERROR) -Wformat=2 \
	-Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-fvisibility=hidden -fstack-protector-strong -fno-strict-aliasing \
	-fstack-clash-protection \
	$(if $(findstring _FORTIFY_SOURCE,$(CFLAGS)),,-D_FORTIFY_SOURCE=2)
PRELOAD_LDFLAGS  := -shared -Wl,-z,relro -Wl,-z,now -Wl,-z,noexecstack \
	-Wl,--as-needed -Wl,-soname,$(PRELOAD_SONAME)
PRELOAD_LIBS     := -ldl

PRELOAD_LIB := $(PRELOAD_BUILDDIR)/$(PRELOAD_SONAME)
PRELOAD_RUN := $(PRELOAD_BUILDDIR)/irqtune-busypoll-run
PRELOAD_MAN := $(PRELOAD_SRCDIR)/irqtune-busypoll-run.1

.PHONY: preload install-preload uninstall-preload check-preload clean-preload

preload: $(PRELOAD_LIB) $(PRELOAD_RUN)

$(PRELOAD_BUILDDIR):
	mkdir -p $@

$(PRELOAD_LIB): $(PRELOAD_SRCDIR)/irqtune_busypoll.c \
		$(PRELOAD_SRCDIR)/irqtune_epoll_params.h | $(PRELOAD_BUILDDIR)
	$(PRELOAD_CC) $(PRELOAD_CFLAGS) $(CFLAGS) $(PRELOAD_LDFLAGS) $(LDFLAGS) \
		-o $@ $< $(PRELOAD_LIBS)

# The installed script names the installed library; tests point it at the
# build tree with IRQTUNE_BUSYPOLL_LIBRARY.
$(PRELOAD_RUN): $(PRELOAD_SRCDIR)/irqtune-busypoll-run.in | $(PRELOAD_BUILDDIR)
	sed 's|@PRELOAD_LIB@|$(PRELOAD_LIBDIR)/$(PRELOAD_SONAME)|g' $< > $@.tmp
	chmod 0755 $@.tmp
	mv $@.tmp $@

install-preload: preload
	install -d $(DESTDIR)$(PRELOAD_LIBDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 0755 $(PRELOAD_LIB) $(DESTDIR)$(PRELOAD_LIBDIR)/$(PRELOAD_SONAME)
	install -m 0755 $(PRELOAD_RUN) $(DESTDIR)$(BINDIR)/irqtune-busypoll-run
	if [ -f $(PRELOAD_MAN) ]; then \
		install -m 0644 $(PRELOAD_MAN) $(DESTDIR)$(MANDIR)/man1/irqtune-busypoll-run.1; \
	fi

uninstall-preload:
	rm -f $(DESTDIR)$(PRELOAD_LIBDIR)/$(PRELOAD_SONAME) \
		$(DESTDIR)$(BINDIR)/irqtune-busypoll-run \
		$(DESTDIR)$(MANDIR)/man1/irqtune-busypoll-run.1
	-rmdir $(DESTDIR)$(PRELOAD_LIBDIR) 2>/dev/null

# The library tests; the memcached test inside skips itself unless root
# with ip netns and memcached.
check-preload: preload
	$(PYTHON) -m pytest -q tests/preload

clean-preload:
	rm -rf $(PRELOAD_BUILDDIR)
