# SPDX-License-Identifier: GPL-2.0-or-later
"""mcload (bench/mcload.c), built and run against a small memcached
stand-in on the loopback: every request scheduled in the window is in
its histogram, those never answered at the histogram's maximum, and the
per-second slices' p99 say when that happened.  The stand-in answers in
memcached's text protocol ("STORED\\r\\n" to the set, a 32-byte VALUE
block and END to each get, as memcached 1.6 prints them)."""

import json
import shutil
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from irqtune_bench import stats

REPO = Path(__file__).resolve().parents[2]
VALUE = b"VALUE irqtune 0 32\r\n" + b"x" * 32 + b"\r\nEND\r\n"


@pytest.fixture(scope="module")
def mcload(tmp_path_factory):
    if not shutil.which("gcc"):
        pytest.skip("no gcc")
    out = tmp_path_factory.mktemp("mcload") / "mcload"
    subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(out), str(REPO / "bench/mcload.c"),
                    "-lm"], check=True)
    return out


class StandIn:
    """Answers the first `answer` gets, then reads and answers nothing."""

    def __init__(self, answer):
        self.answer = answer
        self.gets = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        conn, _ = self.sock.accept()
        buf = b""
        while True:
            data = conn.recv(65536)
            if not data:
                return
            buf += data
            out = []
            while b"\r\n" in buf:
                line, buf = buf.split(b"\r\n", 1)
                if line.startswith(b"set "):
                    buf = buf.split(b"\r\n", 1)[1]
                    out.append(b"STORED\r\n")
                elif line.startswith(b"get "):
                    self.gets += 1
                    if self.gets <= self.answer:
                        out.append(VALUE)
            if out:
                conn.sendall(b"".join(out))


def run(mcload, answer, rate=2000, seconds=2):
    server = StandIn(answer)
    res = subprocess.run([str(mcload), "--host", "127.0.0.1", "--port", str(server.port), "--rate", str(rate),
                          "--seconds", str(seconds), "--warmup", "0.2", "--seed", "3"],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_every_request_of_the_window_is_in_the_histogram(mcload):
    out = run(mcload, answer=10 ** 9)
    h = out["hist"]
    assert out["unanswered"] == 0 == h["unanswered"]
    assert sum(c for _, c in h["counts"]) == out["measured"] > 3000
    # mcload's percentiles are the histogram's, as the report reads them
    for p, key in ((50, "p50_us"), (99, "p99_us")):
        assert stats.quantile_us(h, p) == pytest.approx(out[key], abs=0.06)
    assert out["p99_us"] < 1e6 and len(out["slices_p99_us"]) == 2
    assert all(v is not None and v < 1e6 for v in out["slices_p99_us"])


def test_unanswered_requests_are_counted_at_the_maximum(mcload):
    """The stand-in falls silent after about 1.4 s of the 2.2 s load: the
    rest of the window is never answered.  Dropping those requests would
    leave a p99 of microseconds; counting them puts it at the maximum."""
    out = run(mcload, answer=2800)
    h = out["hist"]
    assert out["unanswered"] == h["unanswered"] > 0.01 * out["measured"]
    assert sum(c for _, c in h["counts"]) + h["unanswered"] == out["measured"]
    top = h["max_ns"] / 1e3         # printed to 0.1 us
    assert stats.quantile_us(h, 99) == top
    assert out["p99_us"] == pytest.approx(top, abs=0.1) and out["max_us"] == pytest.approx(top, abs=0.1)
    # the first second was answered; the second one was not
    first, second = out["slices_p99_us"]
    assert first < 1e6 and second == pytest.approx(top, abs=0.1)
