# SPDX-License-Identifier: GPL-2.0-or-later
"""variables_file: the file that was there first comes back on rollback."""

from ansible_collections.irqtune.tuning.plugins.modules import variables_file as vf

MARKER = "# Written by Ansible (role irqtune.tuning.irqtune)"
OURS = MARKER + "\nsuspend_nics=eth1\n"
SHIPPED = "# Variables of the latency-suspend profile\n#suspend_nics=*\n"


def run(tmp_path, state, content=None, check=False):
    plan = vf.plan(str(tmp_path / "etc" / "lsv.conf"), content, state, MARKER,
                   str(tmp_path / "orig"))
    if not check:
        vf.execute(plan["actions"])
    return plan


def tree(tmp_path):
    return {str(p.relative_to(tmp_path)): p.read_text()
            for p in sorted(tmp_path.rglob("*")) if p.is_file()}


def test_shipped_file_saved_then_restored(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "lsv.conf").write_text(SHIPPED)
    first = run(tmp_path, "present", OURS)
    assert first["changed"] and first["before"] == SHIPPED and first["after"] == OURS
    assert tree(tmp_path) == {"etc/lsv.conf": OURS, "orig/lsv.conf": SHIPPED}
    assert (tmp_path / "etc" / "lsv.conf").stat().st_mode & 0o777 == 0o644

    again = run(tmp_path, "present", OURS)
    assert not again["changed"] and again["actions"] == []

    changed = run(tmp_path, "present", OURS + "defer_hard_irqs=50\n")
    assert changed["changed"]
    assert tree(tmp_path)["orig/lsv.conf"] == SHIPPED     # the first original stays

    back = run(tmp_path, "absent")
    assert back["changed"] and back["after"] == SHIPPED
    assert tree(tmp_path) == {"etc/lsv.conf": SHIPPED}
    assert not run(tmp_path, "absent")["changed"]


def test_file_that_was_not_there_is_removed(tmp_path):
    run(tmp_path, "present", OURS)
    assert tree(tmp_path) == {"etc/lsv.conf": OURS}
    back = run(tmp_path, "absent")
    assert back["changed"] and back["after"] is None
    assert tree(tmp_path) == {}


def test_foreign_file_without_original_is_left_alone(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "lsv.conf").write_text(SHIPPED)
    back = run(tmp_path, "absent")
    assert not back["changed"] and tree(tmp_path) == {"etc/lsv.conf": SHIPPED}


def test_check_mode_plans_without_touching(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "lsv.conf").write_text(SHIPPED)
    plan = run(tmp_path, "present", OURS, check=True)
    assert plan["changed"] and plan["after"] == OURS
    assert tree(tmp_path) == {"etc/lsv.conf": SHIPPED}
