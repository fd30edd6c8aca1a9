# SPDX-License-Identifier: GPL-2.0-or-later
"""/proc/interrupts (every numbered line as an IrqInfo), the queue IRQs of a
network device, and their CPU affinity in procfs.

A NIC's queue interrupts are found three ways, because no single one
covers every driver:

- napi-get's ``irq`` attribute (drivers that call netif_napi_set_irq());
- the MSI/MSI-X vectors of the device (``msi_irqs/`` of the PCI function,
  which for virtio-net is the parent of ``/sys/class/net/<dev>/device``),
  minus the vectors whose name says they are not queues (config, misc,
  async event, mailbox...);
- for devices without MSI, the ``/proc/interrupts`` actions named after
  the interface with a queue suffix (``eth0-TxRx-3``, ``eth0-rx-0``).

Every function takes a ``kfs`` (irqtune.kernel.kfs.KernelFs) so tests run on
fixture trees; nothing here writes anywhere but procfs.
"""

import errno
import logging
import os
import re
import socket
from dataclasses import dataclass

from .errors import IrqtuneError, describe_os_error
from .kfs import KFS
from .netlink import netdev
from .values import format_index_list, parse_index_list

log = logging.getLogger(__name__)

# A queue vector: a direction or queue word followed by a queue number.
_QUEUE_NAME = re.compile(r"(?:^|[^a-z])(?:txrx|tx|rx|input|output|comp|queue|que|q|fp|ch|"
                         r"combined|napi)[-_.]?\d+", re.IGNORECASE)
# Vectors every driver has besides its queues.
_NOT_QUEUE = re.compile(r"config|misc|async|ctrl|cmd|admin|mbx|mailbox|aeq|lsc|err|"
                        r"other|fw|event", re.IGNORECASE)


@dataclass(frozen=True)
class QueueIrq:
    irq: int
    name: str          # action name(s) from /proc/interrupts ("" when unknown)
    source: str        # "napi", "msi" or "name": how it was found


@dataclass(frozen=True)
class IrqInfo:
    irq: int
    chip: str = ""
    kind: str = ""      # trigger column, e.g. "1-edge", "Edge", "fasteoi"
    name: str = ""      # action name(s), the last column(s)
    count: int = 0      # sum over CPUs

    @property
    def eligible(self):
        """What GSIM can moderate: MSI/MSI-X, edge or fasteoi (not level)."""
        kind = self.kind.lower()
        return ("MSI" in self.chip.upper() and ("edge" in kind or "fasteoi" in kind)
                and "level" not in kind)


_KIND = re.compile(r"(?i)^(\d+-)?(edge|level|fasteoi)$|(-edge|-level|-fasteoi)$")


def parse_interrupts(text):
    """{irq: IrqInfo} of the numbered lines of /proc/interrupts."""
    lines = text.splitlines()
    if not lines:
        return {}
    ncpu = len(lines[0].split())
    result = {}
    for line in lines[1:]:
        head, sep, rest = line.partition(":")
        if not sep or not head.strip().isdigit():
            continue
        irq = int(head)
        tokens = rest.split()
        counts = []
        while tokens and len(counts) < ncpu and tokens[0].isdigit():
            counts.append(int(tokens.pop(0)))
        chip = tokens.pop(0) if tokens else ""
        kind = ""
        # The hwirq and trigger come as one token ("1-edge") or two ("27 Edge").
        for i, tok in enumerate(tokens[:3]):
            if _KIND.search(tok):
                kind = tok
                tokens = tokens[i + 1:]
                break
        result[irq] = IrqInfo(irq, chip, kind, " ".join(tokens), sum(counts))
    return result


def read_interrupts(kfs=KFS):
    return parse_interrupts(kfs.read_text(kfs.proc_path("interrupts")))


def interrupt_names(kfs=KFS):
    """{irq number: action name(s)} of the numbered lines of /proc/interrupts."""
    try:
        return {irq: info.name for irq, info in read_interrupts(kfs).items()}
    except OSError as err:
        log.debug("cannot read /proc/interrupts: %s", describe_os_error(err, with_path=False))
        return {}


def msi_irqs(ifname, kfs=KFS):
    """MSI/MSI-X IRQ numbers of the device behind ifname (empty when none).

    virtio-net's netdev parent is the virtio device; its PCI function, one
    level up, holds msi_irqs/.  A few levels are searched, never above the
    first PCI function found.
    """
    dev = kfs.net_path(ifname, "device")
    if not os.path.exists(dev):
        return set()
    dev = os.path.realpath(dev)
    devices_root = os.path.realpath(kfs.sys_path("devices"))
    for _ in range(3):
        msi = os.path.join(dev, "msi_irqs")
        if os.path.isdir(msi):
            return {int(n) for n in kfs.listdir(msi) if n.isdigit()}
        parent = os.path.dirname(dev)
        if not parent.startswith(devices_root + os.sep):
            break
        dev = parent
    return set()


def napi_irqs(ifname):
    """IRQs napi-get reports for ifname's NAPIs (empty when unknown)."""
    try:
        ifindex = socket.if_nametoindex(ifname)
        with netdev.NapiFamily() as nl:
            return {n["irq"] for n in nl.napis(ifindex) if n.get("irq") is not None}
    except (OSError, IrqtuneError) as err:
        log.debug("%s: no NAPI IRQs from netlink: %s", ifname, describe_os_error(err))
        return set()


def is_queue_name(name):
    return bool(name) and not _NOT_QUEUE.search(name) and bool(_QUEUE_NAME.search(name))


def nic_queue_irqs(ifname, kfs=KFS, napi=None):
    """[QueueIrq] of ifname, sorted by IRQ number.

    napi: IRQ numbers from napi-get; None asks the kernel (the caller's
    network namespace), an empty collection skips netlink (fixtures).
    """
    names = interrupt_names(kfs)
    found = {irq: QueueIrq(irq, names.get(irq, ""), "napi")
             for irq in sorted(napi_irqs(ifname) if napi is None else napi)}
    msi = msi_irqs(ifname, kfs)
    for irq in sorted(msi):
        if irq not in found and is_queue_name(names.get(irq, "")):
            found[irq] = QueueIrq(irq, names[irq], "msi")
    if not msi:
        prefix = ifname + "-"
        for irq, name in names.items():
            if irq in found:
                continue
            actions = [a.strip() for a in name.split(",")]
            if any(a.startswith(prefix) and is_queue_name(a[len(ifname):]) for a in actions):
                found[irq] = QueueIrq(irq, name, "name")
    return [found[k] for k in sorted(found)]


def queue_irqs(ifname, kfs=KFS, napi=None):
    """Sorted IRQ numbers of ifname's queue interrupts (see nic_queue_irqs)."""
    return [q.irq for q in nic_queue_irqs(ifname, kfs, napi)]


# -- affinity -------------------------------------------------------------

def read_affinity(irq, kfs=KFS):
    """CPUs in /proc/irq/N/smp_affinity_list, as a sorted list."""
    return parse_index_list("smp_affinity_list",
                            kfs.read_text(kfs.irq_path(irq, "smp_affinity_list")))


def read_effective_affinity(irq, kfs=KFS):
    """CPUs in effective_affinity_list, or None when the file is absent."""
    try:
        text = kfs.read_text(kfs.irq_path(irq, "effective_affinity_list"))
    except FileNotFoundError:
        return None
    return parse_index_list("effective_affinity_list", text) if text else []


# What write_irq_affinity() returns for an IRQ whose affinity user space may
# not set (managed, per-CPU, or a chip without set_affinity): EPERM since
# Linux 6.12 (commit eb29369fa543, "genirq/proc: Change the return value for
# set affinity permission error"), EIO before.  Opening the file as non-root
# fails earlier, with EACCES.
KERNEL_OWNED_AFFINITY = (errno.EPERM, errno.EIO)


def write_affinity(irq, cpus, kfs=KFS):
    """Write smp_affinity_list; raises OSError (KERNEL_OWNED_AFFINITY,
    EINVAL...)."""
    kfs.write_text(kfs.irq_path(irq, "smp_affinity_list"), format_index_list(cpus))


def affinity_error_reason(err):
    """Why an affinity write (an OSError) failed, in words for the log and verify."""
    return describe_os_error(err, {
        **dict.fromkeys(KERNEL_OWNED_AFFINITY, "managed IRQ: the kernel owns its affinity (%s)"),
        errno.EINVAL: "the CPU list is refused (%s: offline CPUs, or none usable)",
        errno.EACCES: "not permitted (%s)",
        errno.ENOSPC: "no free vectors on the target CPUs (%s)",
        errno.ENOENT: "the IRQ is gone (%s)"})
