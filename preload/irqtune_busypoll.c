// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libirqtune-busypoll.so - opt unmodified applications in to epoll busy
 * polling and, with it, to per-NAPI IRQ suspension.
 *
 * Loaded with LD_PRELOAD, the library interposes epoll_create() and
 * epoll_create1().  After the real call returns a new epoll file
 * descriptor it applies EPIOCSPARAMS (Linux 6.9+, CONFIG_NET_RX_BUSY_POLL)
 * to it with the values read once from the environment:
 *
 *   IRQTUNE_BUSY_POLL_USECS    busy_poll_usecs   0..2147483647   default 0
 *   IRQTUNE_BUSY_POLL_BUDGET   busy_poll_budget  0..65535        default 64
 *                              (above 64 the kernel asks for CAP_NET_ADMIN)
 *   IRQTUNE_PREFER_BUSY_POLL   prefer_busy_poll  0 or 1          default 1
 *   IRQTUNE_BUSY_POLL_LOG      stderr (default), syslog or none
 *
 * "stderr" is the file the process got as fd 2 when the library was loaded
 * (a terminal, a pipe, a service's journal socket, a file named by 2>>):
 * when fd 2 is later something else - closed, and the number reused for
 * a data file or a client's connection - the message goes to syslog.
 *
 * The defaults are the values the IRQ suspension series used for its
 * suspend cases.  An invalid value is replaced by its default and reported
 * in one message.  When the ioctl fails (kernel without it, budget above 64
 * without CAP_NET_ADMIN, ...) the epoll instance stays as the kernel made it,
 * the failure is reported once per process (a new image after exec reports
 * again) and the library stops trying.
 *
 * The wrappers do not allocate, take no locks (but for a report that goes
 * to syslog(3), which does both in glibc, once per process) and keep errno
 * as the real call left it.  Shared state is a handful of words accessed atomically, so
 * they are safe in threads and in a child after fork(); after exec the new
 * image loads the library again (LD_PRELOAD is inherited) and rereads the
 * environment.
 *
 * Not reached: statically linked programs, and runtimes that issue the
 * epoll system calls themselves instead of calling libc (Go, for example).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <syslog.h>
#include <unistd.h>

#include "irqtune_epoll_params.h"

#define IRQTUNE_EXPORT __attribute__((visibility("default")))

#define DEFAULT_USECS 0u
#define DEFAULT_BUDGET 64u
#define DEFAULT_PREFER 1u
#define MAX_USECS 2147483647ul /* the kernel rejects more than S32_MAX */
#define MAX_BUDGET 65535ul
#define BUDGET_WITHOUT_CAP 64u /* NAPI_POLL_WEIGHT */

enum log_target { LOG_TO_STDERR, LOG_TO_SYSLOG, LOG_TO_NONE };

typedef int (*epoll_create_fn)(int);
typedef int (*epoll_create1_fn)(int);

/*
 * Written by the constructor before the application's main() runs and, if
 * an epoll instance is created earlier (another library's constructor),
 * by the first wrapper call; always through atomic builtins.
 */
static struct irqtune_epoll_params params = {
	.busy_poll_usecs = DEFAULT_USECS,
	.busy_poll_budget = DEFAULT_BUDGET,
	.prefer_busy_poll = DEFAULT_PREFER,
	.pad = 0,
};
static int log_target = LOG_TO_STDERR;
/* The stderr of the process image: fd 2's file when configured. */
static int stderr_open;
static dev_t stderr_dev;
static ino_t stderr_ino;
static int configured;		/* 0 not yet, 1 done */
static int ioctl_disabled;	/* set after the first failing EPIOCSPARAMS */
static int ioctl_reported;	/* the failure message was written */
static epoll_create_fn real_epoll_create;
static epoll_create1_fn real_epoll_create1;

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Identity, not type: a service's journal stream and a client connection
 * that took a closed fd 2 are both sockets, and 2>>file is as regular a
 * file as a data file opened after close(2).
 */
static void remember_stderr(void)
{
	struct stat st;

	if (fstat(STDERR_FILENO, &st) != 0)
		return;
	stderr_dev = st.st_dev;
	stderr_ino = st.st_ino;
	stderr_open = 1;
}

static int stderr_is_the_original(void)
{
	struct stat st;

	return stderr_open && fstat(STDERR_FILENO, &st) == 0 &&
	       st.st_dev == stderr_dev && st.st_ino == stderr_ino;
}

/* One line, built on the stack; write(2) or syslog(3), never stdio buffers. */
static void report(const char *fmt, ...)
{
	char line[512];
	static const char prefix[] = "irqtune-busypoll: ";
	size_t len = sizeof(prefix) - 1;
	va_list ap;
	int n;

	if (log_target == LOG_TO_NONE)
		return;
	memcpy(line, prefix, len);
	va_start(ap, fmt);
	n = vsnprintf(line + len, sizeof(line) - len - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	len += (size_t)n < sizeof(line) - len - 1 ? (size_t)n : sizeof(line) - len - 2;
	if (log_target == LOG_TO_SYSLOG || !stderr_is_the_original()) {
		line[len] = '\0';
		syslog(LOG_DAEMON | LOG_WARNING, "%s", line);
		return;
	}
	line[len++] = '\n';
	while (len > 0) {
		ssize_t w = write(STDERR_FILENO, line, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		len -= (size_t)w;
	}
}

/*
 * Strict unsigned decimal: digits only, at least one, no sign, no spaces,
 * no overflow.  Returns 0 and stores the value when it is in [0, max].
 */
static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	unsigned long v = 0;

	if (*s == '\0')
		return -1;
	for (; *s; s++) {
		unsigned long d;

		if (*s < '0' || *s > '9')
			return -1;
		d = (unsigned long)(*s - '0');
		if (v > max / 10 || (v == max / 10 && d > max % 10))
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

static const char *errno_name(int err)
{
	switch (err) {
	case ENOTTY: return "ENOTTY";
	case EINVAL: return "EINVAL";
	case EPERM: return "EPERM";
	case EFAULT: return "EFAULT";
	case EBADF: return "EBADF";
	case ENOSYS: return "ENOSYS";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	default: return "error";
	}
}

static void resolve_real(void)
{
	void *p;

	if (!__atomic_load_n(&real_epoll_create, __ATOMIC_ACQUIRE)) {
		p = dlsym(RTLD_NEXT, "epoll_create");
		__atomic_store_n(&real_epoll_create, (epoll_create_fn)p, __ATOMIC_RELEASE);
	}
	if (!__atomic_load_n(&real_epoll_create1, __ATOMIC_ACQUIRE)) {
		p = dlsym(RTLD_NEXT, "epoll_create1");
		__atomic_store_n(&real_epoll_create1, (epoll_create1_fn)p, __ATOMIC_RELEASE);
	}
}

static void configure(void)
{
	static const struct {
		const char *name;
		unsigned long max;
		unsigned long dflt;
	} vars[] = {
		{ "IRQTUNE_BUSY_POLL_USECS", MAX_USECS, DEFAULT_USECS },
		{ "IRQTUNE_BUSY_POLL_BUDGET", MAX_BUDGET, DEFAULT_BUDGET },
		{ "IRQTUNE_PREFER_BUSY_POLL", 1, DEFAULT_PREFER },
	};
	unsigned long val[3];
	char bad[320];
	size_t badlen = 0;
	const char *s;
	size_t i;
	int n;

	if (__atomic_load_n(&configured, __ATOMIC_ACQUIRE))
		return;

	remember_stderr();
	s = getenv("IRQTUNE_BUSY_POLL_LOG");
	if (s && strcmp(s, "syslog") == 0)
		log_target = LOG_TO_SYSLOG;
	else if (s && strcmp(s, "none") == 0)
		log_target = LOG_TO_NONE;

	bad[0] = '\0';
	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		val[i] = vars[i].dflt;
		s = getenv(vars[i].name);
		if (!s || parse_uint(s, vars[i].max, &val[i]) == 0)
			continue;
		val[i] = vars[i].dflt;
		/* %.40s: keep the line short whatever the environment holds. */
		n = snprintf(bad + badlen, sizeof(bad) - badlen,
				 "%s%s='%.40s' (accepted 0..%lu)",
				 badlen ? ", " : "", vars[i].name, s, vars[i].max);
		if (n > 0 && (size_t)n < sizeof(bad) - badlen)
			badlen += (size_t)n;
	}

	params.busy_poll_usecs = (uint32_t)val[0];
	params.busy_poll_budget = (uint16_t)val[1];
	params.prefer_busy_poll = (uint8_t)val[2];
	params.pad = 0;

	/* Only the first caller (constructor, or an earlier wrapper) reports. */
	if (!__atomic_exchange_n(&configured, 1, __ATOMIC_ACQ_REL) && badlen)
		report("ignoring invalid %s; using the defaults for these", bad);
}

__attribute__((constructor))
static void irqtune_busypoll_init(void)
{
	resolve_real();
	configure();
}

/*
 * Apply the parameters to a new epoll fd.  Any failure leaves the instance
 * untouched (the kernel checks everything before it stores anything) and
 * is reported once; after a lasting refusal (ENOTTY, EOPNOTSUPP, EINVAL,
 * EPERM) later instances are not tried again.
 */
static void apply(int epfd)
{
	struct irqtune_epoll_params p;
	int saved_errno;

	if (epfd < 0 || __atomic_load_n(&ioctl_disabled, __ATOMIC_RELAXED))
		return;
	saved_errno = errno;
	if (!__atomic_load_n(&configured, __ATOMIC_ACQUIRE))
		configure();
	p = params;
	if (ioctl(epfd, IRQTUNE_EPIOCSPARAMS, &p) != 0) {
		int err = errno;

		/* Conditions that hold for the whole process: stop trying. */
		if (err == ENOTTY || err == EOPNOTSUPP || err == EINVAL || err == EPERM)
			__atomic_store_n(&ioctl_disabled, 1, __ATOMIC_RELAXED);
		if (!__atomic_exchange_n(&ioctl_reported, 1, __ATOMIC_ACQ_REL)) {
			if (err == EPERM && p.busy_poll_budget > BUDGET_WITHOUT_CAP)
				report("EPIOCSPARAMS failed (EPERM): busy_poll_budget %u "
				       "above %u needs CAP_NET_ADMIN; epoll instances "
				       "left unchanged", (unsigned)p.busy_poll_budget,
				       BUDGET_WITHOUT_CAP);
			else if (err == ENOTTY)
				report("EPIOCSPARAMS not known to this kernel "
				       "(needs Linux 6.9+); epoll instances left "
				       "unchanged");
			else if (err == EOPNOTSUPP)
				report("EPIOCSPARAMS not supported: kernel built "
				       "without CONFIG_NET_RX_BUSY_POLL; epoll "
				       "instances left unchanged");
			else
				report("EPIOCSPARAMS failed (%s, errno %d); epoll "
				       "instance left unchanged", errno_name(err), err);
		}
	}
	errno = saved_errno;
}

IRQTUNE_EXPORT int epoll_create(int size)
{
	epoll_create_fn fn = __atomic_load_n(&real_epoll_create, __ATOMIC_ACQUIRE);
	int fd;

	if (!fn) {
		resolve_real();
		fn = __atomic_load_n(&real_epoll_create, __ATOMIC_ACQUIRE);
	}
	fd = fn ? fn(size) : (int)syscall(SYS_epoll_create, size);
	apply(fd);
	return fd;
}

IRQTUNE_EXPORT int epoll_create1(int flags)
{
	epoll_create1_fn fn = __atomic_load_n(&real_epoll_create1, __ATOMIC_ACQUIRE);
	int fd;

	if (!fn) {
		resolve_real();
		fn = __atomic_load_n(&real_epoll_create1, __ATOMIC_ACQUIRE);
	}
	fd = fn ? fn(flags) : (int)syscall(SYS_epoll_create1, flags);
	apply(fd);
	return fd;
}
