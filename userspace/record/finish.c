// SPDX-License-Identifier: MIT
/* The end of a recording: spans still open, the metadata, what tracing cost, the last
 * lines. */
#include "record/recording.h"
#include "analyze/report.h"
#include "util/util.h"
#include "tracer.skel.h"

#include <bpf/bpf.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL /* kernel 6.9: a pidfd for a thread */
#endif


/* The output as messages name it. */
static const char *trace_name(const struct recording *r)
{
	return strcmp(r->path, "-") ? r->path : "the trace to standard output";
}

/* A pidfd for thread tid of process pid, the key of its task storage. One for a thread other
 * than the main one needs PIDFD_THREAD (kernel 6.9); TRACER_NO_PIDFD_THREAD lets the tests
 * see an older kernel. */
static int thread_pidfd(int pid, int tid)
{
	if (tid != pid && getenv("TRACER_NO_PIDFD_THREAD")) {
		errno = EINVAL;
		return -1;
	}
	return syscall(SYS_pidfd_open, tid, tid == pid ? 0 : PIDFD_THREAD);
}

/* Ends each call of a thread's stack at the stop. */
static void end_open_calls(struct recording *r, int pid, int tid, const struct span_stack *st)
{
	for (__u32 k = 0; k < st->depth && k < MAX_FRAMES; k++) {
		const struct frame *f = &st->frames[k];
		struct span_capture_rec s = {
			.span = {
				.type = REC_SPAN,
				.probe_id = f->probe_id,
				.pid = pid,
				.tid = tid,
				.start_ns = f->start_ns,
				.end_ns = r->end,
				.depth = k,
				.flags = SPAN_INCOMPLETE | SPAN_CAPTURE,
			},
			.cap = f->cap,
		};
		consumer__handle(&r->consumer, &s, sizeof(s));
	}
}

/* Reads all of a record, or none at the end; -1 on an error. */
static ssize_t read_record(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -1 : (ssize_t)got;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* The open calls of the threads no pidfd can name (tids[], of pids[]; a kernel before 6.9),
 * read through the task iterator of bpf/open_calls.bpf.c: the same task storage, so the same
 * calls. False if the iterator could not run. */
static bool open_calls_by_iterator(struct recording *r, const int *pids, const int *tids, size_t n)
{
	struct bpf_link *link = bpf_program__attach_iter(r->skel->progs.open_calls, NULL);
	struct span_stack st;
	ssize_t got = 0;
	int fd = -1;

	if (link)
		fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		pr_debug("the task iterator: %s", strerror(link ? errno : -libbpf_get_error(link)));
		bpf_link__destroy(link);
		return false;
	}
	while ((got = read_record(fd, &st, sizeof(st))) == (ssize_t)sizeof(st))
		for (size_t i = 0; i < n; i++)
			if (tids[i] == (int)st.tid) {
				pr_debug("open calls of tid %d: read by the task iterator, depth %u",
					 tids[i], st.depth);
				end_open_calls(r, pids[i], tids[i], &st);
				break;
			}
	if (got)
		pr_debug("the task iterator: %s", got < 0 ? strerror(errno) : "a record cut short");
	close(fd);
	bpf_link__destroy(link);
	return got == 0;
}

/* Calls still in progress when recording stopped: their frames are still in task storage (or
 * the compat programs' hash). */
static void close_open_spans(struct recording *r)
{
	int map_fd = bpf_map__fd(r->skel->maps.stacks), *upids = NULL, *utids = NULL;
	size_t unread = 0;
	char path[64];

	for (size_t i = 0; i < r->consumer.npids; i++) {
		int pid = r->consumer.pids[i];
		struct dirent *de;
		DIR *d;

		snprintf(path, sizeof(path), "/proc/%d/task", pid);
		d = opendir(path);
		while (d && (de = readdir(d))) {
			struct span_stack st;
			int tid = atoi(de->d_name), fd, err;

			if (tid <= 0)
				continue;
			/* the compat programs' stacks are a hash by thread id (bpf/tracer.bpf.h) */
			if (r->compat) {
				if (!bpf_map_lookup_elem(map_fd, &tid, &st))
					end_open_calls(r, pid, tid, &st);
				continue;
			}
			fd = thread_pidfd(pid, tid);
			if (fd < 0) {
				pr_debug("open calls of tid %d: %s", tid, strerror(errno));
				if (errno == EINVAL) { /* not a thread gone meanwhile: the iterator's */
					upids = xrealloc(upids, unread + 1, sizeof(*upids));
					utids = xrealloc(utids, unread + 1, sizeof(*utids));
					upids[unread] = pid;
					utids[unread++] = tid;
				}
				continue;
			}
			err = bpf_map_lookup_elem(map_fd, &fd, &st) ? -errno : 0;
			pr_debug("open calls of tid %d: %s, depth %u", tid, err ? strerror(-err) : "read", err ? 0 : st.depth);
			if (!err)
				end_open_calls(r, pid, tid, &st);
			close(fd);
		}
		if (d)
			closedir(d);
	}
	if (unread && !open_calls_by_iterator(r, upids, utids, unread))
		pr_warn("the calls still in progress at the stop in %zu thread%s other than a main "
			"one are not in the trace: this kernel can neither open a thread's pidfd "
			"(PIDFD_THREAD, 6.9) nor run a BPF task iterator to read them (-v says why)",
			unread, plural_s(unread));
	free(upids);
	free(utids);
}

/* What the file is: tracer, the command line (cut at cmd_max bytes), the kernel, the clock and
 * its zero, the CPUs. At the start of the file and in its metadata. */
/* The kernel's id of this boot: with the host, says which machine and boot the times are of. */
static const char *boot_id(char *buf, size_t len)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

	buf[0] = 0;
	if (f) {
		if (!fgets(buf, (int)len, f))
			buf[0] = 0;
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = 0;
	return buf;
}

static cJSON *identity(const struct recording *r, size_t cmd_max)
{
	cJSON *m = cJSON_CreateObject();
	char *cmd = xcalloc(1, cmd_max + 1), num[32], boot[64];
	struct utsname u;

	for (int i = 0; i < cmdline_argc; i++)
		snprintf(cmd + strlen(cmd), cmd_max + 1 - strlen(cmd), "%s%s", i ? " " : "",
			 cmdline_argv[i]);
	uname(&u);
	cJSON_AddStringToObject(m, "tracer_version", TRACER_VERSION);
	cJSON_AddStringToObject(m, "command_line", cmd);
	cJSON_AddStringToObject(m, "host", u.nodename);
	cJSON_AddStringToObject(m, "boot_id", boot_id(boot, sizeof(boot)));
	cJSON_AddStringToObject(m, "kernel", u.release);
	cJSON_AddStringToObject(m, "clock", "CLOCK_MONOTONIC");
	/* exact integers: a double would round nanoseconds away */
	snprintf(num, sizeof(num), "%llu", (unsigned long long)r->t0);
	cJSON_AddRawToObject(m, "t0_monotonic_ns", num);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)r->t0_realtime);
	cJSON_AddRawToObject(m, "t0_realtime_ns", num);
	cJSON_AddNumberToObject(m, "cpus", sysconf(_SC_NPROCESSORS_ONLN));
	free(cmd);
	return m;
}

void recording__write_started(struct recording *r)
{
	cJSON *m = identity(r, 1024); /* the event fits a line: cut a long command line */
	char *s = cJSON_PrintUnformatted(m);
	size_t n = s ? strlen(s) : 0;

	if (n >= 2) {
		s[n - 1] = 0; /* its members, without the braces */
		trace_writer__started(r->writer, s + 1);
	}
	free(s);
	cJSON_Delete(m);
}

/* The packs that probed the targets: picked at the start, then as their libraries appeared. */
static void packs_used(const struct recording *r, char *buf, size_t len)
{
	snprintf(buf, len, "%s", r->packs_chosen);
	for (size_t k = 0; k < r->tracked.nlate; k++)
		if (r->tracked.late[k].picked)
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? ", " : "",
				 r->tracked.late[k].pack.name);
}

/* Says what turned on by itself, and how to turn it off: the automatic choice only. */
static void print_packs(const struct recording *r)
{
	char used[1024], safe[3 * sizeof(used)];

	if (!r->auto_packs)
		return;
	packs_used(r, used, sizeof(used));
	if (used[0])
		fprintf(stderr, "packs: %s, picked for the libraries the target maps (--no-pack NAME "
			"leaves one out)\n", printable(used, safe, sizeof(safe)));
	else
		fprintf(stderr, "packs: none (no pack's library was mapped%s)\n",
			r->opts->nno_packs ? ", or --no-pack left it out" : "");
	if (used[0] || r->tracked.attachment.nprobes)
		return;
	/* nothing probed: say how to find the target's own functions and probe them */
	if (r->tracked.ntargets && !r->launched)
		fprintf(stderr, "no functions probed: `tracer list -p %d` lists the ones it can "
			"probe; record them with -u CATEGORY:OBJECT:FUNCTION\n",
			r->tracked.targets[0].pid);
	else
		fprintf(stderr, "no functions probed: `tracer list %s` lists the ones it can "
			"probe; record them with -u CATEGORY:OBJECT:FUNCTION\n",
			r->opts->cmd ? printable(r->opts->cmd[0], safe, sizeof(safe)) : "PROGRAM");
}

static char *metadata_json(struct recording *r, const uint64_t *c)
{
	static const char *const counter_names[CNT_MAX] = {
		[CNT_LOST_SPAN] = "lost_spans",
		[CNT_LOST_SWITCH] = "lost_sched_switch",
		[CNT_LOST_WAKEUP] = "lost_sched_wakeup",
		[CNT_LOST_TASK] = "lost_task_events",
		[CNT_SPANS] = "spans",
		[CNT_SHORT_SPANS] = "spans_under_min_dur",
		[CNT_DEEP_FRAMES] = "calls_too_deep",
		[CNT_UNMATCHED_RETS] = "unmatched_returns",
		[CNT_STALE_FRAMES] = "incomplete_no_return",
		[CNT_EXIT_FRAMES] = "incomplete_thread_exit",
		[CNT_NO_STORAGE] = "no_task_storage",
		[CNT_LOST_PY] = "lost_python_reads",
		[CNT_PY_CHECKS] = "python_reads",
		[CNT_PY_READS] = "python_reads_changed",
		[CNT_PY_FAULTS] = "python_reads_unreadable",
		[CNT_PY_TRUNCATED] = "python_reads_too_deep",
		[CNT_PY_NS] = "python_read_ns",
		[CNT_PY_PROBE_NS] = "python_read_at_probes_ns",
		[CNT_SKIPPED_SCHED] = "skipped_sched_events",
		[CNT_SKIPPED_PROBES] = "skipped_probe_hits",
		[CNT_SCHED_GAPS] = "sched_state_unknown",
		[CNT_SHORT_PY_WAITS] = "python_waits_under_20us",
		[CNT_EXCEPTION_SPANS] = "spans_ended_by_exception",
		[CNT_TARGETS_FULL] = "processes_not_traced_map_full",
		[CNT_UNKNOWN_SITES] = "probe_hits_of_unknown_sites",
		[CNT_UNREPORTED_SWITCHES] = "sched_switches_unreported",
	};
	cJSON *m = identity(r, 4096), *a, *o;
	char *s;

	cJSON_AddNumberToObject(m, "duration_ns", r->end - r->t0);
	/* the trace's first part, while probes were still being attached: -d counts after it */
	if (r->started > r->t0)
		cJSON_AddNumberToObject(m, "setup_ns", r->started - r->t0);
	cJSON_AddStringToObject(m, "stop_reason", r->stop_reason);
	if (trace_writer__error(r->writer))
		cJSON_AddStringToObject(m, "write_error",
					"writing the trace failed; events after the last one in "
					"traceEvents, and the scheduler text, are missing");
	cJSON_AddStringToObject(m, "attach", attach__kind(&r->tracked.attachment));
	/* the programs for 5.10-5.16, or the full ones (record/kernel_check.h) */
	cJSON_AddStringToObject(m, "bpf_programs", r->compat ? "compat" : "full");
	cJSON_AddNumberToObject(m, "min_dur_ns", r->opts->min_dur_ns);
	if (r->auto_packs) {
		char used[1024], *save = NULL;

		packs_used(r, used, sizeof(used));
		a = cJSON_AddArrayToObject(m, "packs");
		for (char *p = strtok_r(used, ", ", &save); p; p = strtok_r(NULL, ", ", &save))
			cJSON_AddItemToArray(a, cJSON_CreateString(p));
	}
	/* every process traced: asked for, followed (--follow) or seen (-a) */
	a = cJSON_AddArrayToObject(m, "targets");
	for (size_t i = 0; i < r->consumer.npids; i++) {
		int pid = r->consumer.pids[i], k = tracked__find(&r->tracked, pid);
		const struct thread *main_thread = threads__find(&r->consumer.threads, pid);

		o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "pid", pid);
		cJSON_AddStringToObject(o, "comm", k >= 0		? r->tracked.targets[k].comm
						   : main_thread ? main_thread->name
								 : "");
		cJSON_AddBoolToObject(o, "followed", k < 0 || (size_t)k >= r->primary);
		cJSON_AddItemToArray(a, o);
	}
	a = cJSON_AddArrayToObject(m, "probes");
	for (size_t i = 0; i < r->tracked.probes.cnt; i++) {
		const struct probe *p = &r->tracked.probes.v[i];

		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "object", p->object);
		cJSON_AddStringToObject(o, "function", p->function);
		cJSON_AddStringToObject(o, "category", category__name(p->cat));
		cJSON_AddStringToObject(o, "name", p->name);
		cJSON_AddNumberToObject(o, "offset", p->offset);
		if (p->site != p->offset) { /* moved past single-stepped instructions */
			cJSON_AddNumberToObject(o, "site_offset", p->site);
			cJSON_AddStringToObject(o, "site_past", p->site_past);
		}
		/* where its calls end, probed instead of its return (C++ exceptions pass it) */
		if (p->nexits) {
			cJSON *x = cJSON_AddArrayToObject(o, "exit_offsets");
			size_t moved = 0;

			cJSON_AddNumberToObject(o, "exits", p->nexits);
			for (size_t k = 0; k < p->nexits; k++) {
				cJSON_AddItemToArray(x, cJSON_CreateNumber(p->exits[k].off));
				moved += p->exits[k].off != p->exits[k].ret;
			}
			if (moved) /* moved back from a `ret`: elf/site.h */
				cJSON_AddNumberToObject(o, "exits_moved", moved);
		}
		/* how it is attached, besides: a USDT note's site, or no return probe */
		if (p->cfg.flags & PROBE_USDT)
			cJSON_AddBoolToObject(o, "usdt", true);
		else if (p->cfg.flags & PROBE_ENTRY_ONLY)
			cJSON_AddBoolToObject(o, "entry_only", true);
		cJSON_AddItemToArray(a, o);
	}
	o = cJSON_AddObjectToObject(m, "counts");
	for (int k = 0; k < CNT_MAX; k++)
		cJSON_AddNumberToObject(o, counter_names[k], c[k]);
	overhead__add_json(&r->overhead, m);
	budget__add_json(r, m);
	py_record__add_json(&r->py, m, c);
	s = cJSON_PrintUnformatted(m);
	cJSON_Delete(m);
	return s;
}

enum insn_class recording__probe_class(const struct recording *r, const struct probe *p)
{
	for (size_t t = 0; t < r->tracked.ntargets; t++)
		for (size_t i = 0; i < r->tracked.targets[t].nobjs; i++) {
			const struct mapped_object *o = &r->tracked.targets[t].objs[i];
			struct stat st;

			if (o->dev != p->dev || o->ino != p->ino)
				continue;
			if (!access(o->open_path, R_OK))
				return insn__classify_site(o->open_path, p->site);
			/* the target is gone: its map_files too. Its path names that file unless
			 * it ran in another root (a container, a chroot) */
			if (!stat(o->path, &st) && st.st_ino == o->ino)
				return insn__classify_site(o->path, p->site);
		}
	return INSN_STEPPED;
}

/* BPF run time of tracer's programs, the trap time of the hits, and the targets' CPU time. */
static void finish_overhead(struct recording *r)
{
	uint64_t calls[INSN_CLASS_MAX] = { 0 }, c[CNT_MAX], exits = 0;
	struct bpf_program *prog;
	int other[16], fds[SPAN_PROGS];
	size_t nother = 0;

	uint64_t short_waits;

	recording__read_counters(r, c);
	short_waits = c[CNT_SHORT_PY_WAITS];
	for (size_t i = 0; i < r->tracked.probes.cnt && i < r->ncalls; i++) {
		const struct probe *p = &r->tracked.probes.v[i];

		if (!r->calls_per_probe[i])
			continue;
		calls[recording__probe_class(r, p)] += r->calls_per_probe[i];
		/* its exits are plain probes too: charged as such (an exception reaches none) */
		if (p->nexits) {
			calls[p->exits_cls] += r->calls_per_probe[i];
			exits += r->calls_per_probe[i];
		}
	}
	/* the interpreter's short waits were hit (entry and return) but left no span: charged at
	 * the site of the first such probe */
	for (size_t i = 0; i < r->tracked.probes.cnt && short_waits; i++)
		if (r->tracked.probes.v[i].cfg.flags & PROBE_PY_WAIT) {
			calls[recording__probe_class(r, &r->tracked.probes.v[i])] += short_waits;
			break;
		}
	bpf_object__for_each_program(prog, r->skel->obj) {
		/* the Python reads on ticks and switches are counted by BPF itself (below) */
		if (prog == r->skel->progs.span_enter || prog == r->skel->progs.span_exit ||
		    prog == r->skel->progs.span_exit_at ||
		    prog == r->skel->progs.py_on_tick || prog == r->skel->progs.py_on_switch ||
		    prog == r->skel->progs.open_calls || /* run by tracer at the stop */
		    bpf_program__fd(prog) < 0 || nother == sizeof(other) / sizeof(other[0]))
			continue;
		other[nother++] = bpf_program__fd(prog);
	}
	recording__span_prog_fds(r, fds);
	overhead__finish(&r->overhead, fds, other, nother, calls, exits, r->returns + short_waits);
	recording__read_counters(r, c);
	r->overhead.python_ns = c[CNT_PY_NS] - c[CNT_PY_PROBE_NS];
}

/* Detach, recording__drain, close what is open, write the end of the file, print the summary. */
#define SUMMARY_READ_BACK_MAX (64ll << 20) /* a bigger file: the live estimate */

/* The summary: spans and threads as recorded; the stages and the verdict by tracer report's
 * code on the file just written, so that both say the same of it. A file that cannot be read
 * back (standard output) or is too big to read at once gets the live estimate. */
static void print_summary(struct recording *r, const uint64_t *counters)
{
	struct report_opts o = { .path = r->path, .by = BY_NAME, .top = -1 };
	struct report rep;
	struct stat st;
	char err[512];
	bool exact = strcmp(r->path, "-") && !stat(r->path, &st) && S_ISREG(st.st_mode) &&
		     st.st_size < SUMMARY_READ_BACK_MAX;

	/* the ring buffers are drained for good: their pages go before the file is read */
	rings__free(&r->rings);
	if (exact && report__run(&rep, &o, err, sizeof(err))) {
		pr_debug("reading %s back: %s", r->path, err);
		report__free(&rep);
		exact = false;
	}
	summary__print(stderr, &r->consumer.summary, &r->consumer.threads, r->end - r->t0,
		       counters, exact ? &rep : NULL);
	if (exact)
		report__free(&rep);
}

/* Without --follow, child processes that did the work are named: the verdict cannot see them. */
static void print_busy_children(struct recording *r)
{
	int *pids;

	if (r->opts->follow || r->opts->system_wide)
		return;
	pids = recording__primary_pids(r);
	children__print(&r->children, pids, r->primary, r->end - r->t0, stderr);
	free(pids);
}

/* A -u spec whose object was never loaded while recording: one line, at the end. */
static void warn_never_matched(const struct recording *r)
{
	const struct probe_specs *specs = &r->opts->specs;
	const struct probe_table *probes = &r->tracked.probes;
	bool *used = xcalloc(specs->cnt + 1, sizeof(*used));

	/* one pass over the probes, not one per spec (a pack of 10,000: 10,000 of each) */
	for (size_t i = 0; i < probes->cnt; i++) {
		const struct probe_spec *spec = probes->v[i].spec;

		if (spec >= specs->v && spec < specs->v + specs->cnt) /* not a pack's */
			used[spec - specs->v] = true;
	}
	for (size_t s = 0; s < specs->cnt; s++) {
		if (!used[s] && !specs->v[s].optional)
			pr_warn("%s matched nothing while recording: no object '%s' with '%s' was "
				"loaded (see tracer list -p PID)", specs->v[s].origin,
				specs->v[s].object, specs->v[s].function);
	}
	free(used);
}

int recording__finish(struct recording *r)
{
	uint64_t counters[CNT_MAX];
	char *meta;
	int err;

	/* paused stays paused: nothing new is recorded either way */
	/* The recording ends here: from now on the BPF programs record nothing (no span, switch,
	 * wake-up or Python read), while the links close, which can take a while in the kernel;
	 * the calls still open end at r->end, read from task storage. Every producer is gone
	 * before the drain: a busy target's context switches would otherwise keep a slow reader
	 * draining for as long as the load lasts */
	deadline__stop(&r->deadline);
	r->skel->bss->phase = PHASE_DETACHING;
	/* -d's end as the deadline thread made it, however late the loop saw it */
	r->end = deadline__ended(&r->deadline) ?: now_ns();
	attach__detach(&r->tracked.attachment);
	for (size_t i = 0; i < r->nsched; i++)
		bpf_link__destroy(r->sched_links[i]);
	r->nsched = 0;
	py_record__stop(&r->py);
	recording__drain(r);
	close_open_spans(r);
	py_record__finish(&r->py, r->end);
	recording__read_counters(r, counters);
	recording__mark_losses(r, r->end, counters);
	finish_overhead(r);
	threads__finish(&r->consumer.threads, r->end);
	meta = metadata_json(r, counters);
	err = trace_writer__close(r->writer, r->end, r->stop_reason, meta ? meta : "{}");
	r->writer = NULL;
	free(meta);
	if (err) {
		pr_err("writing %s failed: %s; recording stopped there (the file ends at the last "
		       "event that fit%s)", trace_name(r), strerror(-err),
		       strstr(r->path, ".gz") ? "; a .gz file may be cut short" : " and is valid");
		return err;
	}
	warn_never_matched(r);
	if (r->opts->top) { /* the live view was the summary */
		if (r->opts->output)
			pr_info("wrote %s (stopped: %s)", trace_name(r), r->stop_reason);
		return 0;
	}
	if (verbosity >= VERB_NORMAL) {
		print_summary(r, counters);
		print_busy_children(r);
	}
	if (verbosity >= VERB_NORMAL)
		overhead__print(stderr, &r->overhead);
	if (verbosity >= VERB_NORMAL)
		budget__print(r, stderr);
	if (verbosity >= VERB_NORMAL)
		/* the CPU time is the asked-for targets': no share when others were traced too */
		py_record__print(&r->py, stderr, counters,
				 r->consumer.npids == r->primary ? r->overhead.target_cpu_ns : 0);
	if (verbosity >= VERB_NORMAL)
		print_packs(r);
	pr_info("wrote %s (stopped: %s); open it in ui.perfetto.dev or chrome://tracing",
		trace_name(r), r->stop_reason);
	return 0;
}
