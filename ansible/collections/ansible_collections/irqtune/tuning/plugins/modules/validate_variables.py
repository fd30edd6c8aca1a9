# SPDX-License-Identifier: GPL-2.0-or-later
# The work is done by the action plugin of the same name, on the controller;
# this file holds its documentation.

DOCUMENTATION = r"""
module: validate_variables
short_description: Check irqtune profile variables and render their files
description:
  - Runs on the controller. Checks every variable given for the irqtune
    profiles of a stack with the irqtune library of O(source_dir) (the
    ranges and spellings the TuneD plugins accept) and renders the
    C(/etc/tuned/<profile>-variables.conf) file of each.
  - Fails the host with every bad value, each named with its profile,
    variable, value and accepted range; nothing is rendered then.
  - Variables not given keep the profile's defaults; active defaults of a
    shipped variables file are copied into the rendered file.
version_added: "0.1.0"
author: irqtune developers
options:
  profiles:
    description: Profile stack in the order tuned-adm takes it.
    type: list
    elements: str
    required: true
  variables:
    description: "Variables per profile: C({profile: {variable: value}})."
    type: dict
    default: {}
  source_dir:
    description: irqtune source tree (C(irqtune/) library and C(profiles/)).
    type: path
    required: true
"""

EXAMPLES = r"""
- name: Check the variables of latency-suspend with the gsim overlay
  irqtune.tuning.validate_variables:
    profiles: [latency-suspend, gsim]
    variables:
      latency-suspend: {suspend_nics: [eth1], defer_hard_irqs: 100}
      gsim: {gsim_delay_us: 100}
    source_dir: /srv/irqtune
  register: irqtune_files
"""

RETURN = r"""
files:
  description: The variables file of each irqtune profile of the stack.
  returned: success
  type: list
  elements: dict
  contains:
    profile: {description: Profile name., type: str}
    path: {description: Path of its variables file on the host., type: str}
    content: {description: File content., type: str}
errors:
  description: One line per bad value.
  returned: failure
  type: list
  elements: str
"""
