# SPDX-License-Identifier: GPL-2.0-or-later
"""A test run that is interrupted - SIGTERM, SIGINT or SIGKILL in the middle
of a test that rewrote the host's TuneD files - leaves nothing that the next
run takes for the host's own state (support/hostguard.py).

A child pytest runs a victim test against copies of /etc/tuned and
/run/irqtune (the guard's paths come from the environment; the daemon is
left alone), is interrupted while the victim sleeps with the files
rewritten, and the trees are compared with their state before it started.
"""

import filecmp
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from support.waiting import wait_for

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

VICTIM = '''
import os, time

def test_rewrites_the_host_files(host_tuned):
    etc = os.environ["IRQTUNE_TEST_TUNED_ETC"]
    with open(os.path.join(etc, "latency-suspend-variables.conf"), "w") as f:
        f.write("suspend_nics=va*\\n")
    os.makedirs(os.path.join(etc, "latency-suspend-test"))
    open(os.path.join(etc, "latency-suspend-test", "tuned.conf"), "w").close()
    os.unlink(os.path.join(etc, "active_profile"))
    with open(os.path.join(os.environ["IRQTUNE_TEST_LEDGER_DIR"], "napi.json"), "w") as f:
        f.write("{}")
    open(os.environ["VICTIM_READY"], "w").close()
    time.sleep(120)

def test_nothing():
    pass
'''


@pytest.fixture
def host(tmp_path):
    etc, ledgers = tmp_path / "etc-tuned", tmp_path / "run-irqtune"
    etc.mkdir(mode=0o755)
    (etc / "active_profile").write_text("latency-suspend\n")
    (etc / "profile_mode").write_text("manual\n")
    (etc / "latency-suspend-variables.conf").write_text("suspend_nics=eth0\n")
    os.chmod(etc / "latency-suspend-variables.conf", 0o640)
    ledgers.mkdir(mode=0o700)
    (ledgers / "napi.json").write_text('{"eth0": {"257": {"defer-hard-irqs": 0}}}')
    before = tmp_path / "before"
    shutil.copytree(etc, before / "etc")
    shutil.copytree(ledgers, before / "ledgers")
    (tmp_path / "victim").mkdir()
    (tmp_path / "victim" / "test_victim.py").write_text(VICTIM)
    env = dict(os.environ,
               IRQTUNE_TEST_SNAPSHOT=str(tmp_path / "snapshot"),
               IRQTUNE_TEST_TUNED_ETC=str(etc),
               IRQTUNE_TEST_LEDGER_DIR=str(ledgers),
               IRQTUNE_TEST_MANAGE_DAEMON="0",
               VICTIM_READY=str(tmp_path / "ready"),
               PYTHONPATH=TESTS)
    return tmp_path, env


def child(tmp_path, env, test):
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "support.pytest_hostguard",
         "--rootdir", str(tmp_path / "victim"), str(tmp_path / "victim" / "test_victim.py") + "::" + test],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def same_tree(a, b):
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.diff_files or cmp.funny_files:
        return False
    for name in os.listdir(a):
        if os.stat(os.path.join(a, name)).st_mode != os.stat(os.path.join(b, name)).st_mode:
            return False
    return all(same_tree(os.path.join(a, d), os.path.join(b, d)) for d in cmp.common_dirs)


def interrupted(tmp_path, env, signum):
    proc = child(tmp_path, env, "test_rewrites_the_host_files")
    wait_for(lambda: os.path.exists(env["VICTIM_READY"]) or proc.poll() is not None,
             timeout=60, what="the victim test to rewrite the files")
    assert proc.poll() is None, proc.communicate()[0]
    assert not same_tree(env["IRQTUNE_TEST_TUNED_ETC"], tmp_path / "before" / "etc")
    proc.send_signal(signum)
    out = proc.communicate(timeout=180)[0]
    return proc.returncode, out


def assert_host_as_before(tmp_path, env):
    assert same_tree(env["IRQTUNE_TEST_TUNED_ETC"], tmp_path / "before" / "etc")
    assert same_tree(env["IRQTUNE_TEST_LEDGER_DIR"], tmp_path / "before" / "ledgers")
    assert not os.path.exists(env["IRQTUNE_TEST_SNAPSHOT"])


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_terminated_run_puts_the_host_back_itself(host, signum):
    tmp_path, env = host
    rc, out = interrupted(tmp_path, env, signum)
    assert rc != 0, out
    assert_host_as_before(tmp_path, env)


def test_killed_run_is_put_right_by_the_next_run(host):
    tmp_path, env = host
    rc, out = interrupted(tmp_path, env, signal.SIGKILL)
    assert rc == -signal.SIGKILL
    assert os.path.exists(env["IRQTUNE_TEST_SNAPSHOT"])    # nothing ran after the kill
    proc = child(tmp_path, env, "test_nothing")
    out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 0, out
    assert "the last run was interrupted" in out, out
    assert_host_as_before(tmp_path, env)


def test_a_save_killed_before_it_completed_is_not_taken_for_a_snapshot(host):
    """host.json is written last: a partial snapshot must not overwrite the
    host's files with whatever half of it exists."""
    tmp_path, env = host
    os.makedirs(env["IRQTUNE_TEST_SNAPSHOT"])
    with open(os.path.join(env["IRQTUNE_TEST_SNAPSHOT"], "etc-tuned.tar"), "w"):
        pass
    proc = child(tmp_path, env, "test_nothing")
    out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 0, out
    assert "interrupted" not in out
    assert_host_as_before(tmp_path, env)


def test_a_live_runs_snapshot_is_left_alone_by_another_run(host):
    """A unit suite (or another worktree's run) started while a run owns
    the snapshot must not take it for a killed run's and put the host back
    under the live run's feet."""
    tmp_path, env = host
    victim = child(tmp_path, env, "test_rewrites_the_host_files")
    try:
        wait_for(lambda: os.path.exists(env["VICTIM_READY"]) or victim.poll() is not None,
                 timeout=60, what="the victim test to rewrite the files")
        other = child(tmp_path, env, "test_nothing")
        out = other.communicate(timeout=60)[0]
        assert other.returncode == 0, out
        assert "interrupted" not in out, out
        assert os.path.exists(env["IRQTUNE_TEST_SNAPSHOT"])
        assert not same_tree(env["IRQTUNE_TEST_TUNED_ETC"], tmp_path / "before" / "etc")
    finally:
        victim.send_signal(signal.SIGTERM)
        victim.communicate(timeout=60)
    assert_host_as_before(tmp_path, env)
