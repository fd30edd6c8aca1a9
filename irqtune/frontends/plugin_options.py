# SPDX-License-Identifier: GPL-2.0-or-later
"""The options of each irqtune TuneD plugin, by plugin name: the plugins'
option lists and hints, the man page, docs/options.md and the Ansible
role's checks are derived from these (irqtune.services.options)."""

from ..features import channels, gsim, napi, service_optin, zerocopy

PLUGINS = {
    "busy_poll_optin": service_optin.OPTIONS,
    "gsim": gsim.OPTIONS,
    "napi": napi.OPTIONS,
    "nic_housekeeping": channels.OPTIONS,
    # napi_*: the napi values of the reserved queues' NAPIs, never auto.
    "zerocopy_rx": zerocopy.OPTIONS + napi.QUEUE_VALUES,
}
# The prefix of the lines of a plugin's variables_file (irqtune.services.overlay).
OVERLAY_PREFIXES = {"gsim": gsim.OVERLAY_PREFIX, "zerocopy_rx": zerocopy.OVERLAY_PREFIX}
