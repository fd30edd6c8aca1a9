// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * mcload: open-loop memcached load for the lab bench (runs on the host,
 * inside the guest's network namespace).  RATE requests/s in total,
 * Poisson arrivals spread round-robin over CONNS connections, `get` of
 * one 32-byte value in memcached's text protocol; WARMUP seconds first,
 * then the measurement window of SECONDS; stops by itself.
 *
 * Why our own: memtier_benchmark and mutilate are not in Debian 12, and
 * the Python generator tops out near 6000 req/s.  This one is a single
 * thread on epoll with nanosecond timeouts (epoll_pwait2): it sleeps
 * until the next scheduled send, so it costs the shared host little, and
 * it reports how late its sends were and how much CPU it used, so a
 * reader sees it kept up.
 *
 * Latency is measured from each request's *scheduled* send time (no
 * coordinated omission: a server or client falling behind shows as
 * latency, not as less load).  Requests are pipelined per connection and
 * matched to answers in order (memcached answers in order per connection).
 *
 * Every request scheduled in the window goes into a log-bucketed
 * histogram (below: 128 buckets per power of two, each at most 1/128 of
 * its lower bound wide, so a value read as its bucket's midpoint is within
 * 0.4 %); a request still unanswered when the generator stops (2 s after
 * the window) counts at the histogram's maximum, HIST_MAX_NS, rather than
 * being left out.  The percentiles, and the p99 of each 1 s slice of the
 * window (by scheduled time), come from these histograms.
 *
 * --source-ports P1,P2,... binds connection i to local port Pi: receive-side
 * scaling hashes the 4-tuple, so a port irqtune-bench found to land on the
 * rx queue under test lands there in every run.  Those connections end
 * with a reset (SO_LINGER 0) instead of TIME_WAIT, so the next run can
 * bind the same ports at once.
 *
 * --counter PATH reads the insn_count plugin's socket (tests/lab/plugin)
 * when the window starts and when it ends: the guest instructions each
 * vCPU executed during exactly the window the latencies come from.
 *
 * Prints one JSON object (see the keys below).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 64
#define MAX_VCPUS 64
#define OUTBUF_MAX (16 << 20)
#define CONNECT_ATTEMPT_S 3	/* one SYN retransmission (1 s RTO) and margin */
/* histogram: values in ns; below HIST_SUB exact, then HIST_SUB buckets per
 * power of two; HIST_MAX_NS and above in the last bucket */
#define HIST_SUB_BITS 7
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_MAX_SHIFT 35
#define HIST_MAX_NS (1ull << HIST_MAX_SHIFT)
#define HIST_BUCKETS ((HIST_MAX_SHIFT - HIST_SUB_BITS + 1) * HIST_SUB)
#define MAX_SLICES 120

static const char REQUEST[] = "get irqtune\r\n";
static const char END[] = "END\r\n";

struct conn {
	int fd;
	char *out;		/* requests not yet accepted by the socket */
	size_t out_len, out_cap;
	double *fifo;		/* scheduled times of requests awaiting an answer */
	size_t head, tail, cap;
	int match;		/* bytes of END matched so far */
};

struct hist {
	unsigned long long counts[HIST_BUCKETS];
	unsigned long long total, unanswered;
};

static unsigned hist_index(uint64_t ns)
{
	unsigned e, shift;

	if (ns >= HIST_MAX_NS)
		return HIST_BUCKETS - 1;
	if (ns < HIST_SUB)
		return (unsigned)ns;
	e = 63 - (unsigned)__builtin_clzll(ns);
	shift = e - HIST_SUB_BITS;
	return (shift + 1) * HIST_SUB + (unsigned)((ns >> shift) - HIST_SUB);
}

/* the midpoint of a bucket, in ns (irqtune_bench.stats.bucket_mid) */
static double hist_mid(unsigned idx)
{
	unsigned k = idx / HIST_SUB, sub = idx % HIST_SUB;

	if (!k)
		return idx;
	return (double)((uint64_t)(HIST_SUB + sub) << (k - 1)) + ((1ull << (k - 1)) - 1) / 2.0;
}

static void hist_add(struct hist *h, double seconds)
{
	double ns = seconds * 1e9;

	h->counts[hist_index(ns <= 0 ? 0 : (uint64_t)ns)]++;
	h->total++;
}

/* nearest rank: the smallest value with at least p % of the requests at or
 * below it; unanswered requests are the largest, at HIST_MAX_NS; in us */
static double hist_pct(const struct hist *h, double p)
{
	unsigned long long n = h->total + h->unanswered, rank, seen = 0;

	if (!n)
		return NAN;
	rank = (unsigned long long)ceil(p / 100.0 * (double)n);
	if (rank < 1)
		rank = 1;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += h->counts[i];
		if (seen >= rank)
			return hist_mid(i) / 1e3;
	}
	return HIST_MAX_NS / 1e3;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec * 1e-6;
}

static void die(const char *what)
{
	fprintf(stderr, "mcload: %s: %s\n", what, strerror(errno));
	exit(1);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static double uniform(void)
{
	/* xorshift64*: plenty for arrival times, and reproducible */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return ((rng_state * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* the 1 s slice of the window a scheduled time (s after its start) is in */
static int slice_of(double since_start, int nslices)
{
	int k = (int)since_start;

	return k < 0 ? 0 : k >= nslices ? nslices - 1 : k;
}

static double pct(const double *v, size_t n, double p)
{
	size_t i;

	if (!n)
		return NAN;
	i = (size_t)(p / 100.0 * n);
	return v[i < n ? i : n - 1];
}

/* One snapshot of the plugin's counters; returns the number of vCPUs or -1. */
static int read_counter(const char *path, unsigned long long *out)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char buf[8192];
	size_t len = 0;
	int fd, n = -1;
	char *line, *save;

	if (strlen(path) >= sizeof(addr.sun_path))
		return -1;
	strcpy(addr.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	for (;;) {
		ssize_t r = read(fd, buf + len, sizeof(buf) - 1 - len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	buf[len] = 0;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int i;
		unsigned long long v;

		if (sscanf(line, "vcpus %d", &i) == 1)
			n = i;
		else if (sscanf(line, "vcpu %d %llu", &i, &v) == 2 && i >= 0 && i < MAX_VCPUS)
			out[i] = v;
	}
	return n > MAX_VCPUS ? MAX_VCPUS : n;
}

static void push(struct conn *c, double t)
{
	if (c->tail - c->head == c->cap) {
		size_t ncap = c->cap ? 2 * c->cap : 4096;
		double *n = malloc(ncap * sizeof(*n));

		if (!n)
			die("malloc");
		for (size_t i = 0; i < c->cap; i++)
			n[i] = c->fifo[(c->head + i) % c->cap];
		free(c->fifo);
		c->fifo = n;
		c->tail = c->tail - c->head;
		c->head = 0;
		c->cap = ncap;
	}
	c->fifo[c->tail++ % c->cap] = t;
}

static int connect_to(const char *host, int port, int local_port, double deadline)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	const struct timeval attempt = { .tv_sec = CONNECT_ATTEMPT_S };

	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		fprintf(stderr, "mcload: --host %s is not an IPv4 address\n", host);
		exit(2);
	}
	for (;;) {
		int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

		if (fd < 0)
			die("socket");
		if (local_port) {
			struct sockaddr_in la = { .sin_family = AF_INET, .sin_port = htons(local_port) };

			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (bind(fd, (struct sockaddr *)&la, sizeof(la)) != 0)
				die("bind --source-ports");
		}
		/*
		 * A firewall that drops SYNs would hold a blocking connect()
		 * for the kernel's two minutes of retries; give up on the
		 * attempt after CONNECT_ATTEMPT_S (connect() then fails with
		 * EINPROGRESS) and on the whole after the deadline.
		 */
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &attempt, sizeof(attempt));
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &(struct timeval){ 0 }, sizeof(struct timeval));
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			return fd;
		}
		if (errno == EINPROGRESS)
			errno = ETIMEDOUT;
		close(fd);
		/* a server just restarted by systemd may not listen yet */
		if ((errno != ECONNREFUSED && errno != ETIMEDOUT) || now_s() > deadline)
			die("connect");
		usleep(200000);
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: mcload --host IP --rate REQ_PER_S [--port 11211] [--conns 1] "
			"[--seconds 5] [--warmup 0.5] [--source-ports P1,...] [--counter SOCK] [--seed N]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "host", 1, 0, 'h' }, { "port", 1, 0, 'p' }, { "rate", 1, 0, 'r' },
		{ "conns", 1, 0, 'c' }, { "seconds", 1, 0, 's' }, { "warmup", 1, 0, 'w' },
		{ "counter", 1, 0, 'k' }, { "seed", 1, 0, 'S' }, { "source-ports", 1, 0, 'P' },
		{ 0, 0, 0, 0 },
	};
	const char *host = NULL, *counter = NULL, *source_ports = NULL;
	int local_ports[MAX_CONNS] = { 0 }, nlocal = 0;
	int port = 11211, nconns = 1, opt, epfd, nvcpu_a = -1, nvcpu_b = -1;
	double rate = 0, seconds = 5, warmup = 0.5;
	struct conn conns[MAX_CONNS];
	unsigned long long ins_a[MAX_VCPUS] = { 0 }, ins_b[MAX_VCPUS] = { 0 };
	double t_start, w_start, w_end, next_at, t_a = 0, t_b = 0, cpu_a = 0, cpu_b = 0;
	double *lateness, lat_sum = 0;
	size_t lat_cap, n_late = 0, late_100us = 0, late_1ms = 0;
	struct hist *slices, whole;
	int nslices;
	unsigned long long sent = 0, answered = 0, errors = 0, lost = 0;
	int sampled_a = 0, sampled_b = 0, ci = 0;
	char buf[65536];

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'h': host = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'r': rate = atof(optarg); break;
		case 'c': nconns = atoi(optarg); break;
		case 's': seconds = atof(optarg); break;
		case 'w': warmup = atof(optarg); break;
		case 'k': counter = optarg; break;
		case 'P': source_ports = optarg; break;
		case 'S': rng_state ^= strtoull(optarg, NULL, 0) * 0x2545F4914F6CDD1Dull; break;
		default: usage();
		}
	}
	if (!host || !(rate > 0 && rate <= 2e6) || nconns < 1 || nconns > MAX_CONNS ||
	    !(seconds > 0 && seconds <= MAX_SLICES) || !(warmup >= 0 && warmup <= 30) || port <= 0 ||
	    port > 65535) {
		fprintf(stderr, "mcload: rate must be in (0, 2000000], conns in [1, %d], seconds in "
				"(0, 120], warmup in [0, 30]\n", MAX_CONNS);
		usage();
	}
	for (const char *p = source_ports; p && *p; nlocal++) {
		char *end;
		long v = strtol(p, &end, 10);

		if (end == p || v < 1 || v > 65535 || nlocal == MAX_CONNS || (*end && *end != ',')) {
			fprintf(stderr, "mcload: --source-ports %s: accepted comma-separated ports 1-65535, "
					"one per connection\n", source_ports);
			exit(2);
		}
		local_ports[nlocal] = (int)v;
		p = *end ? end + 1 : end;
	}
	if (source_ports && nlocal != nconns) {
		fprintf(stderr, "mcload: --source-ports names %d port(s) for %d connection(s)\n", nlocal, nconns);
		exit(2);
	}
	lat_cap = (size_t)(rate * seconds * 1.5) + 1024;
	lateness = malloc(lat_cap * sizeof(*lateness));
	nslices = (int)ceil(seconds - 1e-9);
	slices = calloc((size_t)nslices, sizeof(*slices));
	if (!lateness || !slices)
		die("malloc");
	memset(&whole, 0, sizeof(whole));

	memset(conns, 0, sizeof(conns));
	for (int i = 0; i < nconns; i++)
		conns[i].fd = connect_to(host, port, local_ports[i], now_s() + 10);
	{
		/* the value every get returns */
		static const char set[] = "set irqtune 0 0 32\r\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\r\n";
		ssize_t n;

		if (write(conns[0].fd, set, sizeof(set) - 1) != (ssize_t)sizeof(set) - 1)
			die("set");
		n = read(conns[0].fd, buf, sizeof(buf) - 1);
		if (n < 6 || strncmp(buf, "STORED", 6) != 0) {
			fprintf(stderr, "mcload: set failed\n");
			return 1;
		}
	}
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		die("epoll_create1");
	for (int i = 0; i < nconns; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };

		fcntl(conns[i].fd, F_SETFL, fcntl(conns[i].fd, F_GETFL) | O_NONBLOCK);
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, conns[i].fd, &ev) != 0)
			die("epoll_ctl");
	}

	t_start = now_s() + 0.02;
	w_start = t_start + warmup;
	w_end = w_start + seconds;
	next_at = t_start;
	for (;;) {
		double now = now_s(), wait;
		struct epoll_event evs[MAX_CONNS];
		struct timespec ts;
		int pending = 0, n;

		if (!sampled_a && now >= w_start) {
			sampled_a = 1;
			t_a = now;
			cpu_a = cpu_s();
			if (counter)
				nvcpu_a = read_counter(counter, ins_a);
		}
		if (!sampled_b && now >= w_end) {
			sampled_b = 1;
			if (counter)
				nvcpu_b = read_counter(counter, ins_b);
			t_b = now;
			cpu_b = cpu_s();
		}
		/* send everything due (open loop: never wait for answers) */
		while (next_at <= now && next_at < w_end) {
			struct conn *c = &conns[ci++ % nconns];
			double late = now - next_at;

			if (c->out_len + sizeof(REQUEST) > c->out_cap) {
				size_t ncap = c->out_cap ? 2 * c->out_cap : 65536;

				if (ncap > OUTBUF_MAX) {
					/* never sent: unanswered, if in the window */
					errors++;
					if (next_at >= w_start)
						slices[slice_of(next_at - w_start, nslices)].unanswered++;
					goto next;
				}
				c->out = realloc(c->out, ncap);
				if (!c->out)
					die("realloc");
				c->out_cap = ncap;
			}
			memcpy(c->out + c->out_len, REQUEST, sizeof(REQUEST) - 1);
			c->out_len += sizeof(REQUEST) - 1;
			push(c, next_at);
			sent++;
			if (next_at >= w_start && n_late < lat_cap) {
				lateness[n_late++] = late;
				late_100us += late > 100e-6;
				late_1ms += late > 1e-3;
			}
next:
			next_at += -log(1.0 - uniform()) / rate;
		}
		for (int i = 0; i < nconns; i++) {
			struct conn *c = &conns[i];

			if (c->out_len) {
				ssize_t w = send(c->fd, c->out, c->out_len, MSG_NOSIGNAL);

				if (w > 0) {
					memmove(c->out, c->out + w, c->out_len - (size_t)w);
					c->out_len -= (size_t)w;
				} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
					die("send");
				}
			}
			pending += c->tail != c->head;
		}
		if (now >= w_end && sampled_b && (!pending || now >= w_end + 2.0))
			break;
		wait = (next_at < w_end ? next_at : w_end + 2.0) - now;
		if (!sampled_a && w_start - now < wait)
			wait = w_start - now;
		if (!sampled_b && w_end - now < wait)
			wait = w_end - now;
		for (int i = 0; i < nconns; i++)
			if (conns[i].out_len)	/* socket full: retry soon */
				wait = wait > 100e-6 ? 100e-6 : wait;
		if (wait < 0)
			wait = 0;
		ts.tv_sec = (time_t)wait;
		ts.tv_nsec = (long)((wait - (double)ts.tv_sec) * 1e9);
		n = epoll_pwait2(epfd, evs, MAX_CONNS, &ts, NULL);
		if (n < 0 && errno != EINTR)
			die("epoll_pwait2");
		for (int e = 0; e < n; e++) {
			struct conn *c = &conns[evs[e].data.u32];
			ssize_t r = recv(c->fd, buf, sizeof(buf), 0);
			double t;

			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (r <= 0) {
				fprintf(stderr, "mcload: server closed a connection\n");
				return 1;
			}
			t = now_s();
			for (ssize_t i = 0; i < r; i++) {
				/* END\r\n ends each answer; the value itself is all 'x' */
				c->match = buf[i] == END[c->match] ? c->match + 1 : (buf[i] == 'E');
				if (c->match == (int)sizeof(END) - 1) {
					double sched;

					c->match = 0;
					if (c->head == c->tail) {
						errors++;
						continue;
					}
					sched = c->fifo[c->head++ % c->cap];
					answered++;
					if (sched >= w_start && sched < w_end) {
						hist_add(&slices[slice_of(sched - w_start, nslices)], t - sched);
						lat_sum += t - sched;
					}
				}
			}
		}
	}
	for (int i = 0; i < nconns; i++) {
		struct conn *c = &conns[i];

		lost += c->tail - c->head;
		/* requests of the window never answered: at the maximum */
		for (size_t j = c->head; j != c->tail; j++) {
			double sched = c->fifo[j % c->cap];

			if (sched >= w_start && sched < w_end)
				slices[slice_of(sched - w_start, nslices)].unanswered++;
		}
		if (nlocal) {
			struct linger reset = { .l_onoff = 1, .l_linger = 0 };

			setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
		}
		close(c->fd);
	}
	qsort(lateness, n_late, sizeof(*lateness), cmp_double);
	for (int k = 0; k < nslices; k++) {
		for (unsigned i = 0; i < HIST_BUCKETS; i++)
			whole.counts[i] += slices[k].counts[i];
		whole.total += slices[k].total;
		whole.unanswered += slices[k].unanswered;
	}

	printf("{\"generator\": \"mcload\", \"offered\": %.1f, \"seconds\": %.3f, \"warmup\": %.3f, "
	       "\"conns\": %d, \"sent\": %llu, \"answered\": %llu, \"lost\": %llu, \"errors\": %llu, "
	       "\"measured\": %llu, \"unanswered\": %llu, \"qps\": %.1f",
	       rate, seconds, warmup, nconns, sent, answered, lost, errors, whole.total + whole.unanswered,
	       whole.unanswered, whole.total / seconds);
	if (whole.total + whole.unanswered) {
		unsigned top = 0;

		for (unsigned i = 0; i < HIST_BUCKETS; i++)
			if (whole.counts[i])
				top = i;
		printf(", \"avg_us\": %.1f, \"p50_us\": %.1f, \"p90_us\": %.1f, \"p99_us\": %.1f, "
		       "\"p999_us\": %.1f, \"max_us\": %.1f",
		       whole.total ? lat_sum / whole.total * 1e6 : NAN, hist_pct(&whole, 50), hist_pct(&whole, 90),
		       hist_pct(&whole, 99), hist_pct(&whole, 99.9),
		       whole.unanswered ? HIST_MAX_NS / 1e3 : hist_mid(top) / 1e3);
	} else {
		printf(", \"avg_us\": null, \"p50_us\": null, \"p90_us\": null, \"p99_us\": null, "
		       "\"p999_us\": null, \"max_us\": null");
	}
	printf(", \"hist\": {\"sub_bits\": %d, \"max_ns\": %llu, \"unanswered\": %llu, \"counts\": [",
	       HIST_SUB_BITS, HIST_MAX_NS, whole.unanswered);
	for (unsigned i = 0, first = 1; i < HIST_BUCKETS; i++) {
		if (whole.counts[i]) {
			printf("%s[%u, %llu]", first ? "" : ", ", i, whole.counts[i]);
			first = 0;
		}
	}
	printf("]}, \"slices_hist\": [");
	/* each slice's histogram: several generators' runs merge exactly */
	for (int k = 0; k < nslices; k++) {
		printf("%s{\"unanswered\": %llu, \"counts\": [", k ? ", " : "", slices[k].unanswered);
		for (unsigned i = 0, first = 1; i < HIST_BUCKETS; i++) {
			if (slices[k].counts[i]) {
				printf("%s[%u, %llu]", first ? "" : ", ", i, slices[k].counts[i]);
				first = 0;
			}
		}
		printf("]}");
	}
	printf("], \"slices_p99_us\": [");
	for (int k = 0; k < nslices; k++) {
		double v = hist_pct(&slices[k], 99);

		if (isnan(v))
			printf("%snull", k ? ", " : "");
		else
			printf("%s%.1f", k ? ", " : "", v);
	}
	printf("]");
	printf(", \"send_late_p50_us\": %.1f, \"send_late_p99_us\": %.1f, \"send_late_max_us\": %.1f, "
	       "\"send_late_over_100us\": %zu, \"send_late_over_1ms\": %zu",
	       n_late ? pct(lateness, n_late, 50) * 1e6 : 0.0,
	       n_late ? pct(lateness, n_late, 99) * 1e6 : 0.0,
	       n_late ? lateness[n_late - 1] * 1e6 : 0.0, late_100us, late_1ms);
	printf(", \"gen_cpu_pct\": %.1f, \"window_s\": %.4f",
	       t_b > t_a ? 100.0 * (cpu_b - cpu_a) / (t_b - t_a) : 0.0, t_b - t_a);
	if (counter && nvcpu_a > 0 && nvcpu_a == nvcpu_b) {
		printf(", \"insns\": [");
		for (int i = 0; i < nvcpu_a; i++)
			printf("%s%llu", i ? ", " : "", ins_b[i] - ins_a[i]);
		printf("]");
	} else if (counter) {
		printf(", \"insns\": null");
	}
	printf("}\n");
	return 0;
}
