# SPDX-License-Identifier: GPL-2.0-or-later
"""Action irqtune.tuning.validate_variables: runs on the controller, before
anything on the host changes (see the module's documentation)."""

from ansible.plugins.action import ActionBase

from ansible_collections.irqtune.tuning.plugins.plugin_utils.profile_variables import \
    ProfileVariables


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("profiles", "variables", "source_dir"))

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self._task.args
        source_dir = args.get("source_dir")
        if not source_dir:
            return dict(result, failed=True, msg="source_dir: the irqtune source tree is needed")
        try:
            checker = ProfileVariables(source_dir)
        except (OSError, ImportError) as err:
            return dict(result, failed=True,
                        msg="source_dir: cannot use the irqtune source tree %s: %s"
                        % (source_dir, err))
        files, errors = checker.render(args.get("profiles"), args.get("variables"))
        result["changed"] = False
        if errors:
            result.update(failed=True, errors=errors,
                          msg="invalid irqtune variables, nothing was changed on this "
                          "host: " + "; ".join(errors))
        else:
            result["files"] = files
        return result
