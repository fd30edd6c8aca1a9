# SPDX-License-Identifier: GPL-2.0-or-later
DOCUMENTATION = r"""
name: shipped_profiles
author: irqtune developers
short_description: the irqtune profiles that have a variables file
description:
  - Names of the profiles under C(profiles/) of an irqtune source tree that
    ship a C(<profile>-variables.conf), in sorted order.  The role manages
    exactly those files in C(/etc/tuned) and puts them back on rollback.
options:
  _terms:
    description: The irqtune source tree on the controller.
    required: true
"""

RETURN = r"""
_raw:
  description: Profile names.
  type: list
  elements: str
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.irqtune.tuning.plugins.plugin_utils.profile_variables import \
    shipped_variables


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        names = []
        for source_dir in terms:
            try:
                names.extend(shipped_variables(source_dir))
            except OSError as err:
                raise AnsibleLookupError("irqtune source tree %s: %s" % (source_dir, err))
        return sorted(names)
