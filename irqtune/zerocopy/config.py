# SPDX-License-Identifier: GPL-2.0-or-later
"""What a zero-copy receive preparation asks for, parsed from profile options."""

import ipaddress
import re
from dataclasses import dataclass

from ..errors import OptionError
from ..netlink.ethtool_ntuple import FLOW_TYPES, FlowRule
from ..values import U32_MAX, parse_choice, parse_int

MAX_QUEUES = 1024
ON_OFF = {"on": True, "off": False, "1": True, "0": False, "true": True, "false": False,
          "yes": True, "no": False}
RSS_CHOICES = {"remaining": "remaining", "leave": None}

_RULE = re.compile(r"^(tcp4|udp4|tcp6|udp6):(?:(\[[0-9a-fA-F:.]+\]|[0-9.]+):)?([0-9]{1,5})$")
RULE_ACCEPTED = ("a list of FLOW:PORT or FLOW:ADDRESS:PORT with FLOW one of %s, IPv6 "
                 "addresses in brackets (tcp6:[2001:db8::1]:9000)" % ", ".join(FLOW_TYPES))


@dataclass(frozen=True)
class RuleSpec:
    """A configured flow rule before a reserved queue is assigned to it."""
    flow: str
    dst_port: int
    dst_ip: str = None

    def on_queue(self, queue):
        return FlowRule(self.flow, self.dst_port, queue, self.dst_ip)


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

    PARSERS = {
        "queues": lambda o, v: parse_int(o, v, 1, MAX_QUEUES),
        "channels": lambda o, v: parse_int(o, v, 2, 65535),
        "header_split": lambda o, v: parse_choice(o, v, ON_OFF),
        "hds_thresh": lambda o, v: parse_int(o, v, 0, U32_MAX),
        "ntuple": lambda o, v: parse_choice(o, v, ON_OFF),
        "rss": lambda o, v: parse_choice(o, v, RSS_CHOICES),
        "flow_rules": parse_rules,
    }
    # An empty option means "leave alone" for these; queues keeps its default.
    LEAVE_WHEN_EMPTY = ("header_split", "hds_thresh", "ntuple", "rss")

    @classmethod
    def from_options(cls, options):
        """(config, [OptionError]); a bad value is reported and left out
        (the setting then stays as the driver has it)."""
        values, errors = {}, []
        for name, parse in cls.PARSERS.items():
            text = options.get(name)
            field = "rules" if name == "flow_rules" else name
            if text is None or str(text).strip() == "":
                if text is not None and name in cls.LEAVE_WHEN_EMPTY:
                    values[field] = None
                continue
            try:
                values[field] = parse(name, text)
            except OptionError as err:
                errors.append(err)
                if name in cls.LEAVE_WHEN_EMPTY or name == "queues":
                    # no reservation without a valid count: RSS and rules
                    # then stay as they are, header split etc. still apply
                    values[field] = None
        return cls(**values), errors
