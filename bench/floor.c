// SPDX-License-Identifier: MIT
/* The floor of the benchmarks: EMPTY BPF programs on a uprobe and a uretprobe of each function,
 * attached the way tracer attaches (one uprobe_multi link per direction, returns first; one
 * perf-event uprobe per function with TRACER_NO_UPROBE_MULTI=1 or on kernels without it; -t:
 * tracer's tracefs events).
 * Whatever tracer costs beyond this is tracer's own. Closing the per-function links, it sets
 * /sys/kernel/rcu_expedited meanwhile, as tracer does (record/expedite.c).
 *
 * Usage: floor -p PID {-f FUNC[,FUNC...] | -o OFF[,OFF...] | -u OFF[,OFF...]} [-x OBJECT]
 *              [-e] [-c] [-k | -s] [-t]
 *   -x OBJECT  the ELF file the functions are in (default /proc/PID/exe)
 *   -o OFF,..  functions by file offset (decimal or 0x), as -f: the sites tracer chose, from
 *              a trace's metadata (bench/frameworks.py)
 *   -u OFF,..  plain uprobes, no return probe, at these file offsets: the entries and exits of
 *              functions tracer probes at their exits (C++), and its entry-only probes
 *   -a         probes for every process mapping the object, as tracer's --follow has them (the
 *              children the target forks); it still runs until PID exits (uprobe_multi only)
 *   -t         every function on one event of tracefs's uprobe_events a direction (a multi-probe
 *              event, kernel 5.5+), one perf tracepoint event and link each, as tracer does
 *              without uprobe_multi (record/probe_events.c)
 *   -e         entry probes only
 *   -c         count hits (turns on the kernel's BPF run-time statistics, which cost a little)
 *   -k         programs that read the clock once each: the time stamps any span needs
 *   -s         the least span program (least_span.bpf.c): a clock read and the thread's task
 *              storage at each end, one ring record at the return, the ring read every 10 ms;
 *              prints "spans N" (the records read) on stdout at the end
 * Prints "floor: attached N probes (MECHANISM)" on stderr, runs until SIGINT/SIGTERM or the
 * target exits, and with -c prints "entry_hits N return_hits M" on stdout. */
#include "record/attach.h"
#include "record/expedite.h"
#include "elf/elf_syms.h"
#include "record/overhead.h"
#include "record/probe_events.h"
#include "util/util.h"
#include "least_span.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/bpf.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

/* -t: the functions as one tracefs event a direction (record/probe_events.c, as tracer without
 * uprobe_multi), returns first: ev[1] and ev[0]. */
static int tracefs_attach(const struct empty_probes *e, const char *path, const uint64_t *offsets,
			  size_t cnt, int pid, bool ret, struct probe_event *ev)
{
	if (!probe_events__supported())
		return -ENOENT;
	return probe_events__open(ev, e->prog_fd[ret], -1, path, offsets, NULL, offsets, cnt, pid,
				  ret, 0);
}

static void tracefs_detach(struct probe_event ev[2])
{
	for (int ret = 1; ret >= 0; ret--)
		if (ev[ret].link_fd >= 0)
			probe_events__close(&ev[ret]);
}

static int resolve(const char *path, char *list, uint64_t **offsets, size_t *cnt)
{
	struct elf_syms *syms = NULL;
	char *save = NULL;
	int err;

	err = elf_syms__open(path, &syms);
	if (err) {
		fprintf(stderr, "floor: cannot read %s: %s\n", path, strerror(-err));
		return err;
	}
	for (char *f = strtok_r(list, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
		const struct elf_sym *s = elf_syms__find(syms, f);

		if (!s) {
			fprintf(stderr, "floor: no function %s in %s\n", f, path);
			err = -ENOENT;
			break;
		}
		*offsets = xrealloc(*offsets, *cnt + 1, sizeof(uint64_t));
		(*offsets)[(*cnt)++] = s->offset;
	}
	elf_syms__free(syms);
	return err;
}

/* A list of file offsets, appended to *offsets. */
static int parse_offsets(char *list, uint64_t **offsets, size_t *cnt)
{
	char *save = NULL, *end;

	for (char *o = strtok_r(list, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
		errno = 0;
		*offsets = xrealloc(*offsets, *cnt + 1, sizeof(uint64_t));
		(*offsets)[(*cnt)++] = strtoull(o, &end, 0);
		if (errno || *end || end == o) {
			fprintf(stderr, "floor: not a file offset: %s\n", o);
			return -EINVAL;
		}
	}
	return 0;
}

static uint64_t nspans;

static int count_span(void *ctx, void *data, size_t size)
{
	nspans++;
	return 0;
}

#define RING_BYTES (8u << 20) /* a CPU's: tracer's default for all of them, at least */

/* -s: the least span program loaded, its two programs in e (duplicates: the skeleton closes
 * its own), its rings made, one a CPU, and a reader of them. */
static int least_span_open(struct least_span_bpf **skel, struct ring_buffer **rb,
			   struct empty_probes *e, bool multi)
{
	int ncpu = libbpf_num_possible_cpus(), err;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	*skel = least_span_bpf__open();
	if (!*skel)
		return -errno;
	bpf_map__set_max_entries((*skel)->maps.rings, ncpu);
	if (multi) {
		bpf_program__set_expected_attach_type((*skel)->progs.least_enter,
						      TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type((*skel)->progs.least_exit,
						      TRACE_UPROBE_MULTI);
	}
	err = least_span_bpf__load(*skel);
	if (err)
		return err;
	e->multi = multi;
	e->prog_fd[0] = dup(bpf_program__fd((*skel)->progs.least_enter));
	e->prog_fd[1] = dup(bpf_program__fd((*skel)->progs.least_exit));
	for (int cpu = 0; cpu < ncpu; cpu++) {
		int fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, NULL, 0, 0, RING_BYTES, NULL);

		if (fd < 0 || bpf_map_update_elem(bpf_map__fd((*skel)->maps.rings), &cpu, &fd, 0))
			return -errno;
		if (!*rb)
			*rb = ring_buffer__new(fd, count_span, NULL, NULL);
		else if (ring_buffer__add(*rb, fd, count_span, NULL))
			return -errno;
		if (!*rb)
			return -errno;
		close(fd); /* the outer map and the reader hold it */
	}
	return 0;
}

#define USAGE "usage: floor -p PID {-f FUNC[,FUNC...] | -o OFF[,...] | -u OFF[,...]} " \
	      "[-x OBJECT] [-a] [-e] [-c] [-k | -s] [-t]\n"

int main(int argc, char **argv)
{
	char exe[64], *funcs = NULL, *func_offsets = NULL, *plain = NULL;
	const char *path = NULL;
	bool entry_only = false, count = false, clock = false, tracefs = false, all = false;
	bool least = false;
	struct least_span_bpf *skel = NULL;
	struct ring_buffer *rb = NULL;
	struct probe_event tev[2] = { { .link_fd = -1 }, { .link_fd = -1 } };
	char real[PATH_MAX];
	struct empty_probes e = { .prog_fd = { -1, -1 } };
	struct expedite x = { 0 };
	uint64_t *offsets = NULL, *plain_offsets = NULL, runs[2] = { 0, 0 }, ns;
	int pid = 0, opt, err, stats_fd = -1, pidfd = -1, sigfd, n;
	struct pollfd pfd[2];
	size_t cnt = 0, nplain = 0;
	sigset_t mask;

	while ((opt = getopt(argc, argv, "p:f:o:u:x:aeckst")) != -1) {
		switch (opt) {
		case 'p':
			pid = atoi(optarg);
			break;
		case 'f':
			funcs = optarg;
			break;
		case 'o':
			func_offsets = optarg;
			break;
		case 'u':
			plain = optarg;
			break;
		case 'x':
			path = optarg;
			break;
		case 'a':
			all = true;
			break;
		case 'e':
			entry_only = true;
			break;
		case 'c':
			count = true;
			break;
		case 'k':
			clock = true;
			break;
		case 's':
			least = true;
			break;
		case 't':
			tracefs = true;
			break;
		default:
			fprintf(stderr, USAGE);
			return 2;
		}
	}
	if (pid <= 0 || (!funcs && !func_offsets && !plain) || ((plain || all) && tracefs) ||
	    (clock && least)) {
		fprintf(stderr, USAGE);
		return 2;
	}
	snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
	if (!path)
		path = exe;
	if ((funcs && resolve(path, funcs, &offsets, &cnt)) ||
	    (func_offsets && parse_offsets(func_offsets, &offsets, &cnt)) ||
	    (plain && parse_offsets(plain, &plain_offsets, &nplain)))
		return 1;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sigfd = signalfd(-1, &mask, SFD_CLOEXEC);
	pidfd = syscall(SYS_pidfd_open, pid, 0);
	if (count) {
		stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (stats_fd < 0) {
			fprintf(stderr, "floor: cannot enable BPF statistics: %s\n", strerror(errno));
			return 1;
		}
	}
	/* uprobe_events wants the file's own path: /proc/PID/exe is a link to it */
	if (tracefs && !realpath(path, real)) {
		fprintf(stderr, "floor: cannot resolve %s: %s\n", path, strerror(errno));
		return 1;
	}
	err = least   ? least_span_open(&skel, &rb, &e, !tracefs && attach__multi_supported())
	      : clock ? empty_probes__open_clock(&e, !tracefs && attach__multi_supported())
		      : empty_probes__open(&e, !tracefs && attach__multi_supported());
	if (!err && all && !e.multi) {
		fprintf(stderr, "floor: -a needs uprobe_multi (kernel 6.6 on)\n");
		empty_probes__close(&e);
		return 1;
	}
	if (!err && !e.multi && !tracefs) /* as tracer: two descriptors a link */
		attach__enough_fds(4 * (cnt + nplain));
	if (!err && !entry_only && cnt)
		err = tracefs ? tracefs_attach(&e, real, offsets, cnt, pid, true, &tev[1])
			      : empty_probes__attach(&e, path, offsets, cnt, all ? 0 : pid, true);
	if (!err && cnt)
		err = tracefs ? tracefs_attach(&e, real, offsets, cnt, pid, false, &tev[0])
			      : empty_probes__attach(&e, path, offsets, cnt, all ? 0 : pid, false);
	if (!err && nplain)
		err = empty_probes__attach(&e, path, plain_offsets, nplain, all ? 0 : pid, false);
	if (err) {
		fprintf(stderr, "floor: cannot attach to %s in pid %d: %s\n", path, pid,
			strerror(-err));
		if (tracefs)
			tracefs_detach(tev);
		empty_probes__close(&e);
		return 1;
	}
	fprintf(stderr, "floor: attached %zu probes (%s); recording\n", cnt + nplain,
		tracefs ? "one tracefs event a direction" : e.multi ? "uprobe_multi"
								    : "uprobe per function");
	pfd[0] = (struct pollfd){ .fd = sigfd, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = pidfd, .events = POLLIN };
	/* (the ring, without a wake-up a record, is read every 10 ms) */
	while ((n = poll(pfd, 2, rb ? 10 : -1)) <= 0) {
		if (rb)
			ring_buffer__consume(rb);
		if (n < 0 && errno != EINTR)
			break;
	}
	if (count) {
		overhead__prog_stats(e.prog_fd[0], &runs[0], &ns);
		overhead__prog_stats(e.prog_fd[1], &runs[1], &ns);
		printf("entry_hits %llu return_hits %llu\n", (unsigned long long)runs[0],
		       (unsigned long long)runs[1]);
		close(stats_fd);
	}
	if (!e.multi && !tracefs) /* closed the way tracer closes them (attach__detach) */
		expedite__begin(&x, "floor");
	if (tracefs)
		tracefs_detach(tev);
	empty_probes__close(&e);
	expedite__end(&x);
	if (rb) {
		ring_buffer__consume(rb);
		printf("spans %llu\n", (unsigned long long)nspans);
	}
	ring_buffer__free(rb);
	least_span_bpf__destroy(skel);
	free(offsets);
	free(plain_offsets);
	return 0;
}
