#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Generation-7 lab guest: Debian unstable with systemd as PID 1, TuneD 2.27
# as an enabled service, memcached/nginx/redis-server as services, sshd, and
# TuneD's `perf` Python module built from the Linux 7.2 tree's tools/perf
# (no Debian package ships it). mmdebstrap resolves dependencies through
# apt (debootstrap's --include does not). The guest units in guest7/ mount
# the repository share at /irqtune and start the lab agent from it, so
# guest-side changes need no rebuild. Result: $LAB_CACHE/rootfs7.img.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LAB_CACHE=${LAB_CACHE:-/var/cache/irqtune-lab}
MIRROR=${LAB_SID_MIRROR:-http://deb.debian.org/debian}
IMG=$LAB_CACHE/rootfs7.img
SIZE=${LAB_ROOTFS_SIZE:-4G}
TREE=$LAB_CACHE/linux-7.2

log() { printf '[lab-rootfs7] %s\n' "$*" >&2; }

mapfile -t PKGS < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$HERE/rootfs7.packages" | xargs -n1)
stamp=$(cat "$HERE/rootfs7.packages" "$HERE/rootfs7.sh" "$HERE"/guest7/*.service "$HERE"/guest7/*.mount |
	sha1sum | cut -c1-40)
if [ -f "$IMG" ] && [ "$(cat "$IMG.stamp" 2>/dev/null)" = "$stamp" ]; then
	log "image up to date: $IMG"
	exit 0
fi

mkdir -p "$LAB_CACHE/debs-sid"
exec 8>"$LAB_CACHE/rootfs7.lock"
flock 8
t0=$(date +%s)
dir=$LAB_CACHE/rootfs7.tmp
rm -rf "$dir"
log "mmdebstrap sid (${#PKGS[@]} packages)"
mmdebstrap --variant=apt --mode=root \
	--aptopt='Acquire::Check-Valid-Until "false"' \
	--aptopt='APT::Install-Recommends "false"' \
	--include="$(IFS=,; echo "${PKGS[*]}")" \
	--skip=download/empty \
	--setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
	--setup-hook="sync-in $LAB_CACHE/debs-sid /var/cache/apt/archives/" \
	--customize-hook="sync-out /var/cache/apt/archives $LAB_CACHE/debs-sid" \
	sid "$dir" "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR sid main" \
	>"$LAB_CACHE/mmdebstrap7.log" 2>&1 || { tail -n 40 "$LAB_CACHE/mmdebstrap7.log"; exit 1; }

# The 7.2 tree is kernel.sh's (LAB_GEN=7); it may still be unpacking.
for _ in $(seq 600); do [ -e "$TREE/.git/lab-base-ready" ] && break; sleep 2; done
[ -e "$TREE/.git/lab-base-ready" ] || { log "ERROR: $TREE missing: run LAB_GEN=7 tests/lab/kernel.sh tree"; exit 1; }
log "building TuneD's perf Python module from $TREE/tools/perf"
src=$dir/usr/src/linux-perf
mkdir -p "$src"
# perf's build reads the arm64 sysreg generator even on x86.
(cd "$TREE" && cp -a --parents tools include arch/x86 arch/arm64/tools arch/arm64/include \
	scripts lib Makefile "$src/")
cat >"$dir/tmp/build-perf.sh" <<'SCRIPT'
set -e
cd /usr/src/linux-perf/tools/perf
# Only what the Python module needs; no optional libraries.
set -- NO_LIBTRACEEVENT=1 NO_LIBBPF=1 NO_JEVENTS=1 NO_LIBPERL=1 NO_SDT=1 NO_LIBUNWIND=1 \
	NO_LIBDW=1 NO_SLANG=1 NO_GTK2=1 NO_LIBNUMA=1 NO_LIBCAP=1 NO_LIBBABELTRACE=1 \
	NO_LIBCRYPTO=1 NO_LIBLLVM=1 NO_DEMANGLE=1 PYTHON=python3 O=/tmp/perf-build
mkdir -p /tmp/perf-build
target=$(make -s "$@" python_perf_target 2>&1 | sed -n 's/^Target is: //p')
make -s -j"${JOBS:-2}" "$@" "$target"
install -m 0644 "$target" "$(python3 -c 'import sysconfig; print(sysconfig.get_path("platlib"))')/"
SCRIPT
chroot "$dir" /bin/sh /tmp/build-perf.sh >"$LAB_CACHE/perf7.log" 2>&1 ||
	{ tail -n 40 "$LAB_CACHE/perf7.log"; exit 1; }
rm -rf "$src" "$dir/tmp/perf-build" "$dir/tmp/build-perf.sh"
chroot "$dir" python3 -c 'import perf; perf.cpu_map(); print("perf module:", perf.__file__)' >&2

log "guest configuration"
install -m 0644 "$HERE"/guest7/*.service "$HERE"/guest7/*.mount "$dir/etc/systemd/system/"
chroot "$dir" systemctl enable irqtune.mount irqtune-lab-agent.service irqtune-lab-net.service >/dev/null 2>&1
# Boot speed and quiet test runs: no periodic maintenance jobs.
for t in apt-daily.timer apt-daily-upgrade.timer man-db.timer e2scrub_all.timer fstrim.timer \
	dpkg-db-backup.timer; do
	chroot "$dir" systemctl mask "$t" >/dev/null 2>&1 || true
done
chroot "$dir" systemctl is-enabled tuned memcached nginx redis-server ssh >&2
# One fixed machine id for the image (every boot is a fresh snapshot).
od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$dir/etc/machine-id"
echo >>"$dir/etc/machine-id"
echo irqtune-lab7 >"$dir/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 irqtune-lab7\n::1 localhost\n' >"$dir/etc/hosts"
printf '/dev/vda / ext4 rw 0 1\n' >"$dir/etc/fstab"
mkdir -p "$dir/irqtune" "$dir/root/.ssh"
chmod 0700 "$dir/root/.ssh"
rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/archives/*.deb
chroot "$dir" dpkg-query -W -f='${Package} ${Version}\n' >"$LAB_CACHE/rootfs7.manifest"
rm -f "$IMG.tmp"
mke2fs -q -t ext4 -L irqtune-root -d "$dir" "$IMG.tmp" "$SIZE"
mv "$IMG.tmp" "$IMG"
echo "$stamp" >"$IMG.stamp"
rm -rf "$dir"
log "image built in $(( $(date +%s) - t0 ))s: $IMG ($(wc -l <"$LAB_CACHE/rootfs7.manifest") packages;" \
	"tuned $(sed -n 's/^tuned //p' "$LAB_CACHE/rootfs7.manifest"), systemd $(sed -n 's/^systemd //p' "$LAB_CACHE/rootfs7.manifest"))"
