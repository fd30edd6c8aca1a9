# SPDX-License-Identifier: GPL-2.0-or-later
"""Which net devices devices=* leaves out, on sysfs fixture trees.

The layouts copy what Linux 6.18 shows (this project's build host, a
QEMU guest): eth0, virtio-net on PCI 0000:00:03.0,
/sys/class/net/eth0 -> ../../devices/pci0000:00/0000:00:03.0/virtio2/net/eth0
with device -> ../../../virtio2; lo and ifb0 on the host, and a veth pair
and a bridge made in a network namespace (`ip link add v0 type veth peer
name v0p`, `ip link add br0 type bridge`), all
/sys/class/net/<dev> -> ../../devices/virtual/net/<dev> without a device
link.  The USB NIC copies the usual path of a USB ethernet adapter.
"""

import os

import pytest

from irqtune.kernel.kfs import KernelFs
from irqtune.kernel.netdevs import is_virtual_netdev

# Attribute files every net device has in sysfs (a subset, as listed on the host).
COMMON = ("address", "flags", "ifindex", "mtu", "operstate", "napi_defer_hard_irqs",
          "gro_flush_timeout", "threaded", "type", "uevent")


def add_netdev(sys_root, name, devpath, bus_device=None):
    """/sys/devices/<devpath>/net/<name>, its class link, and the device link
    to its bus device (devpath itself) unless bus_device is False."""
    d = sys_root / "devices" / devpath / "net" / name
    d.mkdir(parents=True)
    for attr in COMMON:
        (d / attr).write_text("0\n")
    if bus_device:
        os.symlink(os.path.relpath(sys_root / "devices" / bus_device, d), d / "device")
    (sys_root / "class/net").mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(d, sys_root / "class/net"), sys_root / "class/net" / name)


@pytest.fixture
def kfs(tmp_path):
    sys_root = tmp_path / "sys"
    add_netdev(sys_root, "eth0", "pci0000:00/0000:00:03.0/virtio2",
               "pci0000:00/0000:00:03.0/virtio2")
    add_netdev(sys_root, "enp4s0f1", "pci0000:00/0000:00:1c.0/0000:04:00.1",
               "pci0000:00/0000:00:1c.0/0000:04:00.1")
    add_netdev(sys_root, "enx00e04c680001", "pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0",
               "pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0")
    for name in ("lo", "ifb0", "v0", "v0p", "br0"):
        add_netdev(sys_root, name, "virtual")
    (sys_root / "devices/virtual/net/br0/bridge").mkdir()
    return KernelFs(proc=str(tmp_path / "proc"), sys=str(sys_root))


@pytest.mark.parametrize("name", ["eth0", "enp4s0f1", "enx00e04c680001"])
def test_nics_with_a_bus_device_are_physical(kfs, name):
    assert os.path.exists(kfs.net_path(name, "device"))
    assert not is_virtual_netdev(name, kfs)


@pytest.mark.parametrize("name", ["lo", "ifb0", "v0", "v0p", "br0"])
def test_software_devices_are_virtual(kfs, name):
    assert not os.path.exists(kfs.net_path(name, "device"))
    assert is_virtual_netdev(name, kfs)


def test_a_device_without_a_bus_device_is_virtual_wherever_it_lives(kfs, tmp_path):
    """Not under devices/virtual, but no device link (a pseudo-bus driver
    that never set a parent): nothing to tune by hardware either."""
    add_netdev(tmp_path / "sys", "odd0", "platform/odd")
    assert is_virtual_netdev("odd0", kfs)


def test_a_name_not_in_sysfs_is_not_taken_for_virtual(kfs):
    assert not is_virtual_netdev("gone0", kfs)
