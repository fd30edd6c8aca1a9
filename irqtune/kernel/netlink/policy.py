# SPDX-License-Identifier: GPL-2.0-or-later
"""Attribute policies of a generic netlink operation (CTRL_CMD_GETPOLICY).

Asking the kernel which attributes an operation accepts, and their ranges,
detects features without touching any device.  The policy nests are keyed
by index, which pyroute2 0.7's nla_map cannot declare, so they are walked
here from bytes.
"""

import struct

from .genl import GenlFamily, ctrl_msg, parse_nlas

CTRL_CMD_GETPOLICY = 10
CTRL_ATTR_POLICY_DO = 1

NL_POLICY_TYPE_ATTR_TYPE = 1
NL_POLICY_TYPE_ATTR_MAX_VALUE_U = 5


def _u(payload):
    return int.from_bytes(payload, "little" if struct.pack("=H", 1)[0] else "big")


class ControlFamily(GenlFamily):
    family = "nlctrl"
    message = ctrl_msg

    def op_policy(self, family, op):
        """{attr number: {"type": nl policy type, "max": max or None}} of an op's do policy.

        None when the family has no such operation.
        """
        replies = self.dump("reading the policy of %s op %d" % (family, op),
                            CTRL_CMD_GETPOLICY, family_name=family, op=op)
        do_index = None
        policies = {}
        for reply in replies:
            if "op-policy" in reply:
                for _op, nest in parse_nlas(reply["op-policy"]):
                    for kind, idx in parse_nlas(nest):
                        if kind == CTRL_ATTR_POLICY_DO:
                            do_index = _u(idx)
            if "policy" in reply:
                for pidx, attrs in parse_nlas(reply["policy"]):
                    for attr, props in parse_nlas(attrs):
                        fields = dict(parse_nlas(props))
                        policies.setdefault(pidx, {})[attr] = {
                            "type": _u(fields.get(NL_POLICY_TYPE_ATTR_TYPE, b"\0\0\0\0")),
                            "max": (_u(fields[NL_POLICY_TYPE_ATTR_MAX_VALUE_U])
                                    if NL_POLICY_TYPE_ATTR_MAX_VALUE_U in fields else None),
                        }
        if do_index is None:
            return None
        return policies.get(do_index, {})
