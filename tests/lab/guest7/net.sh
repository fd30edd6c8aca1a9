#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Generation-7 guest (systemd): address the NIC whose MAC is irqtune.nic=
# with irqtune.ip= from the kernel command line.
ipaddr=
nicmac=
for arg in $(cat /proc/cmdline); do
	case $arg in
	irqtune.ip=*) ipaddr=${arg#irqtune.ip=} ;;
	irqtune.nic=*) nicmac=${arg#irqtune.nic=} ;;
	esac
done
for d in /sys/class/net/*; do
	[ -e "$d/address" ] && [ "$(cat "$d/address")" = "$nicmac" ] || continue
	nic=${d##*/}
	[ -n "$ipaddr" ] && ip addr replace "$ipaddr" dev "$nic"
	ip link set "$nic" up
	echo "lab net: $nic $ipaddr"
done
