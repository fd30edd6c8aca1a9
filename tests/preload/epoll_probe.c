// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Test helper for libirqtune-busypoll.so: creates epoll instances in every
 * way the library must catch and reads each back with EPIOCGPARAMS.
 *
 * Output, one line per instance:
 *   <label> <busy_poll_usecs> <busy_poll_budget> <prefer_busy_poll> errno-kept=<0|1>
 * or "<label> ERR <what> <errno>".  Labels: create, create1, create1-cloexec,
 * thread, fork-child, exec-child.
 *
 * Options:
 *   --deny-ioctl   install a seccomp filter that fails EPIOCSPARAMS with
 *                  ENOTTY (a kernel without the ioctl) before creating
 *   --no-exec      skip the exec-child case (one process image only, so
 *                  the library's once-per-process messages appear once)
 *   --threads N    also start N threads at once, each creating one
 *                  instance (labels thread-0 .. thread-N-1)
 *   --stderr-to-file PATH
 *                  close fd 2, open PATH (which the kernel gives fd 2, as
 *                  it would a service's next open after closing stderr)
 *                  and write DATA_LINE into it before creating
 *   --exec-child   (internal) create one instance and exit
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "irqtune_epoll_params.h"

#define SENTINEL_ERRNO 4242
#define DATA_LINE "the program's own data\n"

static void show(const char *label, int fd, int errno_after)
{
	struct irqtune_epoll_params p;

	if (fd < 0) {
		printf("%s ERR create %d\n", label, errno_after);
		return;
	}
	memset(&p, 0xff, sizeof(p));
	if (ioctl(fd, IRQTUNE_EPIOCGPARAMS, &p) != 0) {
		printf("%s ERR get %d\n", label, errno);
		close(fd);
		return;
	}
	printf("%s %u %u %u errno-kept=%d\n", label, p.busy_poll_usecs,
	       p.busy_poll_budget, p.prefer_busy_poll,
	       errno_after == SENTINEL_ERRNO);
	close(fd);
}

static void make(const char *label, int how)
{
	int fd, e;

	errno = SENTINEL_ERRNO;
	if (how == 0)
		fd = epoll_create(8);
	else
		fd = epoll_create1(how == 2 ? EPOLL_CLOEXEC : 0);
	e = errno;
	show(label, fd, e);
	fflush(stdout);
}

static void *thread_main(void *arg)
{
	(void)arg;
	make("thread", 1);
	return NULL;
}

/* Exit status 10: fd 2 could not be made the data file (nowhere to say so). */
static int stderr_to_file(const char *path)
{
	static const char data[] = DATA_LINE;
	int fd;

	close(STDERR_FILENO);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd != STDERR_FILENO)
		return -1;
	return write(fd, data, sizeof(data) - 1) == (ssize_t)sizeof(data) - 1 ? 0 : -1;
}

static pthread_barrier_t start_line;

static void *racer_main(void *arg)
{
	char label[32];

	snprintf(label, sizeof(label), "thread-%ld", (long)arg);
	pthread_barrier_wait(&start_line);
	make(label, 1);
	return NULL;
}

static int race(long n)
{
	pthread_t ts[256];
	long i;

	if (n < 1 || n > 256 || pthread_barrier_init(&start_line, NULL, (unsigned)n))
		return -1;
	for (i = 0; i < n; i++)
		if (pthread_create(&ts[i], NULL, racer_main, (void *)i) != 0)
			return -1;
	for (i = 0; i < n; i++)
		pthread_join(ts[i], NULL);
	return 0;
}

static int deny_setparams(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned int)IRQTUNE_EPIOCSPARAMS, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOTTY),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

int main(int argc, char **argv)
{
	pthread_t t;
	pid_t pid;
	int status, i, do_exec = 1;
	long racers = 0;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--exec-child") == 0) {
			make("exec-child", 1);
			return 0;
		} else if (strcmp(argv[i], "--deny-ioctl") == 0) {
			if (deny_setparams() != 0) {
				perror("seccomp");
				return 3;
			}
		} else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
			racers = strtol(argv[++i], NULL, 10);
		} else if (strcmp(argv[i], "--stderr-to-file") == 0 && i + 1 < argc) {
			if (stderr_to_file(argv[++i]) != 0)
				return 10;
		} else if (strcmp(argv[i], "--no-exec") == 0) {
			do_exec = 0;
		} else {
			fprintf(stderr, "epoll_probe: unknown argument %s\n", argv[i]);
			return 2;
		}
	}

	/* First, so that racing threads meet the first ioctl failure. */
	if (racers && race(racers) != 0)
		return 9;
	make("create", 0);
	make("create1", 1);
	make("create1-cloexec", 2);

	if (pthread_create(&t, NULL, thread_main, NULL) != 0 || pthread_join(t, NULL) != 0)
		return 4;

	pid = fork();
	if (pid < 0)
		return 5;
	if (pid == 0) {
		make("fork-child", 1);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return 6;

	if (!do_exec)
		return 0;
	pid = fork();
	if (pid < 0)
		return 7;
	if (pid == 0) {
		execl("/proc/self/exe", argv[0], "--exec-child", (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return 8;
	return 0;
}
