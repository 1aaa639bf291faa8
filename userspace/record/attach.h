/* SPDX-License-Identifier: MIT */
/* Attaching the span programs to the resolved sites: one uprobe_multi link per site and
 * direction where the kernel has them (fast to attach and to detach), else one tracefs uprobe
 * event per site and direction (record/probe_events.h), else one perf-event uprobe per
 * function. */
#ifndef TRACER_ATTACH_H
#define TRACER_ATTACH_H

#include "probe/resolve.h"
#include "record/probe_events.h"

#include <pthread.h>
#include <stdbool.h>

/* BPF_TRACE_UPROBE_MULTI (kernel 6.6): libbpf 1.1's headers predate it. */
#define TRACE_UPROBE_MULTI 48

struct bpf_program;
struct bpf_link;

/* What one uprobe_multi link (or tracefs event) holds: enough to make it again without some of
 * its probes. */
struct link_range {
	int prog_fd;
	int pid;
	char *path;
	uint64_t *offsets, *cookies, *ref_ctr_offsets; /* ref_ctr_offsets may be NULL */
	size_t cnt;
	struct probe_event ev; /* by_event: the link is this event's (else its name is empty) */
};

struct attachment {
	bool multi;
	bool by_event;	  /* no uprobe_multi: a tracefs event's link in place of each */
	int sites_map_fd; /* by_event: BPF's probe_sites, the probe id of each site */
	int *link_fds; /* uprobe_multi links (-1: closed, every probe in it shed) */
	bool *link_is_return;
	struct link_range *ranges; /* what each holds */
	size_t nfds;
	struct bpf_link **links; /* the per-probe fallback (NULL: shed) */
	uint64_t *link_cookies;	 /* the probe id of each */
	int *link_pids;		 /* the process of each (0: every process) */
	size_t nlinks;
	size_t nprobes; /* functions attached, counted once per process */
	struct bpf_program *usdt_end;
	struct bpf_program *at_exit; /* a function's exits (probe/resolve.h: at_exit sites) */
	struct refused_probe *refused; /* functions the kernel would not probe, left out */
	size_t nrefused;
	pthread_t *closers; /* threads closing links (see retire in attach.c) */
	size_t nclosers;
};

/* A function whose uprobe the kernel refused (an instruction it cannot single-step or emulate:
 * ENOTSUPP, EINVAL), found by halving the site's link: the rest is attached without it. */
struct refused_probe {
	uint64_t cookie; /* its probe id */
	int err;	 /* -errno */
	bool ret;	 /* its return probe (the entry is refused for the same reason) */
};

/* One uprobe_multi link (raw BPF_LINK_CREATE: libbpf 1.1 has no API for it) for cnt offsets
 * in path; cookies may be NULL; pid 0 for every process. The link fd, or -1 with errno set. */
int attach__uprobe_multi(int prog_fd, const char *path, const uint64_t *offsets,
			 const uint64_t *cookies, size_t cnt, int pid, bool ret);
/* The same with USDT semaphores: the kernel raises the counter at each ref_ctr_offsets[i] (a
 * file offset) while the probe is attached; may be NULL. */
int attach__uprobe_multi_ref(int prog_fd, const char *path, const uint64_t *offsets,
			     const uint64_t *ref_ctr_offsets, const uint64_t *cookies, size_t cnt,
			     int pid, bool ret);

/* Whether this kernel creates uprobe_multi links. Decide before loading: the programs must be
 * loaded with the matching expected attach type. */
bool attach__multi_supported(void);

/* "uprobe_multi", "uprobe_events" or "uprobe" (per function): the trace's metadata. */
const char *attach__kind(const struct attachment *a);

/* Raises the open-file limit by more descriptors (the per-function fallback's links). */
void attach__enough_fds(size_t more);

/* Attaches returns first, then entries, so that every recorded entry has its return. Adds to
 * what is attached already; on an error, what was attached stays (attach__detach ends it).
 * Functions the kernel refuses one by one go to a->refused; any other failure is an error. */
int attach__sites(struct attachment *a, const struct attach_sites *sites,
		  struct bpf_program *enter, struct bpf_program *exit, char *err, size_t errlen);
/* Stops probing the functions whose probe id is marked in shed[0..nids). A uprobe_multi link
 * (or tracefs event) that holds one is made again without them, returns before entries, and only then is the old
 * one closed (an old return link 200 ms later, for the calls entered before the new one): the
 * functions kept are never unprobed (a hit while both links stand reaches both programs, and
 * BPF counts it once: COOKIE_ODD_LINK). A link that cannot be made again leaves the old one in
 * place. Links close off this thread. Returns how many probe ids are gone. */
size_t attach__shed(struct attachment *a, const bool *shed, size_t nids);
/* The programs of USDT end sites (usdt_end) and of functions' exits (at_exit); without one,
 * those sites are skipped. */
void attach__set_programs(struct attachment *a, struct bpf_program *usdt_end,
			  struct bpf_program *at_exit);

/* Closes the links of process pid (one that exited, or whose old program an exec replaced), off
 * this thread, and forgets them. */
void attach__release_pid(struct attachment *a, int pid);

/* Closes every link, all at once (returns, then entries, each its own thread), and waits for
 * the kernel to let go of them, for a few seconds at most: then says so and returns. */
void attach__detach(struct attachment *a);

#endif
