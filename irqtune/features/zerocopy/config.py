# SPDX-License-Identifier: GPL-2.0-or-later
"""What a zero-copy receive preparation asks for, parsed from profile options."""

import ipaddress
import re
from dataclasses import dataclass

from ...kernel.errors import OptionError
from ...kernel.netlink.ethtool_ntuple import FLOW_TYPES
from ...kernel.values import U32_MAX, parse_choice, parse_int
from ...shared.options import Option, parse_options

MAX_QUEUES = 1024
ON_OFF = {"on": True, "off": False, "1": True, "0": False, "true": True, "false": False,
          "yes": True, "no": False}
RSS_CHOICES = {"remaining": "remaining", "leave": None}

_RULE = re.compile(r"^(tcp4|udp4|tcp6|udp6):(?:(\[[0-9a-fA-F:.]+\]|[0-9.]+):)?([0-9]{1,5})$")
RULE_ACCEPTED = ("a list of FLOW:PORT or FLOW:ADDRESS:PORT with FLOW one of %s, IPv6 "
                 "addresses in brackets (tcp6:[2001:db8::1]:9000)" % ", ".join(FLOW_TYPES))


_LEASE = re.compile(r"^([0-9]{1,5}):([A-Za-z0-9_.-]{1,64})/([^\s,:/]{1,15})$")
LEASE_ACCEPTED = ("a list of QUEUE:NAMESPACE/DEVICE: a reserved rx queue, a network namespace "
                  "under /run/netns (ip netns: letters, digits, . _ -), a netkit device in it "
                  "(3:pod-a/nk0)")


@dataclass(frozen=True)
class LeaseSpec:
    """A reserved rx queue leased to a device by name in a named network
    namespace: both may appear after the profile (a container started later)."""
    queue: int
    netns: str
    device: str

    @property
    def lessee(self):
        return "%s/%s" % (self.netns, self.device)

    @property
    def feature(self):
        """What the lease is called in log lines and refusal books."""
        return "rx queue %d lease to %s" % (self.queue, self.lessee)


def parse_leases(option, text):
    """'3:pod-a/nk0, 4:pod-b/eth0' -> (LeaseSpec, ...); a queue leased once."""
    leases = []
    for item in re.split(r"[\s,]+", str(text).strip()):
        if not item:
            continue
        match = _LEASE.match(item)
        if not match or match.group(2) in (".", ".."):
            raise OptionError(option, text, LEASE_ACCEPTED)
        spec = LeaseSpec(int(match.group(1)), match.group(2), match.group(3))
        if spec.queue > 65535 or any(l.queue == spec.queue for l in leases):
            raise OptionError(option, text, LEASE_ACCEPTED + "; each queue 0-65535 once")
        leases.append(spec)
    return tuple(leases)


@dataclass(frozen=True)
class RuleSpec:
    """A configured flow rule before a reserved queue is assigned to it."""
    flow: str
    dst_port: int
    dst_ip: str = None


def parse_rules(option, text):
    """'tcp4:5201, tcp6:[2001:db8::1]:9000' -> (RuleSpec, ...)."""
    rules = []
    for item in re.split(r"[\s,]+", str(text).strip()):
        if not item:
            continue
        match = _RULE.match(item)
        if not match:
            raise OptionError(option, text, RULE_ACCEPTED)
        flow, addr, port = match.groups()
        port = int(port)
        if not 1 <= port <= 65535:
            raise OptionError(option, text, RULE_ACCEPTED + "; ports 1-65535")
        if addr:
            addr = addr.strip("[]")
            try:
                ip = ipaddress.ip_address(addr)
            except ValueError:
                raise OptionError(option, text, RULE_ACCEPTED) from None
            if ip.version != int(flow[-1]):
                raise OptionError(option, text, "%s with an IPv%s address" % (RULE_ACCEPTED, flow[-1]))
            addr = str(ip)
        rules.append(RuleSpec(flow, port, addr))
    return tuple(rules)


OPTIONS = (
    Option("queues", lambda o, v: parse_int(o, v, 1, MAX_QUEUES), "1-%d" % MAX_QUEUES,
           "rx queues to reserve at the end of the queue range", default="1"),
    Option("channels", lambda o, v: parse_int(o, v, 2, 65535), "2-65535 (default: the "
           "original count plus queues)", "the channel count to set"),
    Option("header_split", lambda o, v: parse_choice(o, v, ON_OFF), "on or off",
           "header-data split (tcp-data-split)", default="on"),
    Option("hds_thresh", lambda o, v: parse_int(o, v, 0, U32_MAX), "bytes, 0-%d" % U32_MAX,
           "header-data split threshold (0: split every packet)", default="0"),
    Option("ntuple", lambda o, v: parse_choice(o, v, ON_OFF), "on or off",
           "the rx-ntuple-filter feature", default="on"),
    Option("rss", lambda o, v: parse_choice(o, v, RSS_CHOICES), "remaining or leave",
           "remaining: the RSS table spreads over the queues not reserved", default="remaining"),
    Option("flow_rules", parse_rules, "FLOW:PORT or FLOW:ADDRESS:PORT, FLOW tcp4/udp4/tcp6/udp6",
           "destinations steered to the reserved queues, in turn"),
    Option("queue_leases", parse_leases, "QUEUE:NAMESPACE/DEVICE, e.g. 3:pod-a/nk0",
           "reserved rx queues leased to netkit devices in named network namespaces "
           "(Linux >= 7.1 queue-create; released by deleting that device)"),
    Option("nics", None, "TuneD device expression (empty: no device)",
           "the devices, replacing the instance's devices="),
    Option("variables_file", None, "path", "a file of zerocopy_<option>=value lines "
           "replacing the options"),
)
# The prefix of the variables_file's lines.
OVERLAY_PREFIX = "zerocopy_"
# An empty or bad value leaves these settings as the driver has them.
LEAVE_WHEN_EMPTY = ("header_split", "hds_thresh", "ntuple", "rss")


@dataclass(frozen=True)
class ZeroCopyConfig:
    """None leaves a setting alone."""

    queues: int = 1                 # None: reserve nothing; rx queues reserved at the end of the device's range
    channels: int = None            # None: the original count plus the reserved queues
    header_split: bool = True
    hds_thresh: int = 0
    ntuple: bool = True
    rss: str = "remaining"          # spread RSS over the queues not reserved
    rules: tuple = ()
    leases: tuple = ()              # LeaseSpec: reserved queues leased to netkit devices

    @classmethod
    def from_options(cls, options):
        """(config, [OptionError]); a bad value is reported and left out
        (the setting then stays as the driver has it; a bad queues
        reserves nothing, so RSS and rules stay as they are too)."""
        values, errors = parse_options(OPTIONS, options)
        bad = {err.option for err in errors}
        for name in LEAVE_WHEN_EMPTY + ("queues",):
            text = options.get(name)
            if name in bad or (text is not None and str(text).strip() == ""
                               and name != "queues"):
                values[name] = None
        if "flow_rules" in values:
            values["rules"] = values.pop("flow_rules")
        if "queue_leases" in values:
            values["leases"] = values.pop("queue_leases")
        return cls(**values), errors
