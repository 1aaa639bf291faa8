// SPDX-License-Identifier: MIT
#include "record.h"
#include "attach.h"
#include "consumer.h"
#include "launch.h"
#include "resolve.h"
#include "target.h"
#include "trace_file.h"
#include "trace_writer.h"
#include "util.h"
#include "tracer.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define TRACE_UPROBE_MULTI 48
#define POLL_MS 10 /* the reader's timer; BPF wakes it earlier when the ring fills */
#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

struct recording {
	struct record_opts *opts;
	struct target *targets;
	size_t ntargets;
	int *pids;
	struct probe_table probes;
	struct attach_sites sites;
	struct attachment attachment;
	struct tracer_bpf *skel;
	struct bpf_link **sched_links;
	size_t nsched;
	pid_t launched; /* launch mode: the command's pid */
	struct ring_buffer *rb;
	struct trace_writer *writer;
	struct consumer consumer;
	char path[PATH_MAX];
	uint64_t t0, t0_realtime, end;
	const char *stop_reason;
	int epfd, sigfd, timerfd;
	char err[1024];
};

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* libbpf's warnings include whole verifier logs: our own one-line errors say what
	 * failed, and -v shows libbpf's detail. */
	if (verbosity < VERB_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int open_targets(struct recording *r)
{
	struct record_opts *o = r->opts;

	r->targets = xcalloc(o->npids, sizeof(*r->targets));
	r->pids = xcalloc(o->npids, sizeof(int));
	for (size_t i = 0; i < o->npids; i++) {
		for (size_t k = 0; k < i; k++)
			if (o->pids[k] == o->pids[i]) {
				pr_err("pid %d is given twice", o->pids[i]);
				return -EINVAL;
			}
		if (target__open(o->pids[i], &r->targets[i], r->err, sizeof(r->err))) {
			pr_err("%s", r->err);
			return -ESRCH;
		}
		r->pids[i] = o->pids[i];
		r->ntargets++;
	}
	return 0;
}

static bool pack_applies(const struct probe_pack *pack, const struct recording *r)
{
	for (size_t t = 0; t < r->ntargets; t++)
		for (size_t i = 0; i < r->targets[t].nobjs; i++)
			for (size_t w = 0; w < pack->when_cnt; w++)
				if (!fnmatch(pack->when_maps[w], r->targets[t].objs[i].base, 0))
					return true;
	return false;
}

/* -P packs, or with no -u/-P every pack whose "when" matches a target. */
static int choose_specs(struct recording *r)
{
	struct record_opts *o = r->opts;
	char path[PATH_MAX], chosen[512] = "";
	struct probe_pack pack, *all = NULL;
	int n;

	for (size_t i = 0; i < o->npacks; i++) {
		if (probe_pack__find(o->packs[i], path, sizeof(path))) {
			pr_err("no probe pack '%s' (in %s); see the packs there or give a path",
			       o->packs[i], probe_pack__dir());
			return -ENOENT;
		}
		if (probe_pack__load(path, &pack, &o->specs, r->err, sizeof(r->err))) {
			pr_err("%s", r->err);
			return -EINVAL;
		}
		probe_pack__free(&pack);
	}
	if (o->specs.cnt)
		return 0;
	n = probe_pack__list(&all);
	for (int i = 0; i < n; i++) {
		if (pack_applies(&all[i], r) &&
		    !probe_pack__load(all[i].path, &pack, &o->specs, r->err, sizeof(r->err))) {
			snprintf(chosen + strlen(chosen), sizeof(chosen) - strlen(chosen), "%s%s",
				 chosen[0] ? ", " : "", pack.name);
			probe_pack__free(&pack);
		}
		probe_pack__free(&all[i]);
	}
	free(all);
	if (chosen[0])
		pr_info("probe packs matching the target: %s", chosen);
	else
		pr_warn("no probe pack matches the target and no -u/-P given: recording the "
			"scheduler only (see -u)");
	return 0;
}

/* Opens and loads the BPF object. The probe table is sized to the resolved probes, or to its
 * maximum when they are not known yet (launch mode loads before the command's libraries are
 * mapped). */
static int load_bpf(struct recording *r)
{
	struct record_opts *o = r->opts;
	uint32_t rb_size = o->buffer_mb << 20;
	struct tracer_bpf *skel;
	int err;

	skel = tracer_bpf__open();
	if (!skel) {
		pr_err("cannot open the BPF object: %s", strerror(errno));
		return -errno;
	}
	r->skel = skel;
	skel->rodata->min_dur_ns = o->min_dur_ns;
	skel->rodata->wakeup_bytes = rb_size / 4;
	skel->rodata->launch_pid = r->launched;
	bpf_map__set_max_entries(skel->maps.events, rb_size);
	bpf_map__set_max_entries(skel->maps.probe_cfgs,
				 r->launched ? MAX_PROBES : r->probes.cnt ? r->probes.cnt : 1);
	if (r->attachment.multi) {
		bpf_program__set_expected_attach_type(skel->progs.span_enter, TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.span_exit, TRACE_UPROBE_MULTI);
	}
	bpf_program__set_autoload(skel->progs.stop_at_entry, r->launched != 0);
	if (o->no_sched) {
		bpf_program__set_autoload(skel->progs.on_switch, false);
		bpf_program__set_autoload(skel->progs.on_waking, false);
		bpf_program__set_autoload(skel->progs.on_wakeup, false);
		bpf_program__set_autoload(skel->progs.on_wakeup_new, false);
	}
	err = tracer_bpf__load(skel);
	if (err)
		pr_err("cannot load the BPF programs: %s (run with -v for the verifier's log)",
		       strerror(-err));
	return err;
}

/* The traced processes and what each probe captures. */
static int fill_maps(struct recording *r)
{
	struct tracer_bpf *skel = r->skel;

	if (r->probes.cnt > bpf_map__max_entries(skel->maps.probe_cfgs)) {
		pr_err("%zu functions to probe: at most %u; narrow the -u patterns", r->probes.cnt,
		       bpf_map__max_entries(skel->maps.probe_cfgs));
		return -E2BIG;
	}
	for (size_t i = 0; i < r->ntargets; i++) {
		__u32 pid = r->pids[i];
		__u8 one = 1;

		bpf_map__update_elem(skel->maps.targets, &pid, sizeof(pid), &one, 1, BPF_ANY);
	}
	for (__u32 id = 0; id < r->probes.cnt; id++) {
		struct probe_cfg cfg = r->probes.v[id].cfg;

		if (r->opts->no_args)
			cfg.flags &= ~(PROBE_ARGS | PROBE_RET | PROBE_NAME_FROM);
		bpf_map__update_elem(skel->maps.probe_cfgs, &id, sizeof(id), &cfg, sizeof(cfg),
				     BPF_ANY);
	}
	return 0;
}

/* Launch mode: start the command held at its exec, load the programs, let it run to its entry
 * point (libraries mapped, none of its code run) and stop it there. */
static int launch(struct recording *r)
{
	struct record_opts *o = r->opts;
	LIBBPF_OPTS(bpf_uprobe_opts, uo);
	struct bpf_link *stop;
	uint64_t entry;
	char exe[64];
	int err;

	err = launch__start(o->cmd, &r->launched, r->err, sizeof(r->err));
	if (err) {
		pr_err("%s", r->err);
		return err;
	}
	err = launch__entry_offset(r->launched, &entry);
	if (err) {
		pr_err("cannot find the entry point of %s: %s", o->cmd[0], strerror(-err));
		return err;
	}
	err = load_bpf(r);
	if (err)
		return err;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", r->launched);
	stop = bpf_program__attach_uprobe_opts(r->skel->progs.stop_at_entry, r->launched, exe,
					       entry, &uo);
	if (!stop) {
		pr_err("cannot stop %s at its entry point: %s", o->cmd[0], strerror(errno));
		return -errno;
	}
	err = launch__run_to_entry(r->launched, r->err, sizeof(r->err));
	bpf_link__destroy(stop);
	if (err) {
		pr_err("%s", r->err);
		r->launched = 0; /* reaped */
		return err;
	}
	o->pids = xrealloc(o->pids, 1, sizeof(int));
	o->pids[0] = r->launched;
	o->npids = 1;
	return 0;
}

static int attach_sched(struct recording *r)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, r->skel->obj) {
		struct bpf_link *l;

		if (!bpf_program__autoload(prog) ||
		    bpf_program__type(prog) != BPF_PROG_TYPE_TRACING)
			continue;
		l = bpf_program__attach(prog);
		if (!l) {
			pr_err("cannot attach %s: %s", bpf_program__name(prog), strerror(errno));
			return -errno;
		}
		r->sched_links = xrealloc(r->sched_links, r->nsched + 1, sizeof(*r->sched_links));
		r->sched_links[r->nsched++] = l;
	}
	return 0;
}

static void default_output(struct recording *r)
{
	char stamp[32];
	time_t now = time(NULL);

	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", localtime(&now));
	snprintf(r->path, sizeof(r->path), "tracer-%s-%d-%s.json", r->targets[0].comm,
		 r->pids[0], stamp);
	for (char *p = r->path; *p; p++)
		if (*p == '/' || *p == ' ')
			*p = '_';
}

static int open_output(struct recording *r)
{
	int fd, err;

	if (r->opts->output)
		snprintf(r->path, sizeof(r->path), "%s", r->opts->output);
	else
		default_output(r);
	fd = trace_file__create(r->path, r->err, sizeof(r->err));
	if (fd < 0) {
		pr_err("%s", r->err);
		return fd;
	}
	r->t0 = now_ns();
	r->t0_realtime = realtime_ns();
	err = trace_writer__open(&r->writer, r->path, fd, r->t0);
	if (err) {
		close(fd);
		pr_err("cannot write %s: %s", r->path, strerror(-err));
	}
	return err;
}

/* Names and starting states of the threads already running. */
static void add_existing_threads(struct recording *r)
{
	char path[64];

	for (size_t i = 0; i < r->ntargets; i++) {
		struct dirent *de;
		DIR *d;

		trace_writer__process_name(r->writer, r->pids[i], r->targets[i].comm);
		snprintf(path, sizeof(path), "/proc/%d/task", r->pids[i]);
		d = opendir(path);
		while (d && (de = readdir(d)))
			if (de->d_name[0] != '.')
				consumer__add_thread(&r->consumer, r->pids[i], atoi(de->d_name),
						     r->t0);
		if (d)
			closedir(d);
	}
}

static int setup_loop(struct recording *r)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct itimerspec its = { .it_interval = { 0, POLL_MS * 1000000 },
				  .it_value = { 0, POLL_MS * 1000000 } };
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGUSR1);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	r->sigfd = signalfd(-1, &mask, SFD_CLOEXEC);
	r->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	r->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (r->sigfd < 0 || r->timerfd < 0 || r->epfd < 0 ||
	    timerfd_settime(r->timerfd, 0, &its, NULL))
		return -errno;
	ev.data.u64 = UINT64_MAX - 1;
	epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->sigfd, &ev);
	ev.data.u64 = UINT64_MAX - 2;
	epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->timerfd, &ev);
	ev.data.u64 = UINT64_MAX - 3;
	epoll_ctl(r->epfd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(r->rb), &ev);
	for (size_t i = 0; i < r->ntargets; i++) {
		ev.data.u64 = i;
		epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->targets[i].pidfd, &ev);
	}
	return 0;
}

/* SIGUSR1: pause or resume. While paused, nothing new is recorded; calls in progress still
 * complete (their returns pop their frames). */
static void toggle_pause(struct recording *r)
{
	bool pause = r->skel->bss->phase == PHASE_RECORDING;

	r->skel->bss->phase = pause ? PHASE_PAUSED : PHASE_RECORDING;
	ring_buffer__consume(r->rb);
	consumer__pause(&r->consumer, pause, now_ns());
	pr_info("%s", pause ? "paused (SIGUSR1 resumes)" : "resumed");
}

/* Runs until a signal, -d, every target gone, or a write error. */
static void event_loop(struct recording *r)
{
	uint64_t deadline = r->opts->duration_ns ? r->t0 + r->opts->duration_ns : 0;
	size_t alive = r->ntargets;
	struct epoll_event evs[16];

	while (!r->stop_reason) {
		int n = epoll_wait(r->epfd, evs, 16, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r->stop_reason = "error";
			break;
		}
		for (int i = 0; i < n; i++) {
			uint64_t id = evs[i].data.u64, ticks;
			struct signalfd_siginfo si;

			if (id == UINT64_MAX - 1) {
				if (read(r->sigfd, &si, sizeof(si)) != sizeof(si))
					continue;
				if (si.ssi_signo == SIGUSR1)
					toggle_pause(r);
				else
					r->stop_reason = si.ssi_signo == SIGINT	   ? "SIGINT"
							 : si.ssi_signo == SIGTERM ? "SIGTERM"
										   : "SIGHUP";
			} else if (id == UINT64_MAX - 2) {
				if (read(r->timerfd, &ticks, sizeof(ticks)) < 0)
					continue;
			} else if (id < r->ntargets) {
				epoll_ctl(r->epfd, EPOLL_CTL_DEL, r->targets[id].pidfd, NULL);
				pr_debug("pid %d exited", r->pids[id]);
				if (--alive == 0)
					r->stop_reason = "target exited";
			}
		}
		if (ring_buffer__consume(r->rb) < 0 && trace_writer__error(r->writer))
			r->stop_reason = "write error";
		if (trace_writer__error(r->writer))
			r->stop_reason = "write error";
		if (deadline && now_ns() >= deadline && !r->stop_reason)
			r->stop_reason = "duration elapsed";
	}
}

/* Calls still in progress when recording stopped: their frames are still in task storage. */
static void close_open_spans(struct recording *r)
{
	int map_fd = bpf_map__fd(r->skel->maps.stacks);
	char path[64];

	for (size_t i = 0; i < r->ntargets; i++) {
		struct dirent *de;
		DIR *d;

		snprintf(path, sizeof(path), "/proc/%d/task", r->pids[i]);
		d = opendir(path);
		while (d && (de = readdir(d))) {
			struct span_stack st;
			int tid = atoi(de->d_name), fd, err;

			if (tid <= 0)
				continue;
			fd = syscall(SYS_pidfd_open, tid, tid == r->pids[i] ? 0 : PIDFD_THREAD);
			if (fd < 0) {
				pr_debug("open calls of tid %d: %s", tid, strerror(errno));
				continue;
			}
			err = bpf_map_lookup_elem(map_fd, &fd, &st) ? -errno : 0;
			pr_debug("open calls of tid %d: %s, depth %u", tid, err ? strerror(-err) : "read", err ? 0 : st.depth);
			if (!err) {
				for (__u32 k = 0; k < st.depth && k < MAX_FRAMES; k++) {
					const struct frame *f = &st.frames[k];
					struct span_capture_rec s = {
						.span = {
							.type = REC_SPAN,
							.probe_id = f->probe_id,
							.pid = r->pids[i],
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
			close(fd);
		}
		if (d)
			closedir(d);
	}
}

static void read_counters(struct recording *r, uint64_t *out)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals = xcalloc(ncpu, sizeof(uint64_t));

	for (__u32 k = 0; k < CNT_MAX; k++) {
		out[k] = 0;
		if (bpf_map__lookup_elem(r->skel->maps.counters, &k, sizeof(k), vals,
					 ncpu * sizeof(uint64_t), 0))
			continue;
		for (int c = 0; c < ncpu; c++)
			out[k] += vals[c];
	}
	free(vals);
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
	};
	cJSON *m = cJSON_CreateObject(), *a, *o;
	char cmd[4096] = "";
	struct utsname u;
	char *s;

	for (int i = 0; i < cmdline_argc; i++)
		snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), "%s%s", i ? " " : "",
			 cmdline_argv[i]);
	uname(&u);
	cJSON_AddStringToObject(m, "tracer_version", TRACER_VERSION);
	cJSON_AddStringToObject(m, "command_line", cmd);
	cJSON_AddStringToObject(m, "kernel", u.release);
	cJSON_AddStringToObject(m, "clock", "CLOCK_MONOTONIC");
	cJSON_AddNumberToObject(m, "t0_monotonic_ns", r->t0);
	cJSON_AddNumberToObject(m, "t0_realtime_ns", r->t0_realtime);
	cJSON_AddNumberToObject(m, "duration_ns", r->end - r->t0);
	cJSON_AddStringToObject(m, "stop_reason", r->stop_reason);
	if (trace_writer__error(r->writer))
		cJSON_AddStringToObject(m, "write_error",
					"writing the trace failed; events after the last one in "
					"traceEvents, and the scheduler text, are missing");
	cJSON_AddStringToObject(m, "attach", r->attachment.multi ? "uprobe_multi" : "uprobe");
	cJSON_AddNumberToObject(m, "min_dur_ns", r->opts->min_dur_ns);
	a = cJSON_AddArrayToObject(m, "targets");
	for (size_t i = 0; i < r->ntargets; i++) {
		o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "pid", r->pids[i]);
		cJSON_AddStringToObject(o, "comm", r->targets[i].comm);
		cJSON_AddItemToArray(a, o);
	}
	a = cJSON_AddArrayToObject(m, "probes");
	for (size_t i = 0; i < r->probes.cnt; i++) {
		const struct probe *p = &r->probes.v[i];

		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "object", p->object);
		cJSON_AddStringToObject(o, "function", p->function);
		cJSON_AddStringToObject(o, "category", category__name(p->cat));
		cJSON_AddStringToObject(o, "name", p->name);
		cJSON_AddNumberToObject(o, "offset", p->offset);
		cJSON_AddItemToArray(a, o);
	}
	o = cJSON_AddObjectToObject(m, "counts");
	for (int k = 0; k < CNT_MAX; k++)
		cJSON_AddNumberToObject(o, counter_names[k], c[k]);
	s = cJSON_PrintUnformatted(m);
	cJSON_Delete(m);
	return s;
}

/* Detach, drain, close what is open, write the end of the file, print the summary. */
static int finish(struct recording *r)
{
	uint64_t counters[CNT_MAX];
	char *meta;
	int err;

	/* paused stays paused: nothing new is recorded either way */
	if (r->skel->bss->phase != PHASE_PAUSED)
		r->skel->bss->phase = PHASE_DETACHING;
	attach__detach(&r->attachment);
	r->end = now_ns();
	ring_buffer__consume(r->rb);
	for (size_t i = 0; i < r->nsched; i++)
		bpf_link__destroy(r->sched_links[i]);
	r->nsched = 0;
	ring_buffer__consume(r->rb);
	close_open_spans(r);
	read_counters(r, counters);
	threads__finish(&r->consumer.threads, r->end);
	meta = metadata_json(r, counters);
	err = trace_writer__close(r->writer, r->end, r->stop_reason, meta ? meta : "{}");
	r->writer = NULL;
	free(meta);
	if (err) {
		pr_err("writing %s failed: %s; recording stopped there (the file ends at the last "
		       "event that fit%s)", r->path, strerror(-err),
		       strstr(r->path, ".gz") ? "; a .gz file may be cut short" : " and is valid");
		return err;
	}
	if (verbosity >= VERB_NORMAL)
		summary__print(stderr, &r->consumer.summary, &r->consumer.threads, r->end - r->t0,
			       counters);
	pr_info("wrote %s (stopped: %s); open it in ui.perfetto.dev or chrome://tracing", r->path,
		r->stop_reason);
	return 0;
}

static void cleanup(struct recording *r)
{
	attach__detach(&r->attachment);
	for (size_t i = 0; i < r->nsched; i++)
		bpf_link__destroy(r->sched_links[i]);
	free(r->sched_links);
	ring_buffer__free(r->rb);
	tracer_bpf__destroy(r->skel);
	consumer__free(&r->consumer);
	attach_sites__free(&r->sites);
	probe_table__free(&r->probes);
	for (size_t i = 0; i < r->ntargets; i++)
		target__close(&r->targets[i]);
	free(r->targets);
	free(r->pids);
	for (int *fd = &r->epfd; fd <= &r->timerfd; fd++)
		if (*fd >= 0)
			close(*fd);
}

int record__run(struct record_opts *opts)
{
	struct recording r = { .opts = opts, .epfd = -1, .sigfd = -1, .timerfd = -1 };
	int err;

	libbpf_set_print(libbpf_print);
	if (geteuid() != 0) {
		pr_err("need root: uprobes need CAP_SYS_ADMIN; run with sudo");
		return 1;
	}
	r.attachment.multi = attach__multi_supported();
	err = opts->cmd ? launch(&r) : 0;
	if (!err)
		err = open_targets(&r);
	if (!err)
		err = choose_specs(&r);
	if (!err) {
		err = resolve__probes(&opts->specs, r.targets, r.ntargets, opts->entry_only,
				      &r.probes, &r.sites, r.err, sizeof(r.err));
		if (err)
			pr_err("%s", r.err);
	}
	if (!err && !r.skel)
		err = load_bpf(&r);
	if (!err)
		err = fill_maps(&r);
	if (err)
		goto out;
	err = open_output(&r);
	if (err)
		goto out;
	consumer__init(&r.consumer, r.writer, &r.probes, r.pids, r.ntargets,
		       !opts->no_sched && !opts->min_dur_ns, opts->no_args);
	r.rb = ring_buffer__new(bpf_map__fd(r.skel->maps.events), consumer__handle, &r.consumer,
				NULL);
	err = r.rb ? setup_loop(&r) : -errno;
	if (err) {
		pr_err("cannot set up the event loop: %s", strerror(-err));
		goto out_abort;
	}
	add_existing_threads(&r);
	if (opts->start_paused) {
		r.skel->bss->phase = PHASE_PAUSED;
		consumer__pause(&r.consumer, true, now_ns());
	}
	err = attach_sched(&r);
	if (!err) {
		err = attach__sites(&r.attachment, &r.sites, r.skel->progs.span_enter,
				    r.skel->progs.span_exit, r.err, sizeof(r.err));
		if (err)
			pr_err("%s", r.err);
	}
	if (err)
		goto out_abort;
	if (!opts->start_paused)
		r.skel->bss->phase = PHASE_RECORDING;
	if (r.launched)
		kill(r.launched, SIGCONT);
	pr_info("recording %zu functions in %zu process%s (%s); Ctrl-C to stop",
		r.attachment.nprobes, r.ntargets, r.ntargets == 1 ? "" : "es",
		r.attachment.multi ? "uprobe_multi" : "uprobe per function");
	if (opts->start_paused)
		pr_info("paused until SIGUSR1 (kill -USR1 %d)", getpid());
	event_loop(&r);
	err = finish(&r);
	goto out;
out_abort:
	r.stop_reason = "setup failed";
	r.end = now_ns();
	trace_writer__close(r.writer, r.end, r.stop_reason, "{}");
	r.writer = NULL;
out:
	cleanup(&r);
	if (r.launched && err) {
		kill(r.launched, SIGKILL); /* not traced as asked: do not let it run */
		launch__exit_status(r.launched);
	}
	if (r.launched && !err)
		return launch__exit_status(r.launched);
	return err ? 1 : 0;
}
