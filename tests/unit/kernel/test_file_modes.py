# SPDX-License-Identifier: GPL-2.0-or-later
"""Every file and directory the library creates gets its mode on the open
object, whatever the umask (TuneD's daemon runs with umask 0), and never
by path: a path can be swapped for a symlink between create and chmod
(issue 35: `metrics --output` made a root 0600 file world-readable that
way).  Each test runs under umask 0, as the daemon does."""

import os
import stat

import pytest

from irqtune.kernel import files
from irqtune.frontends import metrics
from irqtune.features import service_optin as so
from irqtune.kernel.errors import IrqtuneError
from irqtune.shared.ledger import Ledger


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture(autouse=True)
def umask_zero():
    old = os.umask(0)
    yield
    os.umask(old)


@pytest.fixture
def victim(tmp_path):
    """A root-only file another user would like to read."""
    path = tmp_path / "secret"
    path.write_text("secret\n")
    path.chmod(0o600)
    return path


@pytest.mark.parametrize("wanted", [0o644, 0o600])
def test_replace_file_mode_is_exact_under_umask_0(tmp_path, wanted):
    path = tmp_path / "out.prom"
    files.replace_file(str(path), "x 1\n", wanted)
    assert mode(path) == wanted and path.read_text() == "x 1\n"
    assert os.listdir(tmp_path) == ["out.prom"]


def test_replace_file_never_chmods_a_path(tmp_path, monkeypatch):
    def chmod(*args, **kwargs):
        raise AssertionError("chmod by path: %r" % (args,))
    monkeypatch.setattr(os, "chmod", chmod)
    files.replace_file(str(tmp_path / "out.prom"), "x 1\n", 0o644)
    assert mode(tmp_path / "out.prom") == 0o644


def test_temporary_file_swapped_for_a_symlink_leaves_its_target_alone(
        tmp_path, victim, monkeypatch):
    """The reproduction: a user owning the output directory replaces the
    temporary file with a symlink to a root 0600 file while it is being
    written.  Nothing the writer does afterwards may reach the target."""
    out = tmp_path / "out"
    out.mkdir()
    real_fsync = os.fsync

    def fsync_then_swap(fd):
        real_fsync(fd)
        for name in os.listdir(out):
            if name.startswith(".irqtune.prom."):
                os.unlink(out / name)
                os.symlink(victim, out / name)
    monkeypatch.setattr(os, "fsync", fsync_then_swap)
    files.replace_file(str(out / "irqtune.prom"), "x 1\n", 0o644)
    assert mode(victim) == 0o600 and victim.read_text() == "secret\n"


def test_make_dirs_gives_every_created_level_the_mode(tmp_path):
    files.make_dirs(str(tmp_path / "a" / "b" / "c"), 0o700)
    for d in ("a", "a/b", "a/b/c"):
        assert mode(tmp_path / d) == 0o700, d
    (tmp_path / "kept").mkdir(mode=0o751)
    os.chmod(tmp_path / "kept", 0o751)
    files.make_dirs(str(tmp_path / "kept"), 0o700)
    assert mode(tmp_path / "kept") == 0o751         # an existing directory is left


def test_make_dirs_refuses_a_file_in_the_way(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(OSError):
        files.make_dirs(str(tmp_path / "f" / "d"), 0o700)


def test_ledger_state_is_private_under_umask_0(tmp_path):
    state = tmp_path / "run" / "irqtune"
    Ledger("napi-x", str(state)).save({"eth0": {"ifindex": 2}})
    assert mode(tmp_path / "run") == 0o700 and mode(state) == 0o700
    assert mode(state / "napi-x.json") == 0o600
    assert sorted(os.listdir(state)) == ["napi-x.json"]


def test_ledger_does_not_write_through_a_leftover_temporary_symlink(tmp_path, victim):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    os.symlink(victim, state / "napi-x.json.tmp")
    Ledger("napi-x", str(state)).save({"a": 1})
    assert victim.read_text() == "secret\n" and mode(victim) == 0o600
    assert mode(state / "napi-x.json") == 0o600


def test_dropin_and_its_directory_modes_under_umask_0(tmp_path):
    so.forget_claims()
    path = tmp_path / "etc/systemd/system/memcached.service.d" / so.DROPIN_NAME
    entry = so.dropins.write_dropin("memcached.service", str(path), so.MARKER + "\n")
    try:
        for d in ("etc", "etc/systemd", "etc/systemd/system",
                  "etc/systemd/system/memcached.service.d"):
            assert mode(tmp_path / d) == 0o755, d
        assert mode(path) == 0o644
        # a roll-back rewrites irqtune's earlier file with the same mode
        os.unlink(path)
        entry.previous = so.MARKER + "\n# earlier\n"
        so.dropins.roll_back([entry])
        assert mode(path) == 0o644 and path.read_text().endswith("# earlier\n")
    finally:
        so.forget_claims()


def test_metrics_output_into_a_missing_directory_is_one_line(tmp_path):
    path = tmp_path / "textfile_collector" / "irqtune.prom"
    with pytest.raises(IrqtuneError) as err:
        metrics.write_atomically(str(path), "x 1\n")
    text = str(err.value)
    assert "\n" not in text and str(path) in text and "does not exist" in text


def test_metrics_command_reports_a_missing_directory_and_fails(tmp_path, monkeypatch, capsys):
    from irqtune.cli import main
    monkeypatch.setattr(metrics, "collect", lambda devices: [])
    path = tmp_path / "missing" / "irqtune.prom"
    assert main(["metrics", "--output", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and str(path) in err
    assert "Traceback" not in err


def test_metrics_output_file_is_world_readable_and_nothing_else(tmp_path):
    path = tmp_path / "irqtune.prom"
    metrics.write_atomically(str(path), "x 1\n")
    assert mode(path) == 0o644
