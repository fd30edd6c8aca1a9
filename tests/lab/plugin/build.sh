#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Build the lab's instruction-counting QEMU plugin (insn_count.c) against
# the plugin API header of the QEMU installed here:
# include/qemu/qemu-plugin.h from Debian's `qemu` source package of the
# same version as qemu-system-x86, fetched with tools/debsrc-apt (a private
# apt configuration with deb-src lines; the host's sources are never
# touched).  QEMU 7.2's header needs no glib, so no -dev package either.
#
#   LAB_CACHE=/var/cache/irqtune-lab tests/lab/plugin/build.sh
#
# Output: $LAB_CACHE/plugin/insn_count.so; the header is kept in
# $LAB_CACHE/qemu-src/<version>/ (the source tarballs are not).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
LAB_CACHE=${LAB_CACHE:-/var/cache/irqtune-lab}
log() { echo "[lab-plugin] $*" >&2; }

version=$(dpkg-query -W -f '${source:Version}' qemu-system-x86 2>/dev/null) || {
	log "qemu-system-x86 is not installed (make lab-deps installs it)"; exit 1; }
hdir=$LAB_CACHE/qemu-src/$version
header=$hdir/qemu-plugin.h
if [ ! -s "$header" ]; then
	log "fetching the plugin API header from Debian's qemu $version source package"
	work=$LAB_CACHE/qemu-src/download
	rm -rf "$work"
	mkdir -p "$work" "$hdir"
	(cd "$work" && "$REPO/tools/debsrc-apt" source "qemu=$version" >&2)
	orig=$(ls "$work"/qemu_*.orig.tar.* | head -n1)
	tar -C "$work" -xf "$orig" --wildcards --no-anchored 'include/qemu/qemu-plugin.h'
	found=$(find "$work" -path '*/include/qemu/qemu-plugin.h' | head -n1)
	[ -n "$found" ] || { log "no include/qemu/qemu-plugin.h in $orig"; exit 1; }
	# Debian's patches, if one ever touched the header, would make the
	# installed QEMU differ from it: refuse rather than build against it.
	deb=$(ls "$work"/qemu_*.debian.tar.* 2>/dev/null | head -n1 || true)
	if [ -n "$deb" ] && tar -xOf "$deb" --wildcards 'debian/patches/*' 2>/dev/null |
			grep -q '^+++ .*include/qemu/qemu-plugin.h'; then
		log "a Debian patch of qemu $version changes qemu-plugin.h: not supported"; exit 1
	fi
	cp "$found" "$header.tmp" && mv "$header.tmp" "$header"
	rm -rf "$work"
fi
out=$LAB_CACHE/plugin/insn_count.so
mkdir -p "$LAB_CACHE/plugin"
if [ ! -s "$out" ] || [ "$HERE/insn_count.c" -nt "$out" ] || [ "$header" -nt "$out" ]; then
	log "building $out (qemu $version)"
	gcc -O2 -Wall -Wextra -Werror -shared -fPIC -pthread -I "$hdir" \
		-o "$out.tmp" "$HERE/insn_count.c"
	mv "$out.tmp" "$out"
fi
echo "$out"
