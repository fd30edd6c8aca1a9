# SPDX-License-Identifier: GPL-2.0-or-later
"""Names and values other people choose reach root's terminal and TuneD's
log escaped and cut (issue 39 item 5): irqtune.kernel.names.shown, and each place
that echoes one - the doctor, status --watch, metrics, verify's report,
option errors, the TuneD plugins' log lines.

The hostile names are those the probe used: a process named
"\\x1b[2J\\x1b[8m" (clear the screen, then hide what follows), a value of
100 KB, a newline in a value."""

import logging
import re
import subprocess
import sys

import pytest

from irqtune.kernel import cpus, names
from irqtune.frontends import metrics, status, verify_report
from irqtune.frontends.doctor import chain, targets
from irqtune.shared.epoll import EpollInstance, EpollParams, EpollTarget
from irqtune.frontends.doctor.links import Report, format_text
from irqtune.shared.counters import Window
from irqtune.kernel.errors import OptionError

HIDE = "\x1b[2J\x1b[8m"            # ED 2 (clear screen), SGR 8 (concealed)
BIG = "0-8191," * 15000             # 105,000 characters
# What a terminal or a log line must never get: C0 controls (ESC, newline,
# CR), DEL, C1 controls (CSI 0x9b), line/paragraph separators, bidi overrides.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def assert_safe_lines(text, lines=None, longest=1000):
    """No control character but the newlines between lines; each line short."""
    parts = text.split("\n")
    for part in parts:
        assert not _CONTROL.search(part), repr(part)
        assert len(part) <= longest, (len(part), part[:200])
    if lines is not None:
        assert len(parts) == lines, parts


# -- the function -----------------------------------------------------------

@pytest.mark.parametrize("value, expected", [
    ("eth0", "eth0"),
    (HIDE, "$'\\x1b[2J\\x1b[8m'"),
    ("a\nb", "$'a\\nb'"),
    ("a\r\tb", "$'a\\r\\tb'"),
    ("\x7f\x9b", "$'\\x7f\\u009b'"),
    ("\u202eexe.txt", "$'\\u202eexe.txt'"),
    ("line\u2028break", "$'line\\u2028break'"),
    ("bad\udcffbyte", "$'bad\\xffbyte'"),         # a byte that was not UTF-8
    ("it's\x1b", "$'it\\'s\\x1b'"),
    ("dev-disk-by\\x2duuid.device", "dev-disk-by\\x2duuid.device"),    # systemd's own escape
    ("caf\u00e9", "caf\u00e9"),                  # printable stays printable
])
def test_shown_escapes_what_a_terminal_acts_on(value, expected):
    assert names.shown(value) == expected


def test_shown_cuts_and_says_how_long_the_value_was():
    text = names.shown(BIG)
    assert text == BIG[:names.SHOWN_MAX] + "...(%d characters)" % len(BIG)
    assert len(names.shown("x" * names.SHOWN_MAX)) == names.SHOWN_MAX      # not cut


@pytest.mark.parametrize("value, expected", [
    ("eth0", "eth0"), ("", "''"), ("my unit", "'my unit'"), ("a\nb", "$'a\\nb'"),
    ("it's", "$'it\\'s'"), ("x y" * 30, "'" + "x y" * 21 + "x'...(90 characters)"),
    ("x" * 70, "'" + "x" * 64 + "'...(70 characters)"),
])
def test_shown_quoted_where_it_would_not_read_as_one_word(value, expected):
    assert names.shown(value, quote=True) == expected


# -- look-alikes (issue 47 item 11) ----------------------------------------

# Pairs of distinct names that printed the same: a character and the text of
# its escape (a device "q<ESC>" and one literally named "q\x1b" - the
# kernel takes both), a byte that was not UTF-8 and the same character
# decoded, the escape form's own marker.
LOOKALIKES = [
    ("q\x1b", "q\\x1b"),
    ("srv\udcff\udcfe", "srv\\xff\\xfe"),       # bytes not UTF-8 (surrogateescape)
    ("a\u202eb", "a\\u202eb"),
    ("\x85", "\udc85"),                         # U+0085 NEL, and the byte 0x85
    ("q\x1b", "$'q\\x1b'"),
    ("", "''"),
    ("'a b'", "a b"),
    ("a\\", "a\\\\"),
]
# Characters that print as nothing (or as a blank) next to "eth0": Hangul
# fillers and the braille blank (letters and symbols, so "printable" to
# Python), combining marks (Mn, Me), format characters (Cf: zero-width
# space, soft hyphen, word joiner, BOM, a tag), spaces other than " " (Zs).
INVISIBLE = ["\u3164", "\u115f", "\u1160", "\uffa0", "\u2800", "\u0301", "\u034f", "\u20dd",
             "\ufe0f", "\u200b", "\u00ad", "\u2060", "\ufeff", "\U000e0041", "\u00a0", "\u3000"]


@pytest.mark.parametrize("quote", [False, True])
@pytest.mark.parametrize("a, b", LOOKALIKES)
def test_a_name_and_the_text_of_its_escape_print_differently(a, b, quote):
    assert names.shown(a, quote=quote) != names.shown(b, quote=quote)


@pytest.mark.parametrize("char", INVISIBLE)
def test_an_invisible_character_is_marked(char):
    for name in ("eth0" + char, "eth" + char + "0", char + "eth0"):
        text = names.shown(name)
        code = ord(char)
        escape = "\\u%04x" % code if code <= 0xFFFF else "\\U%08x" % code
        assert text != "eth0" and escape in text and char not in text, (name, text)


def bash_reads(text):
    """The bytes bash makes of text as a word (its $'...' quoting)."""
    return subprocess.run(["bash", "-c", "printf %s " + text], capture_output=True,
                          check=True, env={"LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin"}).stdout


@pytest.mark.parametrize("quote", [False, True])
def test_every_name_reads_back_as_itself(quote):
    """What shown() prints is either the name itself, or - when anything in
    it had to be escaped, or it reads as $'...' itself - the name in the
    shell's $'...' quoting, which bash turns back into the name's bytes
    exactly: so two names never print alike, and an escaped one can be
    pasted into a command."""
    corpus = [a for pair in LOOKALIKES for a in pair] + ["eth" + c + "0" for c in INVISIBLE] + [
        HIDE, "a\nb\r\t", "\x7f\x9b", "caf\u00e9", "dev-disk-by\\x2duuid.device", "it's",
        "$'", "$'a", "$'q\\x1b': no such unit", "\\", "\\'", "x\udc80\\x80", "\U0001f600",
        "\x1bc", "\u200bf", "my unit"]
    seen = {}
    for name in corpus:
        text = names.shown(name, quote=quote)
        assert seen.setdefault(text, name) == name, (text, name, seen[text])
        if text.startswith("$'") and text.endswith("'"):
            assert bash_reads(text) == name.encode("utf-8", "surrogateescape"), (name, text)
        elif quote and text.startswith("'"):
            assert text == "'%s'" % name and "'" not in name, (name, text)
        else:
            assert text == name, (name, text)


@pytest.mark.parametrize("name", ["q\x1b", HIDE, "eth0\u3164", "srv\udcff", "it's"])
def test_a_line_of_shown_names_passes_the_line_guard_as_it_is(name):
    """The front ends pass each whole line through shown() once more: a
    line that begins with an escaped name is not escaped twice."""
    for line in ("%s: no such unit" % names.shown(name, quote=True),
                 "device %s, pid 1 (%s)" % (names.shown(name), names.shown(name))):
        assert names.shown(line, names.LINE_MAX) == line


# -- option errors: what TuneD's log and tuned-adm print ----------------------

def test_option_error_of_a_100kb_value_is_one_short_line():
    err = OptionError("isolated_cores", BIG, "a CPU list")
    assert str(err).startswith("isolated_cores: invalid value '0-8191,0-8191,")
    assert "...(105000 characters)' (accepted: a CPU list)" in str(err)
    assert_safe_lines(str(err), lines=1, longest=200)
    assert err.value == BIG                         # the value itself is kept whole


def test_option_error_of_a_value_with_a_newline_stays_one_line():
    err = OptionError("services", "memcached\nERROR forged line", "unit names")
    assert str(err) == ("services: invalid value $'memcached\\nERROR forged line' "
                        "(accepted: unit names)")


def test_unparsable_kernel_cpulist_is_logged_cut(caplog):
    caplog.set_level(logging.WARNING, logger="irqtune")
    text = "x" + BIG + "\n" + HIDE
    assert cpus._cpulist("nohz_full CPUs", text) == []
    line, = [r.getMessage() for r in caplog.records]
    assert_safe_lines(line, lines=1, longest=200)
    assert "...(%d characters)" % len(text) in line


# -- the doctor -----------------------------------------------------------

def doctor_text(comm, ifname):
    """The doctor's text for a process and a device of those names, through
    the chain's own links."""
    report = Report()
    inst = EpollInstance(4242, 7, EpollParams(50, 64, 1),
                         targets=[EpollTarget(9, 1, "socket", 8193),
                                  EpollTarget(10, 2, "socket", 8194)])
    chain.check_process(report, 4242, comm, [inst], preload=False, unit=None)
    chain.check_epoll(report, inst, comm, {8193: ifname, 8194: "eth1"})
    chain.check_napi(report, {"id": 8193, "defer-hard-irqs": 0}, ifname, [], None)
    window = Window(1.0, napis=[dict(napi=8193, device=ifname, irq=None, irq_s=0, rx_s=5.0)],
                    devices={ifname: 5.0})
    chain.check_window(report, window)
    return format_text(report)


def test_doctor_report_of_hostile_comm_and_device_names():
    text = doctor_text(HIDE, "\x1b]0;pwned\x07")
    assert_safe_lines(text)
    assert "pid 4242 ($'\\x1b[2J\\x1b[8m')" in text
    assert "NAPI 8193 ($'\\x1b]0;pwned\\x07')" in text
    assert "8193 ($'\\x1b]0;pwned\\x07'), 8194 (eth1)" in text      # the epoll link's list


def test_doctor_report_of_a_long_name_is_cut():
    text = doctor_text("x" * 5000, "y" * 5000)
    assert_safe_lines(text)
    assert "...(5000 characters)" in text


def test_doctor_report_lines_stay_lines_whatever_a_link_holds():
    """The text's last guard: a link holding what no caller escaped (a
    reason from a file, say) still prints as its one line."""
    report = Report()
    report.add("process", "pid 1 (" + HIDE + ")", "unknown", "reason\nforged: ok " + HIDE,
               "fix\r" + HIDE)
    text = format_text(report)
    assert_safe_lines(text, lines=3)


@pytest.fixture
def hostile_process():
    """A real process whose comm is HIDE (it writes /proc/self/comm)."""
    code = ("import sys\nopen('/proc/self/comm', 'w').write(sys.argv[1])\n"
            "print('ready', flush=True)\nsys.stdin.read()\n")
    proc = subprocess.Popen([sys.executable, "-c", code, HIDE], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        yield proc.pid
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)


def test_doctor_report_of_a_real_process_with_a_hostile_comm(hostile_process):
    """The probe's process: its name read from the kernel as the doctor
    reads it, reported by the process link."""
    with open("/proc/%d/comm" % hostile_process) as f:
        assert f.read() == HIDE + "\n"            # the kernel keeps it as it was written
    report = Report()
    chain.check_process(report, hostile_process, targets.comm(hostile_process), [], False)
    text = format_text(report)
    assert_safe_lines(text, lines=3)
    assert "pid %d ($'\\x1b[2J\\x1b[8m'): has no epoll instance" % hostile_process in text


# -- status --watch, metrics, verify --------------------------------------

def test_watch_lines_of_a_hostile_device_name():
    rows = [{"napi": 8193, "queue": 0, "irq": None, "irq_s": 1.0, "rx_s": 2.0,
             "pkts_per_irq": 2.0}]
    text = status.format_rates(HIDE, rows, {"rx_s": 2.0, "busy_poll_s": 0.0, "busy_share": 0.0})
    assert_safe_lines(text, lines=3)
    assert "\\x1b[2J\\x1b[8m" in text


def test_metrics_label_values_carry_no_control_character():
    family = metrics.Family("irqtune_napi_defer_hard_irqs", "gauge", "help")
    family.add(0, device=HIDE, napi="8193", netns="init", unit="a\nb", service="x" * 5000)
    text = metrics.render([family])
    assert_safe_lines(text, lines=5)
    assert 'device="$\'\\\\x1b[2J\\\\x1b[8m\'"' in text      # the exposition's own \\ escaping
    assert 'unit="$\'a\\\\nb\'"' in text
    assert "(5000 characters)" in text


def test_verify_echoes_log_lines_escaped_and_cut(tmp_path):
    log = tmp_path / "tuned.log"
    log.write_text("")
    said = []

    def run(argv, **kwargs):
        if argv[1] == "verify":
            with open(log, "a") as f:
                f.write("2026-11-24 23:58:01,123 ERROR    tuned.plugins.base: verify: failed: "
                        "device %s: 'x' = 'y%s'\n" % (HIDE, "z" * 100000))
            return subprocess.CompletedProcess(argv, 1, "", "")
        return subprocess.CompletedProcess(argv, 0, "Current active profile: %s\n" % HIDE, "")

    code = verify_report.verify(log=str(log), bootcmdline=str(tmp_path / "none"), run=run,
                                out=said.append, err=said.append)
    assert code == 1
    for line in said:
        assert_safe_lines(line, lines=1, longest=5000)
    assert any("device \\x1b[2J\\x1b[8m" in line for line in said), said


def test_verify_log_argument_is_escaped():
    said = []
    assert verify_report.verify(log="/nonexistent/" + HIDE, run=None, err=said.append) == 2
    assert_safe_lines(said[0], lines=1)


# -- TuneD's log ------------------------------------------------------------

@pytest.fixture
def tunedlog():
    pytest.importorskip("tuned.plugins")
    from support.tuned_loader import load_plugin_module
    load_plugin_module("napi")
    return sys.modules["tuned.plugins.irqtune_tunedlog"]


def tuned_lines(caplog):
    return [r.getMessage() for r in caplog.records if r.name.startswith("tuned")]


def test_library_records_reach_tuneds_log_as_one_safe_line(tunedlog, caplog):
    caplog.set_level(logging.DEBUG)
    tunedlog.forward_library_log()
    logging.getLogger("irqtune.test").warning("pid file %s refused: %s", "/run/" + HIDE,
                                              "x\nERROR forged " + "y" * 100000)
    line, = tuned_lines(caplog)
    assert_safe_lines(line, lines=1, longest=names.LINE_MAX + 40)
    assert "/run/\\x1b[2J\\x1b[8m refused: x\\nERROR forged" in line


def test_plugin_lines_reach_tuneds_log_as_one_safe_line(tunedlog, caplog):
    caplog.set_level(logging.DEBUG)
    tunedlog.log.error("instance napi: eth0\n%s" % HIDE)
    tunedlog.log.log(logging.INFO, "a\rb")
    tunedlog.verify_failed("device %s" % HIDE)
    for line in tuned_lines(caplog):
        assert_safe_lines(line, lines=1)
    assert len(tuned_lines(caplog)) == 3
