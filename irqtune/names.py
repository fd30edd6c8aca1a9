# SPDX-License-Identifier: GPL-2.0-or-later
"""The spellings of a value's name, converted here only.

Profiles and log lines use option names (defer_hard_irqs); the netdev
family's attributes and the gsim procfs files use attribute names
(defer-hard-irqs); pyroute2 names netlink attributes with a prefix
(NETDEV_A_NAPI_DEFER_HARD_IRQS).
"""


def attr_name(option):
    """defer_hard_irqs -> defer-hard-irqs."""
    return option.replace("_", "-")


def option_name(attr):
    """defer-hard-irqs -> defer_hard_irqs."""
    return attr.replace("-", "_")


def nla_name(prefix, attr):
    """("NETDEV_A_NAPI_", "defer-hard-irqs") -> NETDEV_A_NAPI_DEFER_HARD_IRQS."""
    return prefix + option_name(attr).upper()


def attr_of_nla(prefix, name):
    """The attribute name of a prefixed netlink attribute name, or None
    when the name does not carry the prefix."""
    if not name.startswith(prefix):
        return None
    return attr_name(name[len(prefix):].lower())
