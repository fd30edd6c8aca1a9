# SPDX-License-Identifier: GPL-2.0-or-later
# irqtune kernel lab (included by the top-level Makefile). See
# tests/lab/README.md.
#
#   make lab                    build kernels + rootfs, run pytest tests/lab/gen6
#   make lab LAB_PATCHES=none   same suite against the unpatched base kernel
#   make lab-kernel             patched kernel (LAB_PATCHES, default all)
#   make lab-kernel-base        unpatched base kernel
#   make lab-rootfs             Debian 12 guest image
#   make lab-boot               boot a guest, print a few facts, power off
#                               (LAB_KERNEL=lab|base, LAB_CMDLINE=...)
#   make lab-check-patches      git am + checkpatch --strict + W=1 build per
#                               series (LAB_SERIES=name to pick one)
#   make lab-clean              remove the build directories (keeps ccache,
#                               source tree and rootfs)

LAB_CACHE   ?= /var/cache/irqtune-lab
LAB_PATCHES ?= all
LAB_JOBS    ?= 2
LAB_PYTEST  ?= -v -rA
LAB_TESTS   ?= tests/lab/gen6
LAB_DIR     := tests/lab
# boot.py imports the lab's host side from `support` (tests/), which
# imports the bench's CPU-list reader (bench/), as pytest.ini gives the suites.
LAB_ENV      = LAB_CACHE=$(LAB_CACHE) LAB_JOBS=$(LAB_JOBS) PYTHONPATH=$(CURDIR)/tests:$(CURDIR)/bench
# Name of the kernel the `guest` fixture boots: "lab" for all series,
# "base" for none, else the series joined by "+".
LAB_KERNEL_NAME = $(if $(filter all,$(LAB_PATCHES)),lab,$(if $(filter none,$(LAB_PATCHES)),base,$(subst $(comma),+,$(LAB_PATCHES))))
comma := ,

.PHONY: lab lab-deps lab-kernel lab-kernel-base lab-rootfs lab-boot lab-check-patches lab-clean

# What the lab needs on a Debian 12 host, installed when missing.
LAB_DEB_DEPS := qemu-system-x86 debootstrap linux-source-6.12 git xz-utils bc flex bison \
	libelf-dev libssl-dev ccache cpio dwarves e2fsprogs iproute2 python3-pytest gcc make
lab-deps:
	@dpkg -s $(LAB_DEB_DEPS) >/dev/null 2>&1 || { apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(LAB_DEB_DEPS); }

lab: lab-deps lab-kernel lab-kernel-base lab-rootfs
	@echo "== irqtune lab: pytest $(LAB_TESTS) with kernel $(LAB_KERNEL_NAME)"
	$(LAB_ENV) IRQTUNE_LAB_KERNEL=$(LAB_KERNEL_NAME) \
		$(PYTHON) -m pytest -p no:cacheprovider $(LAB_PYTEST) $(LAB_TESTS)

lab-kernel: lab-deps
	$(LAB_ENV) $(LAB_DIR)/kernel.sh build $(LAB_PATCHES)

# The unpatched kernel the lab compares against (built after lab-kernel:
# both share one source tree, kernel.sh serialises them anyway).
lab-kernel-base: lab-kernel
	$(LAB_ENV) $(LAB_DIR)/kernel.sh build none

lab-rootfs: lab-deps
	$(LAB_ENV) $(LAB_DIR)/rootfs.sh

LAB_KERNEL  ?= lab
LAB_CMDLINE ?= isolcpus=managed_irq,domain,2-3 nohz_full=2-3
lab-boot: lab-rootfs
	$(LAB_ENV) $(PYTHON) $(LAB_DIR)/boot.py --kernel $(LAB_KERNEL) --cmdline "$(LAB_CMDLINE)"

lab-check-patches:
	$(LAB_ENV) $(LAB_DIR)/check-series.sh $(LAB_SERIES)

lab-clean:
	rm -rf $(LAB_CACHE)/build $(LAB_CACHE)/out $(LAB_CACHE)/run

# Generation 7: Linux 7.2 (Debian unstable's linux-source-7.2, fetched with
# tools/sid-apt) and a Debian unstable guest with systemd as PID 1 and
# TuneD 2.27 (tests/lab/README.md, "Generation 7").
#
#   make lab7                   kernel 7.2-lab + guest image, pytest tests/lab/gen7
#   make lab7-kernel            7.2-lab (kernel-patches/7.2 series, if any)
#   make lab7-rootfs            the Debian unstable guest image
#   make lab-bench              the seed's eleven-mode memcached benchmark
#                               (irqtune-bench in the lab; LAB_BENCH_ARGS=--quick
#                               for a short run)
#   make lab-bench-hosts        irqtune-bench check and run over ssh between
#                               two lab guests on one link (server, client):
#                               the whole bench from the packaged command, and
#                               check's failures (with base-systemd, Linux 6.12
#                               without per-NAPI settings, as the server kernel)
#   make lab-kernel-base-systemd  6.12 without the series, configured to boot
#                               the generation-7 image
#   make lab-plugin             the instruction-counting QEMU plugin
#   make lab-bench-tools        the bench's load generator and epoll shim
#   make lab7-series            the kernel series on Linux 7.2: 7.2-lab and
#                               7.2-base, pytest LAB7_SERIES_TESTS with 7.2-lab
#   make lab7-kernel-base       7.2-base (no series), the unpatched comparison
#   make lab7-rt                PREEMPT_RT kernel 7.2-lab-rt (every 7.2 series,
#                               lab-rt.config) + guest image, pytest LAB7RT_TESTS
#   make lab7-rt-kernel         7.2-lab-rt only
LAB7_TESTS  ?= tests/lab/gen7
LAB7_SERIES_TESTS ?= tests/lab/gen6/test_gsim.py tests/lab/gen6/test_vectors.py
LAB7RT_TESTS ?= tests/lab/gen7rt
LAB7_DEB_DEPS := mmdebstrap python3-matplotlib
.PHONY: lab7 lab7-deps lab7-kernel lab7-kernel-base lab7-rootfs lab7-series lab-bench lab-leases \
	lab-bench-hosts lab7-rt lab7-rt-kernel lab-plugin lab-bench-tools lab-kernel-base-systemd

lab7-deps: lab-deps
	@dpkg -s $(LAB7_DEB_DEPS) >/dev/null 2>&1 || { apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(LAB7_DEB_DEPS); }

lab7-kernel: lab7-deps
	$(LAB_ENV) LAB_GEN=7 $(LAB_DIR)/kernel.sh build all

# A server kernel as RHEL 10 ships it (6.12, no per-NAPI settings) that
# boots the generation-7 image: lab-bench-hosts' failing kernel check.
lab-kernel-base-systemd: lab-deps
	$(LAB_ENV) LAB_VARIANT=systemd $(LAB_DIR)/kernel.sh build none

# After lab7-kernel: both share the 7.2 tree (kernel.sh serialises them).
lab7-kernel-base: lab7-kernel
	$(LAB_ENV) LAB_GEN=7 $(LAB_DIR)/kernel.sh build none

lab7-rootfs: lab7-deps lab7-kernel
	$(LAB_ENV) $(LAB_DIR)/rootfs7.sh

# The counting plugin: header from Debian's qemu source package (fetched
# by tools/debsrc-apt), built into $(LAB_CACHE)/plugin.
lab-plugin: lab-deps
	$(LAB_ENV) $(LAB_DIR)/plugin/build.sh

# Host-side C tools of the bench, rebuilt every time (two small files).
# The bench's sources are irqtune-bench's (bench/); the lab keeps its
# builds in its cache, rebuilt when a source changes.
LAB_BENCH_TOOLS := $(LAB_CACHE)/bench
lab-bench-tools: lab-deps $(LAB_BENCH_TOOLS)/mcload $(LAB_BENCH_TOOLS)/epoll_slice.so
$(LAB_BENCH_TOOLS)/mcload: bench/mcload.c
	mkdir -p $(LAB_BENCH_TOOLS)
	gcc -O2 -Wall -Wextra -Werror -o $@ $< -lm
$(LAB_BENCH_TOOLS)/epoll_slice.so: bench/epoll_slice.c
	mkdir -p $(LAB_BENCH_TOOLS)
	gcc -O2 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden -o $@ $< -ldl

lab7: lab7-kernel lab7-rootfs lab-plugin
	@echo "== irqtune lab, generation 7: pytest $(LAB7_TESTS)"
	$(LAB_ENV) $(PYTHON) -m pytest -p no:cacheprovider $(LAB_PYTEST) $(LAB7_TESTS)

# Guests one at a time per host: under the lab lock (as make fleet-test).
LAB_LOCK := flock /tmp/irqtune-lab.lock
lab-bench: lab7-kernel lab7-rootfs lab-plugin lab-bench-tools
	$(LAB_LOCK) env $(LAB_ENV) PYTHONPATH=$(CURDIR)/tests:$(CURDIR)/bench \
		$(PYTHON) $(LAB_DIR)/bench/memcached_modes.py $(LAB_BENCH_ARGS)

# Two guests (server and client) on one virtual link; the lab host's side of
# the link is the administrator's machine running irqtune-bench over ssh.
lab-bench-hosts: lab7-kernel lab7-rootfs lab-kernel-base-systemd
	$(LAB_LOCK) env $(LAB_ENV) $(PYTHON) -m pytest -p no:cacheprovider $(LAB_PYTEST) \
		$(LAB_DIR)/bench/test_bench_hosts.py

# Queue leases to netkit devices: the 7.2 guest lends netdevsim's queues;
# the 6.12 kernel (base-systemd) has no queue-create.
lab-leases: lab7-kernel lab7-rootfs lab-kernel-base-systemd
	$(LAB_LOCK) env $(LAB_ENV) $(PYTHON) -m pytest -p no:cacheprovider $(LAB_PYTEST) \
		$(LAB_DIR)/gen7/test_queue_leases.py

# The generation-6 series tests on the 7.2 kernels (the guest fixture boots
# 7.2-lab; the unpatched comparison boots 7.2-base).
lab7-series: lab7-kernel lab7-kernel-base lab7-rootfs
	@echo "== irqtune lab, generation 7: pytest $(LAB7_SERIES_TESTS) with kernel 7.2-lab"
	$(LAB_ENV) IRQTUNE_LAB_KERNEL=7.2-lab \
		$(PYTHON) -m pytest -p no:cacheprovider $(LAB_PYTEST) $(LAB7_SERIES_TESTS)

# The realtime generation: Linux 7.2 with PREEMPT_RT, the same series and
# tree as 7.2-lab (kernel.sh serialises the builds), its own build
# directory; the guest image is generation 7's.
lab7-rt-kernel: lab7-deps
	$(LAB_ENV) LAB_GEN=7 LAB_VARIANT=rt $(LAB_DIR)/kernel.sh build all

lab7-rt: lab7-rt-kernel lab7-rootfs
	@echo "== irqtune lab, realtime generation: pytest $(LAB7RT_TESTS) with kernel 7.2-lab-rt"
	$(LAB_ENV) $(PYTHON) -m pytest -p no:cacheprovider $(LAB_PYTEST) $(LAB7RT_TESTS)
