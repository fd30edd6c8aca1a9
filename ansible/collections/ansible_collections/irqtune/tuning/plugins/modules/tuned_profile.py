#!/usr/bin/python
# SPDX-License-Identifier: GPL-2.0-or-later
"""Module irqtune.tuning.tuned_profile (documentation below)."""

import hashlib
import json
import os
import re
import tempfile

# How a verify is judged is the irqtune library's (the role installs it on
# the host; `irqtune verify` judges the same way): imported on the managed
# host by the Python that runs this module, needed only when a verify runs.
try:
    from irqtune.frontends import verify_report
except ImportError as err:
    verify_report = None
    VERIFY_REPORT_IMPORT_ERROR = str(err)

DOCUMENTATION = r"""
module: tuned_profile
short_description: Activate a TuneD profile stack, verify it, and roll it back
description:
  - V(present) activates O(profiles) with C(tuned-adm profile) when another
    profile is active or the O(variables) differ from those this module
    last applied, then runs C(tuned-adm verify). A failed verify fails
    the host with the C(verify failed) lines TuneD logged (each NAPI, IRQ
    or value that differs).
  - A verify whose only failures are kernel command-line arguments that
    TuneD installed for the next boot (C(TUNED_BOOT_CMDLINE) in
    O(bootcmdline_file), e.g. C(skew_tick=1) of a [bootloader] section the
    stack inherits) does not fail the host; the profile is in effect, the
    arguments are returned in RV(reboot_pending_args) and named in a
    warning until the host reboots. The judgement is the irqtune
    library's (C(irqtune.frontends.verify_report), the one C(irqtune verify)
    makes), so verify needs irqtune installed for the Python that runs
    this module (the role installs it).
  - The first activation records the profile and selection mode that were
    active before in O(state_file). V(absent) goes back to them (or
    C(tuned-adm off) when none was active) and removes the record.
version_added: "0.1.0"
author: irqtune developers
options:
  profiles:
    description: Profile stack, in tuned-adm's order.
    type: list
    elements: str
  state:
    description: V(present) activates and verifies, V(absent) rolls back.
    type: str
    choices: [present, absent]
    default: present
  variables:
    description:
      - The variables files the stack is applied with, as written before this
        task (C([{path, content}])); a change in them applies the stack again.
        Compared by content, so check mode sees a change not yet written.
    type: list
    elements: dict
    default: []
  verify:
    description: Run C(tuned-adm verify) after V(present).
    type: bool
    default: true
  managed_profiles:
    description:
      - With V(absent) and no record, a stack containing one of these is
        switched off (it was activated by hand or by an older run).
    type: list
    elements: str
    default: []
  state_file:
    description: Record of the previous profile and of what was applied.
    type: path
    default: /var/lib/irqtune/ansible/tuned-profile.json
  log_file:
    description: TuneD's log, read for the details of a failed verify.
    type: path
    default: /var/log/tuned/tuned.log
  bootcmdline_file:
    description: Where TuneD's bootloader plugin writes the kernel arguments of the next boot.
    type: path
    default: /etc/tuned/bootcmdline
attributes:
  check_mode: {support: full}
  diff_mode: {support: full}
"""

EXAMPLES = r"""
- name: Stack GSIM on latency-suspend and verify
  irqtune.tuning.tuned_profile:
    profiles: [latency-suspend, gsim]
    variables: "{{ rendered.files }}"
"""

RETURN = r"""
active:
  description: The active profile stack afterwards ("" when none).
  returned: always
  type: str
previous:
  description: The recorded profile to roll back to ("" means off).
  returned: when recorded
  type: str
differences:
  description:
    - The C(verify failed) lines of TuneD's log (and other errors it logged
      meanwhile; what tuned-adm said when it logged none).
  returned: when verify failed
  type: list
  elements: str
reboot_pending_args:
  description:
    - Kernel command-line arguments of the stack that only the next boot
      applies (installed by TuneD, missing from /proc/cmdline).
  returned: when verify failed for such arguments (alone, or beside a failure)
  type: list
  elements: str
  sample: [skew_tick=1]
"""

ACTIVE = re.compile(r"^Current active profile:\s*(.*)$", re.M)
MODE = re.compile(r"^Profile selection mode:\s*(\S+)", re.M)


class TunedError(Exception):
    pass


def digest(files):
    """sha256 over [{path, content}], in path order."""
    hasher = hashlib.sha256()
    for item in sorted(files, key=lambda f: f["path"]):
        hasher.update(("%s\0%s\0" % (item["path"], item["content"])).encode())
    return hasher.hexdigest()


class Tuned:
    """tuned-adm through run(argv) -> (rc, stdout, stderr) - never a shell."""

    def __init__(self, run, log_file, tuned_adm="tuned-adm",
                 bootcmdline_file="/etc/tuned/bootcmdline"):
        self.run = run
        self.log_file = log_file
        self.tuned_adm = tuned_adm
        self.bootcmdline_file = bootcmdline_file

    def _call(self, *argv):
        rc, out, err = self.run([self.tuned_adm] + list(argv))
        if rc != 0:
            raise TunedError("tuned-adm %s failed (%d): %s"
                             % (" ".join(argv), rc, (err or out).strip()))
        return out

    def active(self):
        """The active stack as tuned-adm prints it; "" when none."""
        rc, out, err = self.run([self.tuned_adm, "active"])
        match = ACTIVE.search(out)
        if match:
            return " ".join(match.group(1).split())
        if "No current active profile" in out:
            return ""
        raise TunedError("tuned-adm active failed (%d): %s" % (rc, (err or out).strip()))

    def mode(self):
        match = MODE.search(self._call("profile_mode"))
        return match.group(1) if match else "manual"

    def switch(self, profile, mode="manual"):
        """To a stack, "" = off; mode auto gives TuneD's recommendation back
        (which was the profile active then)."""
        if not profile:
            self._call("off")
        elif mode == "auto":
            self._call("auto_profile")
        else:
            self._call("profile", *profile.split())

    def verify(self):
        """The irqtune library's Verdict on tuned-adm verify (from the log
        lines it caused and the arguments TuneD installed for the next boot)."""
        if verify_report is None:
            raise TunedError("verify needs the irqtune library, which this Python cannot "
                             "import (%s): install irqtune (irqtune_install_method) or set "
                             "ansible_python_interpreter to the Python it is installed for"
                             % VERIFY_REPORT_IMPORT_ERROR)

        def run_verify():
            rc, out, err = self.run([self.tuned_adm, "verify"])
            said = (out + err).strip()
            return rc, said or "tuned-adm verify failed (%d)" % rc

        return verify_report.check(run_verify, self.log_file, self.bootcmdline_file)


def read_state(path):
    try:
        with open(path, encoding="utf-8") as stream:
            return json.load(stream)
    except FileNotFoundError:
        return None
    except ValueError as err:
        raise TunedError("%s is not a record this module wrote: %s" % (path, err)) from None


def write_state(path, state):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".irqtune-")
    with os.fdopen(fd, "w", encoding="utf-8") as stream:
        json.dump(state, stream, indent=1, sort_keys=True)
    os.replace(tmp, path)


def present(tuned, profiles, variables, state_file, check_mode, verify=True):
    """The result dict of state=present (raises TunedError)."""
    wanted = " ".join(profiles)
    active = tuned.active()
    state = read_state(state_file)
    files_digest = digest(variables)
    applied = state and state.get("applied") == wanted and state.get("digest") == files_digest
    result = {"changed": False, "active": active, "before": active, "after": wanted}
    if active != wanted or not applied:
        result["changed"] = True
        if state is None:
            # What to go back to; a stack that is already ours has no known
            # predecessor, and rollback then switches off.
            state = {"previous": active if active != wanted else "",
                     "previous_mode": tuned.mode() if active != wanted else "manual"}
        state.update(applied=wanted, digest=files_digest)
        if not check_mode:
            tuned.switch(wanted)
            write_state(state_file, state)
            result["active"] = tuned.active()
    if state:
        result["previous"] = state["previous"]
    if verify and not (check_mode and result["changed"]):
        verdict = tuned.verify()
        if verdict.next_boot:
            result["reboot_pending_args"] = list(verdict.next_boot)
        if not verdict.ok:
            result.update(failed=True, differences=verdict.reasons,
                          msg="tuned-adm verify failed for '%s': %s"
                          % (wanted, "; ".join(verdict.reasons)))
    return result


def pending_warning(profiles, args, bootcmdline_file):
    """The warning of a host whose stack waits for a reboot."""
    return ("'%s' is active; everything else verified. Kernel command-line arguments "
            "that take effect at the next boot (TuneD installed them in %s): %s"
            % (profiles, bootcmdline_file, " ".join(args)))


def absent(tuned, managed_profiles, state_file, check_mode):
    active = tuned.active()
    state = read_state(state_file)
    result = {"changed": False, "active": active, "before": active, "after": active}
    if state is not None:
        target, mode = state.get("previous", ""), state.get("previous_mode", "manual")
        result.update(previous=target, changed=True, after=target)
        if not check_mode:
            if active != target or mode == "auto":
                tuned.switch(target, mode)
            os.unlink(state_file)
            result["active"] = tuned.active()
    elif set(active.split()) & set(managed_profiles):
        result.update(changed=True, after="")
        if not check_mode:
            tuned.switch("")
            result["active"] = tuned.active()
    return result


def main():
    from ansible.module_utils.basic import AnsibleModule

    module = AnsibleModule(
        argument_spec=dict(
            profiles=dict(type="list", elements="str"),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            variables=dict(type="list", elements="dict", default=[]),
            verify=dict(type="bool", default=True),
            managed_profiles=dict(type="list", elements="str", default=[]),
            state_file=dict(type="path", default="/var/lib/irqtune/ansible/tuned-profile.json"),
            log_file=dict(type="path", default="/var/log/tuned/tuned.log"),
            bootcmdline_file=dict(type="path", default="/etc/tuned/bootcmdline"),
        ),
        required_if=[("state", "present", ["profiles"])],
        supports_check_mode=True,
    )
    p = module.params
    tuned_adm = module.get_bin_path("tuned-adm")
    if tuned_adm is None:
        # Nothing of TuneD's to roll back; in check mode the install that
        # would come first is not there yet.
        if p["state"] == "absent" or module.check_mode:
            module.exit_json(changed=p["state"] == "present", active="",
                             msg="tuned-adm is not installed")
        module.fail_json(msg="tuned-adm is not installed: install TuneD (irqtune_install_method)")
    tuned = Tuned(lambda argv: module.run_command(argv, environ_update={"LC_ALL": "C"}),
                  p["log_file"], tuned_adm, p["bootcmdline_file"])
    try:
        if p["state"] == "present":
            result = present(tuned, p["profiles"], p["variables"], p["state_file"],
                             module.check_mode, p["verify"])
        else:
            result = absent(tuned, p["managed_profiles"], p["state_file"], module.check_mode)
    except (TunedError, OSError) as err:
        module.fail_json(msg=str(err))
    before, after = result.pop("before"), result.pop("after")
    if module._diff:
        result["diff"] = {"before": "active profile: %s\n" % (before or "(none)"),
                          "after": "active profile: %s\n" % (after or "(none)")}
    if result.get("reboot_pending_args") and not result.get("failed"):
        module.warn(pending_warning(" ".join(p["profiles"]), result["reboot_pending_args"],
                                    p["bootcmdline_file"]))
    if result.get("failed"):
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
