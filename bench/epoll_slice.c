// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * epoll_slice: the lab bench's stand-in for the seed's "fullbusy" change to
 * memcached's event loop, which the project has no knob for.
 *
 * The seed patched libevent so memcached calls epoll_wait without
 * blocking, in a loop, with a 1 ms timeout (a timeout of 0 returns before
 * the busy-poll loop runs).  A stock memcached blocks in epoll_wait until
 * an event or its next timer.  Preloaded with
 * IRQTUNE_BENCH_EPOLL_SLICE_MS=1, every epoll_wait/epoll_pwait with a
 * longer (or infinite) timeout becomes a loop of calls of at most 1 ms
 * each until one returns events or the caller's own timeout has passed -
 * with busy_poll_usecs=1000 from the opt-in, each call busy polls its
 * NAPI for its whole slice, so the thread polls without ever sleeping, as
 * in the seed.  Without the variable (or 0) the calls pass through.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

static int slice_ms = -1;
static int (*real_wait)(int, struct epoll_event *, int, int);
static int (*real_pwait)(int, struct epoll_event *, int, int, const sigset_t *);

__attribute__((constructor)) static void init(void)
{
	const char *s = getenv("IRQTUNE_BENCH_EPOLL_SLICE_MS");
	long v = s ? strtol(s, NULL, 10) : 0;

	real_wait = (int (*)(int, struct epoll_event *, int, int))dlsym(RTLD_NEXT, "epoll_wait");
	real_pwait = (int (*)(int, struct epoll_event *, int, int, const sigset_t *))
		dlsym(RTLD_NEXT, "epoll_pwait");
	slice_ms = v > 0 && v < 1000 ? (int)v : 0;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static int sliced(int epfd, struct epoll_event *ev, int max, int timeout, const sigset_t *mask,
		  int use_mask)
{
	long long deadline = timeout < 0 ? -1 : now_ms() + timeout;

	for (;;) {
		int t = slice_ms, r;

		if (deadline >= 0) {
			long long left = deadline - now_ms();

			if (left < t)
				t = left > 0 ? (int)left : 0;
		}
		r = use_mask ? real_pwait(epfd, ev, max, t, mask) : real_wait(epfd, ev, max, t);
		if (r != 0 || t == 0 || (deadline >= 0 && now_ms() >= deadline))
			return r;
	}
}

EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	if (!slice_ms || (timeout >= 0 && timeout <= slice_ms))
		return real_wait(epfd, ev, max, timeout);
	return sliced(epfd, ev, max, timeout, NULL, 0);
}

EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout, const sigset_t *mask)
{
	if (!slice_ms || (timeout >= 0 && timeout <= slice_ms))
		return real_pwait(epfd, ev, max, timeout, mask);
	return sliced(epfd, ev, max, timeout, mask, 1);
}
