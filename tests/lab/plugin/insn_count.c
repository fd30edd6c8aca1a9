// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * insn_count: a QEMU TCG plugin counting the guest instructions each vCPU
 * executes, readable while the guest runs.
 *
 *   qemu-system-x86_64 ... -plugin $LAB_CACHE/plugin/insn_count.so,sock=PATH
 *
 * Every connection to the unix socket PATH gets one snapshot and EOF:
 *
 *   vcpus 4
 *   vcpu 0 123456789
 *   ...
 *
 * A measurement window is the difference of two snapshots.
 *
 * How it counts, and why this way (QEMU 7.2's plugin API, MTTCG):
 * - One callback per executed translation block adds the block's
 *   instruction count to the counter of the vCPU running it.  An inline
 *   add would cost nothing, but QEMU 7.2 has only one shared inline
 *   counter per block (blocks are shared by all vCPUs), and two vCPUs
 *   running at once lose updates to it (~9 % measured); per-vCPU inline
 *   counters arrived only in QEMU 9.  A per-instruction callback costs
 *   75-190 %; the per-block one ~20-26 % on a busy guest, the same for
 *   every mode compared.
 * - Only the vCPU's own thread writes its counter (MTTCG runs each vCPU
 *   in its own thread; round-robin TCG runs one vCPU at a time), so the
 *   add needs no lock; the reader thread loads it atomically.  Each
 *   counter sits on its own cache line so vCPUs do not slow each other.
 * - A block counts when it starts; one left early by an exception counts
 *   in full (rare: page faults, not interrupts, which TCG takes at block
 *   boundaries).  A REP string instruction counts once per repetition
 *   (the lab bench boots `-cpu max,-erms,-fsrm` so the guest's copies run
 *   `rep movsq`, not byte-wise `rep movsb`).  Work QEMU does outside the
 *   guest (device emulation, virtio, timers) is not counted.
 *
 * The argument is `sock=`, not `file=`: QEMU takes `file=` as the path of
 * the plugin itself.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

struct counter {
	uint64_t insns;
} __attribute__((aligned(64)));

static struct counter *counters;
static int n_vcpus;
static int listen_fd = -1;
static char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];

static void tb_exec(unsigned int vcpu, void *udata)
{
	struct counter *c = &counters[vcpu];

	/* single writer: a plain add, stored atomically for the reader */
	__atomic_store_n(&c->insns, c->insns + (uintptr_t)udata, __ATOMIC_RELAXED);
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	(void)id;
	qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS,
					     (void *)(uintptr_t)qemu_plugin_tb_n_insns(tb));
}

static void write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

static void *serve(void *arg)
{
	(void)arg;
	for (;;) {
		char buf[64 + 32 * 256];
		size_t len;
		int fd = accept(listen_fd, NULL, NULL);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return NULL;
		}
		len = (size_t)snprintf(buf, sizeof(buf), "vcpus %d\n", n_vcpus);
		for (int i = 0; i < n_vcpus && len < sizeof(buf) - 32; i++)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "vcpu %d %llu\n", i,
						(unsigned long long)__atomic_load_n(&counters[i].insns,
										    __ATOMIC_RELAXED));
		write_all(fd, buf, len);
		close(fd);
	}
}

static void at_exit(qemu_plugin_id_t id, void *udata)
{
	(void)id;
	(void)udata;
	if (sock_path[0])
		unlink(sock_path);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
					   int argc, char **argv)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	const char *path = NULL;
	pthread_t thread;

	for (int i = 0; i < argc; i++) {
		if (strncmp(argv[i], "sock=", 5) == 0) {
			path = argv[i] + 5;
		} else {
			fprintf(stderr, "insn_count: unknown argument '%s' (accepted: sock=PATH)\n",
				argv[i]);
			return -1;
		}
	}
	if (!info->system_emulation) {
		fprintf(stderr, "insn_count: system emulation only\n");
		return -1;
	}
	if (!path || !path[0] || strlen(path) >= sizeof(sock_path)) {
		fprintf(stderr, "insn_count: sock=PATH required (a unix socket path of at most %zu bytes)\n",
			sizeof(sock_path) - 1);
		return -1;
	}
	n_vcpus = info->system.max_vcpus;
	if (n_vcpus < 1 || n_vcpus > 256) {
		fprintf(stderr, "insn_count: %d vCPUs not supported (1..256)\n", n_vcpus);
		return -1;
	}
	counters = aligned_alloc(64, sizeof(*counters) * (size_t)n_vcpus);
	if (!counters)
		return -1;
	memset(counters, 0, sizeof(*counters) * (size_t)n_vcpus);

	strcpy(sock_path, path);
	strcpy(addr.sun_path, path);
	unlink(path);
	listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
	    listen(listen_fd, 8) != 0) {
		fprintf(stderr, "insn_count: cannot listen on %s: %s\n", path, strerror(errno));
		sock_path[0] = 0;
		return -1;
	}
	if (pthread_create(&thread, NULL, serve, NULL) != 0) {
		fprintf(stderr, "insn_count: cannot start the reader thread\n");
		return -1;
	}
	pthread_detach(thread);
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
