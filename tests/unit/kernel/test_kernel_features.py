# SPDX-License-Identifier: GPL-2.0-or-later
"""Kernel features no netlink policy shows (irqtune.kernel.caps.KernelFeatures):
busy polling (CONFIG_NET_RX_BUSY_POLL) and PREEMPT_RT, read from fixture
procfs trees, and what the library, the plugins' log and `irqtune status`
say when one is missing.

Fixture texts:
- /proc/sys/kernel/version of the lab's PREEMPT_RT 7.2 kernel (7.2-lab-rt,
  tests/lab/lab-rt.config, built with KBUILD_BUILD_TIMESTAMP as kernel.sh
  sets it; init/Makefile puts "SMP PREEMPT_RT" before the timestamp) and of
  this Debian 12 host's 6.18 kernel (PREEMPT_DYNAMIC).
- /proc/sys/net/core/busy_poll holds "0" where the kernel has busy
  polling; it is in net_core_table (net/core/sysctl_net_core.c, under
  #ifdef CONFIG_NET_RX_BUSY_POLL), registered for init_net only, so a
  process in another network namespace never sees it.
"""

import logging
import os

import pytest

from irqtune.kernel import caps
from irqtune.features import gsim
from irqtune.features import service_optin as so
from irqtune.frontends.status import table as status
from irqtune.kernel.caps import KernelFeatures, NapiCapabilities, detect_kernel_features
from irqtune.kernel.errors import UnsupportedError
from irqtune.kernel.kfs import KernelFs
from irqtune.shared.tuner import Env
from irqtune.features.napi import NapiConfig, NapiTuner
from support.fakes.systemd import FakeSystemd

RT_VERSION = "#1 SMP PREEMPT_RT 2026-01-01 00:00:00 UTC"
HOST_VERSION = "#1 SMP PREEMPT_DYNAMIC @0"
ALL_ATTRS = frozenset({"defer-hard-irqs", "gro-flush-timeout", "irq-suspend-timeout", "threaded"})


def proc_tree(tmp_path, version, busy_poll, same_netns=True):
    """A procfs fixture: kernel version, busy_poll sysctl present or not,
    and the network namespace links of this process and of PID 1."""
    proc = tmp_path / "proc"
    (proc / "sys/kernel").mkdir(parents=True)
    (proc / "sys/kernel/version").write_text(version + "\n")
    (proc / "sys/net/core").mkdir(parents=True)
    if busy_poll:
        (proc / "sys/net/core/busy_poll").write_text("0\n")
    for pid in ("self", "1"):
        (proc / pid / "ns").mkdir(parents=True)
    (proc / "1/ns/net").write_text("net:[4026531840]")
    if same_netns:
        os.link(proc / "1/ns/net", proc / "self/ns/net")
    else:
        (proc / "self/ns/net").write_text("net:[4026532301]")
    return KernelFs(proc=proc, sys=tmp_path / "sys")


def test_rt_kernel_without_busy_poll(tmp_path):
    f = detect_kernel_features(proc_tree(tmp_path, RT_VERSION, busy_poll=False))
    assert f == KernelFeatures(busy_poll=False, preempt_rt=True)
    [line] = f.lacking()
    assert "CONFIG_NET_RX_BUSY_POLL" in line and "irq_suspend_timeout" in line
    assert f.describe() == "PREEMPT_RT: yes, busy polling: no"


def test_host_kernel_with_busy_poll(tmp_path):
    f = detect_kernel_features(proc_tree(tmp_path, HOST_VERSION, busy_poll=True))
    assert f == KernelFeatures(busy_poll=True, preempt_rt=False)
    assert f.lacking() == []


def test_other_network_namespace_cannot_tell(tmp_path):
    """The sysctl is missing in every namespace but the initial one: that
    is no proof the kernel lacks busy polling."""
    f = detect_kernel_features(proc_tree(tmp_path, RT_VERSION, busy_poll=False, same_netns=False))
    assert f.busy_poll is None and f.lacking() == []
    assert "cannot tell" in f.describe()


def napi_tuner(kernel, **values):
    capabilities = NapiCapabilities(netdev_family=True, napi_get=True, napi_set=True,
                                    settable=ALL_ATTRS, threaded_busy_poll=True, kernel=kernel)
    return NapiTuner(NapiConfig(**values), capabilities)


def test_suspension_and_threaded_busy_poll_not_applied_without_busy_poll(caplog):
    caplog.set_level(logging.WARNING)
    t = napi_tuner(KernelFeatures(busy_poll=False), defer_hard_irqs=100,
                   gro_flush_timeout=20000, irq_suspend_timeout=20000000, threaded=2)
    assert t.per_napi == {"defer-hard-irqs": 100, "gro-flush-timeout": 20000}
    assert set(t.unsupported) == {"irq-suspend-timeout", "threaded"}
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines
    assert all("CONFIG_NET_RX_BUSY_POLL" in line for line in lines), lines
    assert any(line.startswith("irq_suspend_timeout not applied: IRQ suspension acts only "
                               "through busy polling") for line in lines), lines


@pytest.mark.parametrize("busy_poll", [True, None])
def test_suspension_applied_with_busy_poll_or_when_unknown(busy_poll):
    t = napi_tuner(KernelFeatures(busy_poll=busy_poll), defer_hard_irqs=100,
                   gro_flush_timeout=20000, irq_suspend_timeout=20000000, threaded=2)
    assert set(t.per_napi) == ALL_ATTRS and not t.unsupported


def test_zero_suspension_and_plain_threading_need_no_busy_poll():
    t = napi_tuner(KernelFeatures(busy_poll=False), irq_suspend_timeout=0, threaded=1)
    assert t.per_napi == {"irq-suspend-timeout": 0, "threaded": 1}


def test_sysfs_fallback_names_the_missing_napi_set(caplog):
    caplog.set_level(logging.WARNING)
    old = NapiCapabilities(netdev_family=True, napi_get=True)     # Linux 6.8 - 6.12
    NapiTuner(NapiConfig(defer_hard_irqs=100), old)
    assert "defer_hard_irqs: no per-NAPI control on this kernel (the kernel has no napi-set " \
           "operation (Linux >= 6.13)), using the device-wide sysfs files" in caplog.text


def test_status_names_what_is_missing(monkeypatch, capsys):
    """A 6.12 PREEMPT_RT kernel built without busy polling (no napi-set)."""
    found = NapiCapabilities(netdev_family=True, napi_get=False,
                             kernel=KernelFeatures(busy_poll=False, preempt_rt=True))
    monkeypatch.setattr("irqtune.frontends.status.detect_napi_capabilities", lambda: found)
    assert status([]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "kernel: PREEMPT_RT: yes, busy polling: no"
    missing = [line for line in out if line.startswith("missing: ")]
    assert len(missing) == 2, out
    assert "no napi-set operation (Linux >= 6.13)" in missing[0]
    assert "CONFIG_NET_RX_BUSY_POLL is not set" in missing[1]


def test_status_says_nothing_is_missing_on_a_full_kernel(monkeypatch, capsys):
    found = NapiCapabilities(netdev_family=True, napi_get=False, napi_set=True,
                             settable=ALL_ATTRS, kernel=KernelFeatures(busy_poll=True))
    monkeypatch.setattr("irqtune.frontends.status.detect_napi_capabilities", lambda: found)
    status([])
    assert "missing" not in capsys.readouterr().out


def test_busy_poll_optin_refused_without_busy_poll(tmp_path):
    root = tmp_path / "root"
    (root / "etc/systemd/system").mkdir(parents=True)
    (root / "run/systemd/system").mkdir(parents=True)
    bus = FakeSystemd()
    opt = so.ServiceOptIn("memcached", root=str(root), bus=bus,
                          library="/usr/lib64/irqtune/libirqtune-busypoll.so",
                          kfs=proc_tree(tmp_path, RT_VERSION, busy_poll=False))
    with pytest.raises(UnsupportedError, match=r"CONFIG_NET_RX_BUSY_POLL is not set.*"
                                               r"memcached.service are not opted in; nothing was written"):
        opt.apply()
    assert bus.calls == [] and not os.listdir(root / "etc/systemd/system")


@pytest.mark.parametrize("version, message", [(RT_VERSION, gsim.RT_MISSING_MESSAGE),
                                              (HOST_VERSION, gsim.MISSING_MESSAGE)])
def test_gsim_missing_names_why(tmp_path, caplog, version, message):
    kfs = proc_tree(tmp_path, version, busy_poll=True)
    caplog.set_level(logging.WARNING)
    tuner, errors = gsim.build({"delay_us": "100"}, Env("gsim", kfs=kfs, state_dir=str(tmp_path),
                                                        napi_irqs=lambda *a: {}))
    assert errors == [] and tuner.iface is None
    assert [r.getMessage() for r in caplog.records] == [message]
    if version == RT_VERSION:
        assert "PREEMPT_RT" in message and "CONFIG_IRQ_SW_MODERATION depends on !PREEMPT_RT" in message


def test_capabilities_carry_the_kernel_features(monkeypatch, tmp_path):
    monkeypatch.setattr(caps, "_family_exists", lambda: False)
    found = caps.detect_napi_capabilities(proc_tree(tmp_path, RT_VERSION, busy_poll=False))
    assert found.kernel == KernelFeatures(busy_poll=False, preempt_rt=True)
    assert len(found.lacking()) == 2
