/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The EPIOCSPARAMS/EPIOCGPARAMS ABI (Linux 6.9+, fs/eventpoll.c).
 *
 * Defined here under our own names instead of taken from
 * <linux/eventpoll.h>: older kernel headers (Debian 12, EL9) lack it, and
 * that header clashes with <sys/epoll.h> and <fcntl.h>.  The ABI is fixed:
 * an 8-byte struct, ioctl type 0x8A, numbers 1 (set) and 2 (get).
 */
#ifndef IRQTUNE_EPOLL_PARAMS_H
#define IRQTUNE_EPOLL_PARAMS_H

#include <stdint.h>
#include <sys/ioctl.h>

struct irqtune_epoll_params {
	uint32_t busy_poll_usecs;	/* <= INT32_MAX */
	uint16_t busy_poll_budget;	/* > 64 needs CAP_NET_ADMIN */
	uint8_t prefer_busy_poll;	/* 0 or 1 */
	uint8_t pad;			/* must be zero */
};

_Static_assert(sizeof(struct irqtune_epoll_params) == 8,
	       "struct epoll_params is 8 bytes");

#define IRQTUNE_EPIOCSPARAMS _IOW(0x8A, 0x01, struct irqtune_epoll_params)
#define IRQTUNE_EPIOCGPARAMS _IOR(0x8A, 0x02, struct irqtune_epoll_params)

#endif
