# SPDX-License-Identifier: GPL-2.0-or-later
"""irqtune.kernel.cpus against fixture sysfs/procfs trees (the host's CPUs are never read)."""

import pytest

from irqtune.kernel import cpus
from irqtune.kernel.errors import OptionError
from irqtune.kernel.kfs import KernelFs
from irqtune.kernel.names import shown
from irqtune.kernel.values import parse_index_list
from irqtune.shared.tuner import Env


@pytest.fixture
def tree(tmp_path):
    """make(online=..., isolated=..., nohz_full=..., cmdline=...) -> (sys_root, proc_root)."""

    def make(online="0-7", isolated=None, nohz_full=None, cmdline="BOOT_IMAGE=/vmlinuz ro"):
        base = tmp_path / "sys/devices/system/cpu"
        base.mkdir(parents=True, exist_ok=True)
        (base / "online").write_text(online + "\n")
        if isolated is not None:
            (base / "isolated").write_text(isolated + "\n")
        if nohz_full is not None:
            (base / "nohz_full").write_text(nohz_full + "\n")
        proc = tmp_path / "proc"
        proc.mkdir(exist_ok=True)
        (proc / "cmdline").write_text(cmdline + "\n")
        return str(tmp_path / "sys"), str(proc)

    return make


def hk(roots, explicit=None):
    sys_root, proc_root = roots
    return cpus.housekeeping_cpus(explicit, KernelFs(proc_root, sys_root))


def test_explicit_list_wins_over_isolation(tree):
    roots = tree(isolated="2-7")
    result = hk(roots, [0, 1, 2, 3])
    assert result.cpus == (0, 1, 2, 3)
    assert result.source == "explicit"


def test_explicit_offline_cpus_are_dropped(tree, caplog):
    roots = tree(online="0-3")
    result = hk(roots, [2, 3, 4, 5])
    assert result.cpus == (2, 3)
    assert "4-5 are not online" in caplog.text


def test_explicit_list_with_no_online_cpu_falls_back_to_isolation(tree):
    roots = tree(online="0-3", isolated="2-3")
    result = hk(roots, [8, 9])
    assert (result.cpus, result.source) == ((0, 1), "isolation")


def test_isolated_file(tree):
    result = hk(tree(online="0-7", isolated="2-5"))
    assert result.cpus == (0, 1, 6, 7)
    assert result.source == "isolation"
    assert "isolated 2-5" in result.detail


def test_nohz_full_alone(tree):
    result = hk(tree(online="0-3", isolated="", nohz_full="1-3"))
    assert result.cpus == (0,)
    assert "nohz_full 1-3" in result.detail


def test_null_nohz_full_and_empty_isolated_mean_no_isolation(tree):
    result = hk(tree(online="0-3", isolated="", nohz_full="(null)"))
    assert (result.cpus, result.source) == ((0, 1, 2, 3), "online")


@pytest.mark.parametrize("arg,expected", [
    ("isolcpus=managed_irq,domain,2-3", (0, 1, 4, 5)),
    ("isolcpus=managed_irq,2-3,5", (0, 1, 4)),
    ("isolcpus=1,3", (0, 2, 4, 5)),
    ("isolcpus=nohz,domain,managed_irq,4-5", (0, 1, 2, 3)),
])
def test_isolcpus_on_the_command_line(tree, arg, expected):
    # managed_irq-only isolation leaves /sys/.../isolated empty.
    result = hk(tree(online="0-5", isolated="", cmdline="ro quiet %s nohz=on" % arg))
    assert result.cpus == expected


def test_sources_are_united(tree):
    result = hk(tree(online="0-7", isolated="6", nohz_full="5",
                     cmdline="isolcpus=managed_irq,domain,4"))
    assert result.cpus == (0, 1, 2, 3, 7)
    assert "isolated 6" in result.detail and "nohz_full 5" in result.detail \
        and "isolcpus= 4" in result.detail


def test_everything_isolated_falls_back_to_online(tree, caplog):
    result = hk(tree(online="0-1", isolated="0-1"))
    assert (result.cpus, result.source) == ((0, 1), "online")
    assert "every online CPU is isolated" in caplog.text


def test_no_isolation_gives_all_online(tree):
    result = hk(tree(online="0-2,4"))
    assert (result.cpus, result.source) == ((0, 1, 2, 4), "online")
    assert result.cpulist() == "0-2,4"
    assert len(result) == 4


def test_unparseable_isolation_is_ignored(tree, caplog):
    result = hk(tree(online="0-3", isolated="garbage"))
    assert result.source == "online"
    assert "cannot parse" in caplog.text


def test_parse_cpulist_option():
    assert parse_index_list("housekeeping_cpus", "0-1,4") == [0, 1, 4]
    with pytest.raises(OptionError) as err:
        parse_index_list("housekeeping_cpus", "zero")
    assert err.value.option == "housekeeping_cpus"
    assert "0-3,6" in str(err.value)


BAD_CPU_LISTS = ["0-a", "3-1", "-1", "all", "1-2-3", "0..3", "cpu0", ",", "0-99999999",
                 "8192"]


@pytest.mark.parametrize("text", BAD_CPU_LISTS)
def test_a_bad_cpu_list_is_an_error_naming_option_value_and_form(text):
    """Never None (which means "not set": the kernel's isolation or every
    CPU), never a silent partial list; "0-99999999" must not be expanded."""
    with pytest.raises(OptionError) as err:
        parse_index_list("housekeeping_cpus", text)
    assert (err.value.option, err.value.value) == ("housekeeping_cpus", text)
    assert str(err.value) == ("housekeeping_cpus: invalid value '%s' (accepted: a list of "
                              "numbers and ranges such as 0-3,6, each at most 8191)" % text)


@pytest.mark.parametrize("text", BAD_CPU_LISTS)
def test_a_bad_housekeeping_cpus_leaves_no_tuner(tree, text):
    """The library's builder for the nic_housekeeping plugin: a bad value
    gives no tuner (nothing is changed) rather than one on every CPU."""
    from irqtune.features import channels
    sys_root, proc_root = tree(online="0-7")
    tuner, errors = channels.build(
        {"channels": "housekeeping", "irq_affinity": "housekeeping", "housekeeping_cpus": text},
        Env("nic", kfs=KernelFs(proc_root, sys_root), state_dir=proc_root))
    assert tuner is None
    assert [e.option for e in errors] == ["housekeeping_cpus"]


def test_a_good_housekeeping_cpus_builds_a_tuner_on_those_cpus(tree):
    from irqtune.features import channels
    sys_root, proc_root = tree(online="0-7")
    tuner, errors = channels.build(
        {"channels": "bad", "irq_affinity": "housekeeping", "housekeeping_cpus": "0,8191,1"},
        Env("nic", kfs=KernelFs(proc_root, sys_root), state_dir=proc_root))
    assert [e.option for e in errors] == ["channels"]     # the rest still applies
    assert tuner.housekeeping.cpus == (0, 1) and tuner.affinity == (0, 1)


TUNED_ACCEPTED = ("a CPU list such as 2-7,10 in TuneD's syntax (numbers and ranges, ^N or !N "
                  "to leave CPUs out, 0x masks), CPUs 0 to 8191")


@pytest.mark.parametrize("text", [
    "", "0", "2-7,10", "0-8191", "^0,0-3", "!2,0-3", "^ 3,0-7", " 1 - 2 , 5 ",
    "0x0000000f", "0xF,,4", "0x00000001,00000000", "0x," + ",".join(["ffffffff"] * 256),
    "'1-3'", "${isolated_cores}"])
def test_tuned_cpulist_in_tuned_syntax_passes_unchanged(text):
    """What TuneD's cpulist_unpack reads (an unexpanded reference passes on
    to the parents' own "isolated_cores are set" assertion)."""
    assert cpus.check_tuned_cpulist("isolated_cores", text) == text


@pytest.mark.parametrize("text", [
    "0-4294967295",                 # issue 35: MemoryError in TuneD's cpulist_invert
    "8192", "0-8192", "9" * 5000, "3-1", "2-x", "1-2-3", "0, ^1", "1 ^2", "cpu0",
    "0x", "0xg", "0x1,zz", "0x" + "f" * 2049, "0x," + ",".join(["ffffffff"] * 257),
    "\u0663", "1_0", "0..3"])
def test_tuned_cpulist_beyond_any_cpu_or_unreadable_is_refused(text):
    with pytest.raises(OptionError) as err:
        cpus.check_tuned_cpulist("isolated_cores", text)
    assert str(err.value) == "isolated_cores: invalid value '%s' (accepted: %s)" % (
        shown(text), TUNED_ACCEPTED)


# -- the whole list bounded, not each item (issue 39 item 7) ------------------

@pytest.mark.parametrize("text", [
    "0-8191," * 400,                        # the probe's 2.8 KB: 152 MB in TuneD's unpacking
    "0-8191," * 10000,                      # 70 KB: the MemoryError the guard was for
    "^0-8191," * 3,                         # exclusions are expanded too
    ("0x" + "f" * 2048 + ",,") * 3,         # three masks of 8192 CPUs each
    "0," * 40000,                           # 80 KB of one CPU: too long before anything
    "0-8191,^0-8191,0",                     # one past the bound
], ids=["probe-2.8KB", "probe-70KB", "exclusions", "masks", "80KB-of-one-CPU", "bound+1"])
def test_tuned_cpulist_bounded_as_a_whole(text):
    with pytest.raises(OptionError) as err:
        cpus.check_tuned_cpulist("isolated_cores", text)
    assert "at most %d CPUs named in all" % cpus.MAX_CPULIST_NAMED in str(err.value)


@pytest.mark.parametrize("text", [
    "0-8191,^0-8191",                       # every CPU, then every one left out: the bound
    ",".join(str(c) for c in range(8192)),  # every CPU one by one (38,911 characters)
    "0x" + "f" * 2048 + ",,0-8191",
], ids=["all-then-none", "each-CPU", "mask-and-range"])
def test_tuned_cpulist_at_the_bound_passes(text):
    assert cpus.check_tuned_cpulist("isolated_cores", text) == text


def test_tuned_cpulist_check_costs_little_memory():
    """The check itself keeps no list per CPU: 63 KB of the probe's text
    (below the length bound, so it is split and counted) costs it well
    under a megabyte, where TuneD's unpacking of 2.8 KB took 152 MB."""
    import tracemalloc
    tracemalloc.start()
    try:
        with pytest.raises(OptionError):
            cpus.check_tuned_cpulist("isolated_cores", "0-8191," * 9000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    print("peak while checking 63 KB: %d bytes" % peak)
    assert peak < 2 * 1024 * 1024, peak
