# SPDX-License-Identifier: GPL-2.0-or-later
"""Root replaces regular files only (issue 47 items 2 and 3): the one
writer of the library (irqtune.kernel.files.replace_file, behind `irqtune
metrics --output`) and the one of the bench (irqtune_bench.files.write_file:
the bench does not import the library) make a temporary file with O_EXCL
in the target's directory and rename it over the target - and refuse, in
one line and leaving it as it is, a symbolic link, a directory, a device,
a FIFO or a socket at the path.

Reproduced before: `irqtune metrics --output` on a FIFO or on a symlink to
a device (/dev/stdout) made a regular root file of it, exit 0 - on
/dev/null itself that breaks the machine's /dev/null.  The devices here
are made in a temporary directory (os.mknod, root only), never /dev's."""

import os
import socket
import stat

import pytest

import irqtune.cli as irqtune_cli
from irqtune.frontends import metrics
from irqtune.kernel import files
from irqtune_bench import files as bench_files

# what a rename would have replaced -> how each is made in a directory
KINDS = ("symlink", "symlink-to-device", "fifo", "directory", "character-device", "socket")


def make(kind, path, victim):
    """Put a kind of non-regular file at path (the victim: a root-only file,
    a symlink's target)."""
    if kind == "symlink":
        os.symlink(victim, path)
    elif kind == "symlink-to-device":       # as /dev/stdout is
        device = path.parent / "null"
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        os.symlink(device, path)
    elif kind == "fifo":
        os.mkfifo(path, 0o600)
    elif kind == "directory":
        path.mkdir()
    elif kind == "character-device":        # what /dev/null is
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(str(path))


def identity(path):
    st = os.lstat(path)
    return st.st_mode, st.st_ino, st.st_rdev, st.st_size, st.st_mtime_ns


@pytest.fixture
def victim(tmp_path):
    """A root-only file another user would like to overwrite."""
    path = tmp_path / "victim"
    path.write_text("root's own\n")
    path.chmod(0o600)
    return path


@pytest.fixture
def place(tmp_path):
    """A directory holding only what a test makes there; its devices removed
    afterwards whatever the test did."""
    out = tmp_path / "out"
    out.mkdir()
    yield out
    for name in os.listdir(out):
        if not (out / name).is_dir() or (out / name).is_symlink():
            os.unlink(out / name)


def writers():
    return {"library": lambda path, data: files.replace_file(str(path), data, 0o644),
            "bench": lambda path, data: bench_files.write_file(path, data)}


@pytest.mark.parametrize("writer", ["library", "bench"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("data", ["text\n", b"\x89PNG bytes"])
def test_the_one_writer_refuses_what_is_not_a_regular_file(place, victim, writer, kind, data):
    target = place / "result"
    make(kind, target, victim)
    before, victim_before = identity(target), identity(victim)
    with pytest.raises(OSError) as err:
        writers()[writer](target, data)
    assert "not a regular file" in str(err.value) and "\n" not in str(err.value), err.value
    assert identity(target) == before and identity(victim) == victim_before
    assert victim.read_text() == "root's own\n"
    # no temporary file left beside it
    assert sorted(os.listdir(place)) == sorted(["result"] + (["null"] if kind == "symlink-to-device" else []))


@pytest.mark.parametrize("writer", ["library", "bench"])
@pytest.mark.parametrize("data,expected", [("text\u00e9\n", "text\u00e9\n".encode()), (b"\x00\xff", b"\x00\xff")])
def test_the_one_writer_writes_text_and_bytes_over_a_regular_file(place, writer, data, expected):
    target = place / "result"
    target.write_text("old\n")
    target.chmod(0o600)
    old = os.umask(0)
    try:
        writers()[writer](target, data)
    finally:
        os.umask(old)
    assert target.read_bytes() == expected
    assert stat.S_IMODE(target.stat().st_mode) == 0o644 and os.listdir(place) == ["result"]
    (place / "result").unlink()
    writers()[writer](target, data)             # and a new one
    assert target.read_bytes() == expected


def metrics_main(monkeypatch, capsys, argv):
    monkeypatch.setattr(metrics, "collect", lambda devices: [])
    monkeypatch.setattr(irqtune_cli, "interfaces", lambda: {"lo": 1})
    code = irqtune_cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("kind", KINDS)
def test_metrics_output_over_a_device_fifo_or_link_is_refused(monkeypatch, capsys, place, victim, kind):
    """`irqtune metrics --output /dev/null`, a FIFO, `/dev/stdout`: one
    line, exit 1, the thing at the path untouched."""
    target = place / "irqtune.prom"
    make(kind, target, victim)
    before = identity(target)
    code, out, err = metrics_main(monkeypatch, capsys, ["metrics", "--output", str(target)])
    assert code == 1 and out == "", (code, out, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("irqtune metrics: cannot write %s: " % target), err
    assert "not a regular file" in err and "--output -" in err, err
    assert identity(target) == before and victim.read_text() == "root's own\n"


def test_metrics_output_dash_is_standard_output(monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)
    code, out, err = metrics_main(monkeypatch, capsys, ["metrics", "--output", "-"])
    assert (code, err) == (0, "") and out == metrics.render([])
    assert os.listdir(tmp_path) == []


def test_metrics_output_replaces_its_own_regular_file(monkeypatch, capsys, tmp_path):
    target = tmp_path / "irqtune.prom"
    target.write_text("# earlier\n")
    code, out, err = metrics_main(monkeypatch, capsys, ["metrics", "--output", str(target)])
    assert (code, out, err) == (0, "", "")
    assert target.read_text() == metrics.render([], openmetrics=False)
