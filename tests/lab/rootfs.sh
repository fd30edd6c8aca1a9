#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Build the lab guest's root file system: Debian 12 (debootstrap minbase)
# plus rootfs.packages, packed as an ext4 image with mke2fs -d (no loop
# mount). Rebuilt only when rootfs.packages, this script or the bootstrap
# init change; the result is $LAB_CACHE/rootfs.img (raw ext4).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LAB_CACHE=${LAB_CACHE:-/var/cache/irqtune-lab}
MIRROR=${LAB_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
IMG=$LAB_CACHE/rootfs.img
SIZE=${LAB_ROOTFS_SIZE:-2G}

log() { printf '[lab-rootfs] %s\n' "$*" >&2; }

mapfile -t PKGS < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$HERE/rootfs.packages" | xargs -n1)
stamp=$(cat "$HERE/rootfs.packages" "$HERE/rootfs.sh" "$HERE/guest/lab-init" | sha1sum | cut -c1-40)
if [ -f "$IMG" ] && [ "$(cat "$IMG.stamp" 2>/dev/null)" = "$stamp" ]; then
	log "image up to date: $IMG"
	exit 0
fi

mkdir -p "$LAB_CACHE"
exec 8>"$LAB_CACHE/rootfs.lock"
flock 8
t0=$(date +%s)
dir=$LAB_CACHE/rootfs.tmp
rm -rf "$dir"
mkdir -p "$LAB_CACHE/debs"
log "debootstrap --variant=minbase $SUITE ($MIRROR)"
debootstrap --variant=minbase --cache-dir="$LAB_CACHE/debs" "$SUITE" "$dir" "$MIRROR" \
	>"$LAB_CACHE/debootstrap.log" 2>&1 || { tail -n 30 "$LAB_CACHE/debootstrap.log"; exit 1; }
# No services may start inside the chroot.
printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
chmod +x "$dir/usr/sbin/policy-rc.d"
log "apt-get install ${PKGS[*]}"
chroot "$dir" /usr/bin/env DEBIAN_FRONTEND=noninteractive apt-get -q update >>"$LAB_CACHE/debootstrap.log" 2>&1
chroot "$dir" /usr/bin/env DEBIAN_FRONTEND=noninteractive \
	apt-get -q -y --no-install-recommends install "${PKGS[@]}" >>"$LAB_CACHE/debootstrap.log" 2>&1 ||
	{ tail -n 30 "$LAB_CACHE/debootstrap.log"; exit 1; }
chroot "$dir" apt-get clean
rm -f "$dir/usr/sbin/policy-rc.d"
rm -rf "$dir"/var/lib/apt/lists/*
install -m 0755 "$HERE/guest/lab-init" "$dir/sbin/lab-init"
echo irqtune-lab >"$dir/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 irqtune-lab\n::1 localhost\n' >"$dir/etc/hosts"
: >"$dir/etc/resolv.conf"
printf '/dev/vda / ext4 rw 0 1\n' >"$dir/etc/fstab"
chroot "$dir" dpkg-query -W -f='${Package} ${Version}\n' >"$LAB_CACHE/rootfs.manifest"
rm -f "$IMG.tmp"
mke2fs -q -t ext4 -L irqtune-root -d "$dir" "$IMG.tmp" "$SIZE"
mv "$IMG.tmp" "$IMG"
echo "$stamp" >"$IMG.stamp"
rm -rf "$dir"
log "image built in $(( $(date +%s) - t0 ))s: $IMG ($(wc -l <"$LAB_CACHE/rootfs.manifest") packages)"
