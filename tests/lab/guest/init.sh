#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# irqtune lab guest init (PID 1), started by /sbin/lab-init from the
# read-only repository share at /irqtune. No systemd: mount what the tests
# need, configure the NIC from the kernel command line, start dbus, then run
# the agent that executes the host's commands. The agent powers the guest
# off on request; if it dies it is restarted.
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
export PYTHONDONTWRITEBYTECODE=1
export LANG=C.UTF-8

mount -t tmpfs -o mode=0755 tmpfs /run
mount -t tmpfs tmpfs /tmp
mkdir -p /dev/pts /dev/shm /run/lock
mount -t devpts -o gid=5,mode=620 devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
hostname irqtune-lab
ip link set lo up

# irqtune.ip=ADDR/PREFIX irqtune.nic=MAC select and address the lab NIC.
ipaddr=
nicmac=
for arg in $(cat /proc/cmdline); do
	case $arg in
	irqtune.ip=*) ipaddr=${arg#irqtune.ip=} ;;
	irqtune.nic=*) nicmac=${arg#irqtune.nic=} ;;
	esac
done
nic=
for d in /sys/class/net/*; do
	[ -e "$d/address" ] || continue
	if [ -n "$nicmac" ] && [ "$(cat "$d/address")" = "$nicmac" ]; then
		nic=${d##*/}
	fi
done
if [ -n "$nic" ]; then
	[ -n "$ipaddr" ] && ip addr add "$ipaddr" dev "$nic"
	ip link set "$nic" up
fi
echo "lab init: nic=${nic:-none} ip=${ipaddr:-none} kernel=$(uname -r)"

if [ -x /usr/bin/dbus-daemon ]; then
	mkdir -p /run/dbus
	dbus-uuidgen --ensure 2>/dev/null
	dbus-daemon --system --fork 2>/dev/null || echo "lab init: dbus failed"
fi

while :; do
	python3 /irqtune/tests/lab/guest/agent.py
	echo "lab init: agent exited ($?), restarting"
	sleep 1
done
