#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Check kernel patch series the way they are submitted:
#   check-series.sh [SERIES...]     (default: every kernel-patches/*/series)
#
# For each series, alone on the pristine base tree (see kernel.sh):
#  1. git am of every patch listed in kernel-patches/SERIES/series;
#  2. scripts/checkpatch.pl --strict on each patch: any ERROR or WARNING
#     fails (CHECKs are reported);
#  3. a W=1 build (lab config + the series' options) of every object whose
#     .c file the series touches, before and after the series; a warning
#     that appears only after fails. Objects the lab config does not build
#     are reported as skipped. LAB_CHECK_FULL=1 compares a whole W=1
#     bzImage build instead (slow the first time, ccached afterwards).
# Then the same W=1 build after each shorter prefix of the series (patches
# 1..k), so every patch builds on its own. LAB_CHECK_BOOT=1 also builds a
# bzImage of every prefix and of the whole series (lab configuration, no
# W=1) and boots it in a guest (boot.py --check-log): it must reach the
# agent with no warning, oops, KASAN or lockdep report in its log.
# LAB_GEN=7 checks kernel-patches/7.2/* on the Linux 7.2 tree the same way.
# A series whose series file says "# needs: A,B" (lab-only additions such as
# gsim-lab) is checked on top of those series instead of the pristine base.
# Exit status 0 only if every series passes. Logs: $LAB_CACHE/check/
# ($LAB_CACHE/7.2-check/ for LAB_GEN=7).

set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=kernel.sh
. "$HERE/kernel.sh"

# Per generation (LAB_GEN=7: kernel-patches/7.2 on the 7.2 tree): logs and
# the build directory, which belongs to one source tree.
CHECKDIR=$LAB_CACHE/${NAME_PREFIX}check
BDIR=$LAB_CACHE/build/${NAME_PREFIX}check
mkdir -p "$CHECKDIR"

series=("$@")
if [ ${#series[@]} -eq 0 ]; then
	mapfile -t series < <(resolve_set all)
fi
[ ${#series[@]} -gt 0 ] || die "no series found in $PATCHDIR"

# Build the given objects with W=1; warnings (file:line:col stripped of the
# line and column) go to $2.
w1_build() {
	local out=$1 warnings=$2 obj rc
	shift 2
	: >"$out"
	for obj in "$@"; do
		rc=0
		make -C "$TREE" O="$BDIR" "${MAKEVARS[@]}" -j"$JOBS" W=1 "$obj" >>"$out" 2>&1 || rc=$?
		if [ $rc -ne 0 ]; then
			if grep -q "No rule to make target '$obj'\|No rule to make target .*$obj" "$out"; then
				echo "SKIPPED $obj" >>"$out"
			else
				echo "FAILED $obj" >>"$out"
			fi
		fi
	done
	grep -E ': (warning|error):' "$out" | sed -E 's/:[0-9]+:[0-9]+:/:/' | sort -u >"$warnings" || true
}

# The object a .c file is compiled into: its own, or that of the .c file
# in the same directory that #includes it (kernel/sched/isolation.c is
# built as part of build_utility.o and does not compile alone).
object_of() {
	local c=$1 dir includer
	dir=$(dirname "$c")
	includer=$(grep -lE "^#[[:space:]]*include \"$(basename "$c")\"" "$TREE/$dir"/*.c 2>/dev/null | head -n1)
	if [ -n "$includer" ]; then
		c=$dir/$(basename "$includer")
	fi
	echo "${c%.c}.o"
}

# Build the checked-out tree's bzImage and boot it as kernel
# ${NAME_PREFIX}check-SERIES-K; "boots" means the guest agent answered and
# the kernel log has no report.
boot_check() {
	local s=$1 k=$2 set=$3 log=$4 name=${NAME_PREFIX}check-$1-$2 bdir=$BDIR-boot
	configure "$set" "$bdir"
	if ! make -C "$TREE" O="$bdir" "${MAKEVARS[@]}" -j"$JOBS" bzImage >"$log/boot-build-$k.log" 2>&1; then
		echo "  FAIL: bzImage with patches 1-$k does not build (log $log/boot-build-$k.log)"
		return 1
	fi
	mkdir -p "$LAB_CACHE/out/$name"
	cp "$bdir/arch/x86/boot/bzImage" "$LAB_CACHE/out/$name/bzImage"
	if LAB_CACHE=$LAB_CACHE PYTHONPATH="$HERE/..:$HERE/../../bench" python3 "$HERE/boot.py" --kernel "$name" --check-log \
		>"$log/boot-$k.log" 2>&1; then
		echo "  boot with patches 1-$k: $(sed -n 's/^booted .* in \([0-9.]*s\).*/\1 to the agent/p' "$log/boot-$k.log"), $(grep '^kernel log:' "$log/boot-$k.log")"
	else
		echo "  FAIL: boot with patches 1-$k (log $log/boot-$k.log):"
		grep -E '^kernel log:|^  |Error|error' "$log/boot-$k.log" | head -n 20 | sed 's/^/    /'
		return 1
	fi
}

check_one() {
	local s=$1 p n=0 errs=0 warns=0 checks=0 files=() objs=() log rc=0
	local needs set=$1 baseref=base onto=base
	log=$CHECKDIR/$s
	mkdir -p "$log"
	echo "=== series $s"

	needs=$(sed -n 's/^# *needs: *//p' "$PATCHDIR/$s/series" | tr -d ' ')
	if [ -n "$needs" ]; then
		checkout_set "$needs" >/dev/null 2>&1 || { echo "FAIL $s: needed series $needs do not apply"; return 1; }
		baseref=$(git -C "$TREE" rev-parse HEAD)
		set=$needs,$s
		onto="base + $needs"
	fi
	checkout_set "$set" || { echo "FAIL $s: git am on $onto failed"; return 1; }
	echo "  git am: $(series_patches "$s" | wc -l) patches apply on $onto ($(sed -n 's/^debian=//p' "$TREE/.git/lab-base"))"

	while read -r p; do
		n=$((n + 1))
		(cd "$TREE" && ./scripts/checkpatch.pl --strict "$p") >"$log/checkpatch-$n.log" 2>&1 || true
		local line e w c
		line=$(grep -E '^total: ' "$log/checkpatch-$n.log" | tail -n 1)
		e=$(sed -E 's/^total: ([0-9]+) errors.*/\1/' <<<"$line")
		w=$(sed -E 's/.* ([0-9]+) warnings.*/\1/' <<<"$line")
		c=$(sed -E 's/.* ([0-9]+) checks.*/\1/' <<<"$line")
		echo "  checkpatch --strict $(basename "$p"): $line"
		errs=$((errs + ${e:-1})); warns=$((warns + ${w:-1})); checks=$((checks + ${c:-0}))
		if [ "${e:-1}" != 0 ] || [ "${w:-1}" != 0 ] || [ "${c:-0}" != 0 ]; then
			grep -E '^(ERROR|WARNING|CHECK):' -A3 "$log/checkpatch-$n.log" | sed 's/^/    /'
		fi
	done < <(series_patches "$s")
	if [ "$errs" != 0 ] || [ "$warns" != 0 ]; then
		echo "  FAIL: checkpatch errors $errs, warnings $warns"
		rc=1
	fi

	mapfile -t files < <(git -C "$TREE" diff --name-only "$baseref"..HEAD)
	for p in "${files[@]}"; do
		case $p in *.c) objs+=("$(object_of "$p")") ;; esac
	done
	if [ "${LAB_CHECK_FULL:-0}" = 1 ]; then
		objs=(bzImage)
	fi
	if [ ${#objs[@]} -gt 0 ]; then
		# Before: base (or the needed series) with the same configuration.
		git -C "$TREE" checkout -q -f "$baseref"
		configure "$set" "$BDIR"
		w1_build "$log/w1-base.log" "$log/w1-base.warnings" "${objs[@]}"
		checkout_set "$set" >/dev/null 2>&1
		configure "$set" "$BDIR"
		w1_build "$log/w1-series.log" "$log/w1-series.warnings" "${objs[@]}"
		local new skipped failed
		new=$(comm -13 "$log/w1-base.warnings" "$log/w1-series.warnings" || true)
		skipped=$(sed -n 's/^SKIPPED //p' "$log/w1-series.log" | tr '\n' ' ')
		# An object the configuration does not enable (e.g. kernel/irq/debugfs.o
		# without GENERIC_IRQ_DEBUGFS) fails before and after: not ours.
		failed=$(comm -23 <(sed -n 's/^FAILED //p' "$log/w1-series.log" | sort) \
			<(sed -n 's/^FAILED //p' "$log/w1-base.log" | sort) | tr '\n' ' ')
		skipped="$skipped$(comm -12 <(sed -n 's/^FAILED //p' "$log/w1-series.log" | sort) \
			<(sed -n 's/^FAILED //p' "$log/w1-base.log" | sort) | tr '\n' ' ')"
		echo "  W=1 build of ${objs[*]}: $(wc -l <"$log/w1-base.warnings") warnings before, $(wc -l <"$log/w1-series.warnings") after${skipped:+; not in lab config: $skipped}"
		if [ -n "$failed" ]; then
			echo "  FAIL: W=1 build failed for $failed (log $log/w1-series.log)"
			grep -E 'error' "$log/w1-series.log" | head -n 20 | sed 's/^/    /'
			rc=1
		fi
		if [ -n "$new" ]; then
			echo "  FAIL: new W=1 warnings:"
			sed 's/^/    /' <<<"$new"
			rc=1
		fi
		# Each patch on its own: every shorter prefix of the series builds
		# the same objects without a new warning or a failure.
		local head total k
		checkout_set "$set" >/dev/null 2>&1
		head=$(git -C "$TREE" rev-parse HEAD)
		# Counted from the series file: a needed series is applied afresh,
		# so $baseref is not an ancestor of $head.
		total=$(series_patches "$s" | wc -l)
		for ((k = 1; k < total; k++)); do
			git -C "$TREE" checkout -q -f "$head~$((total - k))"
			configure "$set" "$BDIR"
			w1_build "$log/w1-patch$k.log" "$log/w1-patch$k.warnings" "${objs[@]}"
			new=$(comm -13 "$log/w1-base.warnings" "$log/w1-patch$k.warnings" || true)
			failed=$(comm -23 <(sed -n 's/^FAILED //p' "$log/w1-patch$k.log" | sort) \
				<(sed -n 's/^FAILED //p' "$log/w1-base.log" | sort) | tr '\n' ' ')
			echo "  W=1 with patches 1-$k of $total: $(wc -l <"$log/w1-patch$k.warnings") warnings${failed:+, FAILED $failed}"
			if [ -n "$failed" ] || [ -n "$new" ]; then
				echo "  FAIL: patches 1-$k alone:"
				sed 's/^/    /' <<<"$new"
				grep -E 'error' "$log/w1-patch$k.log" | head -n 20 | sed 's/^/    /'
				rc=1
			fi
			if [ "${LAB_CHECK_BOOT:-0}" = 1 ]; then
				boot_check "$s" "$k" "$set" "$log" || rc=1
			fi
		done
		checkout_set "$set" >/dev/null 2>&1
		if [ "${LAB_CHECK_BOOT:-0}" = 1 ]; then
			boot_check "$s" "$total" "$set" "$log" || rc=1
		fi
	fi
	if [ $rc = 0 ]; then
		echo "PASS $s"
	else
		echo "FAIL $s (logs in $log)"
	fi
	return $rc
}

lock_tree
ensure_tree
status=0
for s in "${series[@]}"; do
	[ -f "$PATCHDIR/$s/series" ] || { echo "FAIL $s: no $PATCHDIR/$s/series"; status=1; continue; }
	check_one "$s" || status=1
done
exit $status
