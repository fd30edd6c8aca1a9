#!/usr/bin/python
# SPDX-License-Identifier: GPL-2.0-or-later
"""Module irqtune.tuning.variables_file (documentation below)."""

import os
import tempfile

DOCUMENTATION = r"""
module: variables_file
short_description: Write a TuneD profile variables file and give the original back
description:
  - Writes an irqtune profile's variables file. The file that was there
    before the first write (for example the one the package ships) is kept
    in O(originals_dir) and put back with O(state=absent); a file that was
    not there is removed then.
  - A file whose first line is not O(marker) is someone else's, and is
    saved as the original before it is replaced.
version_added: "0.1.0"
author: irqtune developers
options:
  path: {description: The variables file., type: path, required: true}
  content: {description: Content for O(state=present)., type: str}
  state:
    description: V(present) writes O(content); V(absent) restores the original.
    type: str
    choices: [present, absent]
    default: present
  marker:
    description: First line of every file this module writes.
    type: str
    default: "# Written by Ansible (role irqtune.tuning.irqtune)"
  originals_dir:
    description: Where the originals are kept.
    type: path
    default: /var/lib/irqtune/ansible/originals
attributes:
  check_mode: {support: full}
  diff_mode: {support: full}
"""

EXAMPLES = r"""
- name: Write the latency-suspend variables
  irqtune.tuning.variables_file:
    path: /etc/tuned/latency-suspend-variables.conf
    content: "# Written by Ansible (role irqtune.tuning.irqtune)\nsuspend_nics=eth1\n"
"""

RETURN = r"""
original:
  description: Where the original is kept (present), or was restored from (absent).
  returned: when there is one
  type: str
"""


def _read(path):
    try:
        with open(path, encoding="utf-8") as stream:
            return stream.read()
    except FileNotFoundError:
        return None


def _write(path, content):
    """Atomically, 0644: TuneD may read the file at any moment."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".irqtune-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            stream.write(content)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def plan(path, content, state, marker, originals_dir):
    """What to do: {"changed", "before", "after", "original", "actions"}.

    actions: ("save", src, dst) | ("write", path, content) | ("remove", path).
    Nothing is touched here, so check mode is the same plan unexecuted.
    """
    current = _read(path)
    original = os.path.join(originals_dir, os.path.basename(path))
    saved = _read(original)
    actions = []
    if state == "present":
        after = content
        if current is not None and not current.startswith(marker) and saved is None:
            actions.append(("save", original, current))
        if current != content:
            actions.append(("write", path, content))
        keeps = original if saved is not None or actions and actions[0][0] == "save" else None
    else:
        after = current
        keeps = None
        if saved is not None:
            after = saved
            keeps = original
            if current != saved:
                actions.append(("write", path, saved))
            actions.append(("remove", original))
        elif current is not None and current.startswith(marker):
            after = None
            actions.append(("remove", path))
    changed = current != after
    return {"changed": changed, "before": current, "after": after,
            "original": keeps, "actions": actions}


def execute(actions):
    for action in actions:
        if action[0] in ("save", "write"):
            _write(action[1], action[2])
        else:
            os.unlink(action[1])


def main():
    from ansible.module_utils.basic import AnsibleModule

    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            content=dict(type="str"),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            marker=dict(type="str", default="# Written by Ansible (role irqtune.tuning.irqtune)"),
            originals_dir=dict(type="path", default="/var/lib/irqtune/ansible/originals"),
        ),
        required_if=[("state", "present", ["content"])],
        supports_check_mode=True,
    )
    p = module.params
    if p["state"] == "present" and not p["content"].startswith(p["marker"]):
        module.fail_json(msg="content must start with the marker %r, so that a later "
                         "run knows the file is its own" % p["marker"])
    try:
        result = plan(p["path"], p["content"], p["state"], p["marker"], p["originals_dir"])
        if not module.check_mode:
            execute(result["actions"])
    except OSError as err:
        module.fail_json(msg="%s: %s" % (p["path"], err))
    out = {"changed": result["changed"], "path": p["path"]}
    if result["original"]:
        out["original"] = result["original"]
    if module._diff:
        out["diff"] = {"before": result["before"] or "", "after": result["after"] or "",
                       "before_header": p["path"], "after_header": p["path"]}
    module.exit_json(**out)


if __name__ == "__main__":
    main()
