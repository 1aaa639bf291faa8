/* SPDX-License-Identifier: MIT */
/* Where the kernel has no uprobe_multi (before 6.6): the functions of a site on one uprobe event
 * of tracefs a direction, a multi-probe event, opened as one perf event with one BPF link. A link
 * per function instead waits for the kernel's grace periods six times as it closes, one link
 * after another: 100 s for 1,000 functions, against a fraction of a second for one event. The
 * event's one cookie is COOKIE_BY_SITE: BPF finds the probe id by the hit's address. */
#ifndef TRACER_PROBE_EVENTS_H
#define TRACER_PROBE_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct probe_event {
	int link_fd, perf_fd;
	char name[32];	  /* eN, in the group tracer_PID (tracer's pid) */
	int sites_fd;	  /* BPF's probe_sites: the probe id of each of its offsets */
	uint32_t id;	  /* its tracepoint id */
	uint64_t *offsets; /* (entries only: a return needs no probe id) */
	size_t cnt;
};

/* Whether tracefs's uprobe_events can be written (mounting tracefs where it is not); the first
 * call also removes the events that tracers no longer running left behind. */
bool probe_events__supported(void);

/* One event for cnt offsets of path (ref_ctr_offsets: USDT semaphores, may be NULL), entries or
 * returns, probed in process pid (0: in every process), linked to prog_fd with link_cookie. The
 * probe id of each entry offset, (uint32_t)cookies[i], goes to sites_fd first (-1: none). 0 with
 * ev filled; else -errno, the event gone again (-ENOTSUPP, -EINVAL: the kernel refused one of
 * the functions, as uprobe_multi would). */
int probe_events__open(struct probe_event *ev, int prog_fd, int sites_fd, const char *path,
		       const uint64_t *offsets, const uint64_t *ref_ctr_offsets,
		       const uint64_t *cookies, size_t cnt, int pid, bool ret, uint64_t link_cookie);

/* Closes the link and the perf event (the kernel unprobes the functions), then removes the
 * event and its sites. */
void probe_events__close(struct probe_event *ev);

#endif
