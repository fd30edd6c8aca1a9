# SPDX-License-Identifier: GPL-2.0-or-later
"""Netlink clients: generic netlink families (netdev, ethtool) and link events."""
