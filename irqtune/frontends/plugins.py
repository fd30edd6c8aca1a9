# SPDX-License-Identifier: GPL-2.0-or-later
"""The TuneD plugins by name, each its options and build (Feature): the one
place features are composed (zerocopy_rx's reserved queues take the napi
values).  The plugins' option lists and hints, the man page,
docs/options.md and the Ansible role's checks derive from the options."""

from functools import partial

from ..features import channels, gsim, napi, service_optin, zerocopy
from ..shared.options import Feature

PLUGINS = {
    "busy_poll_optin": Feature(service_optin.OPTIONS, service_optin.build,
                               without_tuner="no service is opted in"),
    "gsim": Feature(gsim.OPTIONS, gsim.build, gsim.OVERLAY_PREFIX),
    "napi": Feature(napi.OPTIONS, napi.build),
    "nic_housekeeping": Feature(channels.OPTIONS, channels.build),
    # napi_*: the napi values of the reserved queues' NAPIs, never auto.
    "zerocopy_rx": Feature(zerocopy.OPTIONS + napi.QUEUE_VALUES, partial(
        zerocopy.build, napi=Feature(napi.QUEUE_VALUES, napi.build_for_queues)),
        zerocopy.OVERLAY_PREFIX),
}
