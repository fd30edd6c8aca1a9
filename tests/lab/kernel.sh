#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# irqtune kernel lab: base tree, patch series and kernel builds.
#
#   kernel.sh tree            unpack the generation's Debian linux-source
#                             once into its tree, make it a git repo, tag "base"
#   kernel.sh checkout SET    check out SET (see below) in the shared tree
#   kernel.sh build SET       check out SET and build bzImage into
#                             $LAB_CACHE/out/<name>/ (name: "lab" for all,
#                             "base" for none, else the series joined by "+")
#   kernel.sh info            print the base version
#
# SET is "all" (every kernel-patches/*/series, housekeeping-vectors first,
# then gsim, then the rest by name, except series marked "# fault-injection"),
# "none" (the pristine base) or a comma-separated list of series names.
#
# Generations (LAB_GEN): 6 (default) is Debian 12's linux-source-6.12, the
# RHEL 10 base, series in kernel-patches/<series>/, kernels "lab" and
# "base"; 7 is Debian unstable's linux-source-7.2 (fetched with
# tools/sid-apt), series in kernel-patches/7.2/<series>/, kernels "7.2-lab"
# and "7.2-base", configured with lab7.config on top of lab.config.
# LAB_VARIANT=debug adds lab-debug.config (KASAN, lockdep) and "-debug" to
# the kernel name; LAB_VARIANT=rt adds lab-rt.config (PREEMPT_RT) and "-rt"
# (e.g. 7.2-lab-rt: the same series in the same tree, its own build directory).
# LAB_VARIANT=systemd (generation 6 only) adds lab7.config and "-systemd":
# a 6.12 kernel that boots the generation-7 guest image (base-systemd, the
# server kernel without per-NAPI settings that lab-bench-hosts checks).
#
# Environment: LAB_CACHE (default /var/cache/irqtune-lab), LAB_JOBS (make -j,
# default 2), LAB_KERNEL_TARBALL, LAB_W (passed as W= to the build),
# LAB_PATCHDIR (default: the generation's kernel-patches directory).
# Every change to the shared tree happens under a lock, so parallel callers
# (make lab, check-series.sh) wait for each other instead of corrupting it.

set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
LAB_CACHE=${LAB_CACHE:-/var/cache/irqtune-lab}
LAB_GEN=${LAB_GEN:-6}
LAB_VARIANT=${LAB_VARIANT:-}
case $LAB_GEN in
6)
	SOURCE_PKG=linux-source-6.12
	TARBALL=${LAB_KERNEL_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
	TREE=$LAB_CACHE/linux
	PATCHDIR=${LAB_PATCHDIR:-$REPO/kernel-patches}
	NAME_PREFIX=
	CONFIGS=("$HERE/lab.config")
	;;
7)
	SOURCE_PKG=linux-source-7.2
	TARBALL=${LAB_KERNEL_TARBALL:-$LAB_CACHE/src7/deb/usr/src/linux-source-7.2.tar.xz}
	TREE=$LAB_CACHE/linux-7.2
	PATCHDIR=${LAB_PATCHDIR:-$REPO/kernel-patches/7.2}
	NAME_PREFIX=7.2-
	CONFIGS=("$HERE/lab.config" "$HERE/lab7.config")
	;;
*) echo "kernel.sh: LAB_GEN must be 6 or 7, not $LAB_GEN" >&2; exit 2 ;;
esac
case $LAB_VARIANT in
"") ;;
debug) CONFIGS+=("$HERE/lab-debug.config") ;;
rt) CONFIGS+=("$HERE/lab-rt.config") ;;
systemd)
	[ "$LAB_GEN" = 6 ] || { echo "kernel.sh: LAB_VARIANT=systemd is for LAB_GEN=6" >&2; exit 2; }
	CONFIGS+=("$HERE/lab7.config")
	;;
*) echo "kernel.sh: LAB_VARIANT must be empty, debug, rt or systemd, not $LAB_VARIANT" >&2; exit 2 ;;
esac
JOBS=${LAB_JOBS:-2}
SERIES_ORDER=(housekeeping-vectors gsim)
IDENT=(-c "user.name=irqtune lab" -c "user.email=irqtune@example.org")

export CCACHE_DIR=${CCACHE_DIR:-$LAB_CACHE/ccache}
export KBUILD_BUILD_USER=irqtune KBUILD_BUILD_HOST=lab
export KBUILD_BUILD_TIMESTAMP="2026-01-01 00:00:00 UTC"
MAKEVARS=(ARCH=x86_64 "CC=ccache gcc" "HOSTCC=ccache gcc")

log() { printf '[lab-kernel] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

lock_tree() {
	mkdir -p "$LAB_CACHE"
	exec 9>"$LAB_CACHE/tree.lock"
	if ! flock -n 9; then
		log "waiting for the tree lock ($LAB_CACHE/tree.lock)"
		flock 9
	fi
}

# Generation 7's source comes from Debian unstable as a single .deb,
# unpacked under $LAB_CACHE/src7 (never installed into the host).
fetch_tarball() {
	[ -r "$TARBALL" ] && return
	[ "$LAB_GEN" = 7 ] || die "$TARBALL missing (apt-get install $SOURCE_PKG)"
	local debs=$LAB_CACHE/debs7 deb
	mkdir -p "$debs"
	log "fetching $SOURCE_PKG from Debian unstable (tools/sid-apt)"
	(cd "$debs" && "$REPO/tools/sid-apt" download "$SOURCE_PKG" >&2) || die "cannot fetch $SOURCE_PKG"
	deb=$(ls -t "$debs"/"$SOURCE_PKG"_*.deb | head -n1)
	# dpkg-deb -x creates the last directory only, not its parents.
	mkdir -p "$LAB_CACHE/src7"
	dpkg-deb -x "$deb" "$LAB_CACHE/src7/deb"
	[ -r "$TARBALL" ] || die "$deb holds no $TARBALL"
}

source_version() {
	local deb
	if [ "$LAB_GEN" = 6 ]; then
		dpkg-query -W -f='${Version}' "$SOURCE_PKG" 2>/dev/null || echo unknown
	else
		deb=$(ls -t "$LAB_CACHE/debs7/${SOURCE_PKG}"_*.deb 2>/dev/null | head -n1)
		deb=${deb##*/}
		deb=${deb#"${SOURCE_PKG}"_}
		echo "${deb%_all.deb}"
	fi
}

ensure_tree() {
	if [ -e "$TREE/.git/lab-base-ready" ]; then
		return
	fi
	fetch_tarball
	local t0 tmp debver kver
	t0=$(date +%s)
	tmp=$TREE.tmp
	rm -rf "$tmp" "$TREE"
	mkdir -p "$tmp"
	log "unpacking $TARBALL"
	tar -xJf "$TARBALL" -C "$tmp" --strip-components=1
	debver=$(source_version)
	kver=$(make -s -C "$tmp" kernelversion)
	(
		cd "$tmp"
		git init -q
		git config gc.auto 0
		# Debian's top-level .gitignore ignores every top-level file.
		git add -A -f
		git "${IDENT[@]}" commit -q -m "Base: Debian $SOURCE_PKG $debver (kernelversion $kver)"
		git tag base
		printf 'debian=%s\nkernelversion=%s\ncommit=%s\n' \
			"$debver" "$kver" "$(git rev-parse HEAD)" >.git/lab-base
		touch .git/lab-base-ready
	)
	mv "$tmp" "$TREE"
	log "base tree ready in $(( $(date +%s) - t0 ))s: $(tr '\n' ' ' <"$TREE/.git/lab-base")"
}

# Resolve SET to an ordered list of series names (printed one per line).
resolve_set() {
	local set=$1 s
	case $set in
	none) return 0 ;;
	all)
		for s in "${SERIES_ORDER[@]}"; do
			[ -f "$PATCHDIR/$s/series" ] && echo "$s"
		done
		for s in "$PATCHDIR"/*/series; do
			[ -f "$s" ] || continue
			# Fault injection (a faulty kernel for the tests to fail on)
			# is built only when named.
			grep -q '^# fault-injection' "$s" && continue
			s=$(basename "$(dirname "$s")")
			case " ${SERIES_ORDER[*]} " in *" $s "*) continue ;; esac
			echo "$s"
		done
		;;
	*)
		tr ',' '\n' <<<"$set" | while read -r s; do
			[ -n "$s" ] || continue
			[ -f "$PATCHDIR/$s/series" ] || die "no series file $PATCHDIR/$s/series"
			echo "$s"
		done
		;;
	esac
}

# Fail (in the calling shell, not a subshell) on unknown series names.
validate_set() {
	local s line list=()
	case $1 in
	all | none) ;;
	*)
		for s in ${1//,/ }; do
			[ -f "$PATCHDIR/$s/series" ] || die "no series file $PATCHDIR/$s/series"
		done
		;;
	esac
	mapfile -t list < <(resolve_set "$1")
	for s in "${list[@]}"; do
		while read -r line; do
			line=${line%%#*}
			line=$(echo "$line" | xargs)
			[ -z "$line" ] || [ -f "$PATCHDIR/$s/$line" ] ||
				die "$PATCHDIR/$s/series names missing patch $line"
		done <"$PATCHDIR/$s/series"
	done
}

set_name() {
	local name
	case $1 in
	all) name=lab ;;
	none) name=base ;;
	*) name=$(tr ',' '+' <<<"$1") ;;
	esac
	echo "$NAME_PREFIX$name${LAB_VARIANT:+-$LAB_VARIANT}"
}

# Patch files of a series, in order (quilt-style series file).
series_patches() {
	local dir=$PATCHDIR/$1 line
	while read -r line; do
		line=${line%%#*}
		line=$(echo "$line" | xargs)
		[ -n "$line" ] || continue
		[ -f "$dir/$line" ] || die "$dir/series names missing patch $line"
		echo "$dir/$line"
	done <"$dir/series"
}

# Check out SET in the shared tree. Each distinct patch set gets its own
# branch, so switching between sets only touches the files that differ
# (keeping incremental builds small).
checkout_set() {
	local set=$1 series=() s p patches=() key branch
	validate_set "$set"
	mapfile -t series < <(resolve_set "$set")
	cd "$TREE"
	git am --abort >/dev/null 2>&1 || true
	if [ ${#series[@]} -eq 0 ]; then
		git checkout -q -f base
		log "checked out base ($(git rev-parse --short HEAD))"
		return
	fi
	for s in "${series[@]}"; do
		while read -r p; do patches+=("$p"); done < <(series_patches "$s")
	done
	key=$( (printf '%s\n' "${series[@]}"; cat "${patches[@]}") | sha1sum | cut -c1-12)
	branch=lab/$key
	if git rev-parse -q --verify "refs/heads/$branch" >/dev/null; then
		git checkout -q -f "$branch"
	else
		git checkout -q -f -B "$branch.tmp" base
		if ! git "${IDENT[@]}" am -q "${patches[@]}"; then
			git am --abort || true
			git checkout -q -f base
			git branch -D "$branch.tmp" >/dev/null
			die "series ${series[*]} do not apply to base"
		fi
		git branch -q -M "$branch.tmp" "$branch"
	fi
	log "checked out ${series[*]} as $branch: $(git rev-list --count base..HEAD) patches on base"
}

# Config fragments for SET: lab.config, each series' optional lab.config,
# and every Kconfig symbol a series adds ("+config FOO" lines).
write_fragments() {
	local set=$1 out=$2 s p sym
	: >"$out/series.config"
	while read -r s; do
		[ -n "$s" ] || continue
		if [ -f "$PATCHDIR/$s/lab.config" ]; then
			cat "$PATCHDIR/$s/lab.config" >>"$out/series.config"
		fi
		while read -r p; do
			sed -n 's/^+\(menu\)\?config \([A-Za-z0-9_]*\).*/\2/p' "$p"
		done < <(series_patches "$s") | sort -u | while read -r sym; do
			echo "CONFIG_$sym=y" >>"$out/series-auto.config.tmp"
		done
	done < <(resolve_set "$set")
	touch "$out/series-auto.config.tmp"
	mv "$out/series-auto.config.tmp" "$out/series-auto.config"
}

# Report fragment options that did not end up as requested. Symbols the
# tree does not know are only noted.
# Symbols a later fragment (the remaining arguments) sets again are that
# fragment's to check (lab-rt.config turns off what PREEMPT_RT excludes).
verify_config() {
	local cfg=$1 frag=$2 strict=$3 line sym want got bad=0
	shift 3
	while read -r line; do
		case $line in
		CONFIG_*=*) sym=${line%%=*}; want=${line#*=} ;;
		"# CONFIG_"*" is not set") sym=${line#\# }; sym=${sym%% *}; want=n ;;
		*) continue ;;
		esac
		if [ $# -gt 0 ] && grep -qE "^($sym=|# $sym is not set)" "$@"; then
			continue
		fi
		if grep -q "^$sym=" "$cfg"; then
			got=$(sed -n "s/^$sym=//p" "$cfg")
		elif grep -q "^# $sym is not set" "$cfg"; then
			got=n
		else
			got=absent
		fi
		if [ "$got" = "$want" ]; then
			continue
		fi
		if [ "$got" = absent ] && [ "$want" = n ]; then
			continue
		fi
		if [ "$got" = absent ]; then
			log "note: $sym=$want from $(basename "$frag") unknown or not selectable here"
			[ "$strict" = strict ] && bad=1
		else
			log "config mismatch: $sym wanted $want, got $got ($(basename "$frag"))"
			[ "$strict" = strict ] && bad=1
		fi
	done <"$frag"
	return $bad
}

configure() {
	local set=$1 bdir=$2 stamp frag
	mkdir -p "$bdir"
	write_fragments "$set" "$bdir"
	stamp=$(cat "${CONFIGS[@]}" "$bdir/series.config" "$bdir/series-auto.config" \
		<(git -C "$TREE" rev-parse HEAD) | sha1sum | cut -c1-40)
	if [ -f "$bdir/.config" ] && [ "$(cat "$bdir/.lab-config-stamp" 2>/dev/null)" = "$stamp" ]; then
		return
	fi
	log "configuring $bdir (tinyconfig + ${CONFIGS[*]##*/} + series options)"
	make -s -C "$TREE" O="$bdir" "${MAKEVARS[@]}" tinyconfig >/dev/null
	KCONFIG_CONFIG="$bdir/.config" "$TREE/scripts/kconfig/merge_config.sh" -m -O "$bdir" \
		"$bdir/.config" "${CONFIGS[@]}" "$bdir/series.config" "$bdir/series-auto.config" \
		>"$bdir/merge_config.log" 2>&1 || { cat "$bdir/merge_config.log"; die "merge_config failed"; }
	make -s -C "$TREE" O="$bdir" "${MAKEVARS[@]}" olddefconfig >/dev/null
	local i
	for i in "${!CONFIGS[@]}"; do
		frag=${CONFIGS[$i]}
		verify_config "$bdir/.config" "$frag" strict "${CONFIGS[@]:$((i + 1))}" ||
			die "${frag##*/} not satisfied"
	done
	verify_config "$bdir/.config" "$bdir/series.config" strict || die "series lab.config not satisfied"
	verify_config "$bdir/.config" "$bdir/series-auto.config" lax || true
	echo "$stamp" >"$bdir/.lab-config-stamp"
}

build_set() {
	local set=$1 name bdir out t0 t1 cs
	validate_set "$set"
	name=$(set_name "$set")
	bdir=$LAB_CACHE/build/$name
	# A set without series is the base: share its build directory.
	if [ -z "$(resolve_set "$set")" ]; then
		bdir=$LAB_CACHE/build/$(set_name none)
	fi
	out=$LAB_CACHE/out/$name
	lock_tree
	ensure_tree
	checkout_set "$set"
	configure "$set" "$bdir"
	command -v ccache >/dev/null || die "ccache missing"
	ccache -M 6G >/dev/null
	ccache -z >/dev/null
	t0=$(date +%s)
	log "building $name bzImage (make -j$JOBS O=$bdir${LAB_W:+ W=$LAB_W}) ..."
	make -s -C "$TREE" O="$bdir" "${MAKEVARS[@]}" -j"$JOBS" ${LAB_W:+W=$LAB_W} \
		LOCALVERSION="-$name" bzImage \
		>"$bdir/build.log" 2>&1 || { tail -n 60 "$bdir/build.log"; die "kernel build failed (log $bdir/build.log)"; }
	t1=$(date +%s)
	cs=$(ccache -s 2>/dev/null | grep -E '^ *(Hits|Misses):' | tr -s ' ' | tr '\n' ' ' || true)
	log "kernel $name built in $(( t1 - t0 ))s (ccache: ${cs:-n/a})"
	# An up-to-date tree relinks nothing: keep the artefacts and the info
	# of the build that made them (its build_seconds is the real cost).
	if cmp -s "$bdir/arch/x86/boot/bzImage" "$out/bzImage" &&
		cmp -s "$bdir/.config" "$out/config"; then
		log "artefacts in $out unchanged"
		return 0
	fi
	mkdir -p "$out"
	cp "$bdir/arch/x86/boot/bzImage" "$out/bzImage.tmp"
	cp "$bdir/.config" "$out/config"
	{
		cat "$TREE/.git/lab-base"
		echo "set=$set"
		echo "head=$(git -C "$TREE" rev-parse HEAD)"
		echo "release=$(cat "$bdir/include/config/kernel.release")"
		echo "build_seconds=$(( t1 - t0 ))"
		echo "patches:"
		git -C "$TREE" log --reverse --format='  %h %s' base..HEAD
	} >"$out/info"
	mv "$out/bzImage.tmp" "$out/bzImage"
	log "artefacts in $out"
}

# check-series.sh sources this file for its functions.
if [ "${BASH_SOURCE[0]}" != "$0" ]; then
	return 0
fi

cmd=${1:-}
case $cmd in
tree) lock_tree; ensure_tree ;;
checkout) lock_tree; ensure_tree; checkout_set "${2:?set}" ;;
build) build_set "${2:-all}" ;;
info) cat "$TREE/.git/lab-base" ;;
resolve) resolve_set "${2:-all}" ;;
*) sed -n '3,31p' "$0" >&2; exit 2 ;;
esac
