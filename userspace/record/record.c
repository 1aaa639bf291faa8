// SPDX-License-Identifier: MIT
#include "record/record.h"
#include "record/attach.h"
#include "record/consumer.h"
#include "record/launch.h"
#include "record/overhead.h"
#include "probe/packs.h"
#include "probe/resolve.h"
#include "python/py_record.h"
#include "record/status.h"
#include "record/tracked.h"
#include "record/target.h"
#include "trace/trace_file.h"
#include "trace/trace_writer.h"
#include "util/util.h"
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
#include <sys/resource.h>
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

/* epoll data of the fds that are not a target's pidfd (those carry the pid) */
enum { EV_SIGNAL = -1, EV_TIMER = -2, EV_RING = -3 };
#define RESCAN_TICKS (500 / POLL_MS) /* look for libraries loaded since: every 500 ms */

struct recording {
	struct record_opts *opts;
	struct tracked tracked; /* processes, probes, links */
	size_t primary;		/* targets asked for (-p or the launched command): the first ones */
	size_t alive;		/* of those, still running */
	bool multi;		/* uprobe_multi links */
	struct bpf_link **stop_links; /* followed execs held at their entry point */
	int *stop_pids;
	size_t nstops;
	struct tracer_bpf *skel;
	struct bpf_link **sched_links;
	size_t nsched;
	pid_t launched; /* launch mode: the command's pid */
	struct ring_buffer *rb;
	struct trace_writer *writer;
	struct consumer consumer;
	struct overhead overhead;
	struct py_record py; /* Python frames */
	uint64_t *calls_per_probe; /* spans recorded per probe id: the entry hits, by site kind */
	size_t ncalls;
	uint64_t returns; /* spans that ended with a return: the return hits */
	char path[PATH_MAX];
	uint64_t t0, t0_realtime, end;
	const char *stop_reason;
	struct status status;
	bool warned_size;
	uint64_t lost_marked, last_tick; /* records lost, as the trace shows them so far */
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

	for (size_t i = 0; i < o->npids; i++) {
		if (tracked__add(&r->tracked, o->pids[i], r->err, sizeof(r->err))) {
			pr_err("%s", r->err);
			return -ESRCH;
		}
	}
	r->primary = r->alive = r->tracked.ntargets;
	return 0;
}

/* Whether the pack is used by default for one of the targets. */
static bool pack_applies(const struct probe_pack *pack, const struct recording *r)
{
	const struct tracked *t = &r->tracked;

	for (size_t k = 0; k < t->ntargets; k++)
		if (probe_pack__applies(pack, t->targets[k].objs, t->targets[k].nobjs))
			return true;
	return false;
}

/* Return probes crash a target when a C++ exception unwinds through a probed frame or a
 * stackful coroutine switches stacks inside one: warn when that can happen. */
static void warn_hazards(const struct recording *r)
{
	static const struct {
		const char *glob, *what;
	} hazards[] = {
		{ "libstdc++.so.*", "C++ exceptions" },
		{ "libboost_context*.so*", "Boost.Context coroutines" },
		{ "libboost_fiber*.so*", "Boost.Fiber fibers" },
		{ "libco.so*", "libco coroutines" },
		{ "libdill.so*", "libdill coroutines" },
		{ "libfolly*.so*", "folly fibers" },
	};
	const struct tracked *t = &r->tracked;
	bool cxx = false;

	if (r->opts->entry_only)
		return;
	/* exceptions only unwind C++ frames: a concern when C++ functions are probed */
	for (size_t i = 0; i < t->probes.cnt && !cxx; i++)
		cxx = !strncmp(t->probes.v[i].function, "_Z", 2) &&
		      !(t->probes.v[i].cfg.flags & PROBE_ENTRY_ONLY);
	for (size_t h = cxx ? 0 : 1; h < sizeof(hazards) / sizeof(hazards[0]); h++)
		for (size_t k = 0; k < t->ntargets; k++)
			for (size_t i = 0; i < t->targets[k].nobjs; i++)
				if (!fnmatch(hazards[h].glob, t->targets[k].objs[i].base, 0)) {
					pr_warn("pid %d uses %s (%s): if one unwinds or switches "
						"stacks through a probed function, its return probe "
						"crashes the process; use --entry-only then",
						t->targets[k].pid, hazards[h].what,
						t->targets[k].objs[i].base);
					k = t->ntargets;
					break;
				}
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
	if (o->system_wide) {
		pr_err("-a needs probes: give -u or -P");
		return -EINVAL;
	}
	n = probe_pack__list(&all);
	if (n < 0) {
		pr_warn("cannot read the probe packs folder %s: %s (set TRACER_PROBES to it): "
			"recording the scheduler only", probe_pack__dir(), strerror(-n));
		return 0;
	}
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
	skel->rodata->filter_tgid = o->follow || o->system_wide;
	skel->rodata->follow = o->follow;
	skel->rodata->system_wide = o->system_wide;
	bpf_map__set_max_entries(skel->maps.events, rb_size);
	/* probes are added while recording (libraries loaded later): room for all */
	bpf_map__set_max_entries(skel->maps.probe_cfgs, MAX_PROBES);
	if (r->multi) {
		bpf_program__set_expected_attach_type(skel->progs.span_enter, TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.span_exit, TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.usdt_end, TRACE_UPROBE_MULTI);
	}
	bpf_program__set_autoload(skel->progs.stop_at_entry, r->launched || o->follow);
	if (o->no_sched) {
		bpf_program__set_autoload(skel->progs.on_switch, false);
		bpf_program__set_autoload(skel->progs.on_waking, false);
		bpf_program__set_autoload(skel->progs.on_wakeup, false);
		bpf_program__set_autoload(skel->progs.on_wakeup_new, false);
	}
	py_record__configure(&r->py, skel, !o->no_python && !o->no_args, o->py_hz);
	err = tracer_bpf__load(skel);
	if (err)
		pr_err("cannot load the BPF programs: %s (run with -v for the verifier's log)",
		       strerror(-err));
	return err;
}

/* The processes opened are still the ones probes go to: not exited, their pid not reused
 * (pidfd and start time) while the programs loaded. */
static int check_targets(struct recording *r)
{
	for (size_t i = 0; i < r->tracked.ntargets; i++) {
		const struct target *t = &r->tracked.targets[i];

		if (t->pid && !target__alive(t)) {
			pr_err("pid %d exited (or its pid now belongs to another process) before tracer "
			       "attached; nothing was recorded", t->pid);
			return -ESRCH;
		}
	}
	return 0;
}

/* The BPF side of the tracked set. */
static void setup_tracked(struct recording *r)
{
	struct tracked *t = &r->tracked;

	t->enter = r->skel->progs.span_enter;
	t->exit = r->skel->progs.span_exit;
	t->targets_map = r->skel->maps.targets;
	t->cfg_map = r->skel->maps.probe_cfgs;
	t->usdt_map = r->skel->maps.usdt_cfgs;
	attach__set_usdt_end(&t->attachment, r->skel->progs.usdt_end);
	for (size_t i = 0; i < t->ntargets; i++) {
		__u32 pid = t->targets[i].pid;
		__u8 one = 1;

		if (pid)
			bpf_map__update_elem(t->targets_map, &pid, sizeof(pid), &one, 1, BPF_ANY);
	}
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

/* A followed process exec'd (held by SIGSTOP): its new program is probed once the dynamic
 * loader has mapped its libraries, at its entry point, where it is held again. */
static void follow_exec(struct recording *r, int pid)
{
	int i = tracked__find(&r->tracked, pid);
	LIBBPF_OPTS(bpf_uprobe_opts, uo);
	struct bpf_link *l = NULL;
	uint64_t entry;
	__u32 key = pid;
	__u8 one = 1;
	char exe[64];

	if (i >= 0) {
		struct target *t = &r->tracked.targets[i];

		/* the old program's objects are gone: read the new ones from scratch */
		for (size_t k = 0; k < t->nobjs; k++) {
			free(t->objs[k].path);
			free(t->objs[k].base);
			free(t->objs[k].open_path);
		}
		t->nobjs = 0;
		r->tracked.resolved[i] = 0;
	}
	snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
	if (!launch__entry_offset(pid, &entry) &&
	    !bpf_map__update_elem(r->skel->maps.stop_pids, &key, sizeof(key), &one, 1, BPF_ANY))
		l = bpf_program__attach_uprobe_opts(r->skel->progs.stop_at_entry, pid, exe, entry,
						    &uo);
	if (l) {
		r->stop_links = xrealloc(r->stop_links, r->nstops + 1, sizeof(*r->stop_links));
		r->stop_pids = xrealloc(r->stop_pids, r->nstops + 1, sizeof(int));
		r->stop_links[r->nstops] = l;
		r->stop_pids[r->nstops++] = pid;
	} else {
		pr_warn("pid %d exec'd a program tracer cannot stop at its start: its calls are "
			"probed from the next scan", pid);
	}
	kill(pid, SIGCONT);
}

/* Probes what a followed process maps now (at its entry point), then lets it go on. */
static void follow_entry(struct recording *r, int pid)
{
	int i = tracked__find(&r->tracked, pid);

	if (i >= 0) {
		target__read_maps(&r->tracked.targets[i]);
		if (tracked__attach_new(&r->tracked, false, r->err, sizeof(r->err)) < 0)
			pr_warn("pid %d: %s", pid, r->err);
	}
	for (size_t k = 0; k < r->nstops; k++) {
		if (r->stop_pids[k] != pid)
			continue;
		bpf_link__destroy(r->stop_links[k]);
		r->stop_links[k] = r->stop_links[--r->nstops];
		r->stop_pids[k] = r->stop_pids[r->nstops];
		break;
	}
	kill(pid, SIGCONT);
}

static void watch_pidfd(struct recording *r, const struct target *t)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = t->pid };

	if (t->pidfd >= 0)
		epoll_ctl(r->epfd, EPOLL_CTL_ADD, t->pidfd, &ev);
}

/* The consumer met a new process: a child (--follow), an exec, an entry point reached. */
static void on_process(void *ctx, const struct task_rec *t)
{
	struct recording *r = ctx;

	switch (t->event) {
	case TASK_NEW:
		if (!r->opts->follow)
			return;
		/* traced already (BPF added it at the fork); it may be gone by now */
		consumer__add_pid(&r->consumer, t->pid, t->comm);
		py_record__add_child(&r->py, t->pid, t->parent_pid);
		if (tracked__add(&r->tracked, t->pid, r->err, sizeof(r->err))) {
			pr_debug("pid %d: %s", t->pid, r->err);
			return;
		}
		watch_pidfd(r, &r->tracked.targets[r->tracked.ntargets - 1]);
		break;
	case TASK_EXEC:
		if (r->opts->follow)
			follow_exec(r, t->pid);
		break;
	case TASK_SEEN:
		py_record__add_pid(&r->py, t->pid);
		break;
	case TASK_AT_ENTRY:
		/* the new program's interpreter, if any, is mapped now */
		py_record__add_pid(&r->py, t->pid);
		follow_entry(r, t->pid);
		break;
	default:
		break;
	}
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
	const struct target *t = &r->tracked.targets[0];
	char stamp[32];
	time_t now = time(NULL);

	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", localtime(&now));
	if (t->pid)
		snprintf(r->path, sizeof(r->path), "tracer-%s-%d-%s.json", t->comm, t->pid, stamp);
	else
		snprintf(r->path, sizeof(r->path), "tracer-all-%s.json", stamp);
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
	err = trace_writer__open(&r->writer, r->path, fd, r->t0);
	if (err) {
		close(fd);
		pr_err("cannot write %s: %s", r->path, strerror(-err));
	}
	return err;
}

/* Names and starting states of the processes and threads already running. */
static void add_existing_threads(struct recording *r)
{
	const struct tracked *tr = &r->tracked;
	char path[64];

	for (size_t i = 0; i < tr->ntargets; i++) {
		int pid = tr->targets[i].pid;
		struct dirent *de;
		DIR *d;

		if (!pid)
			continue;
		consumer__add_pid(&r->consumer, pid, tr->targets[i].comm);
		snprintf(path, sizeof(path), "/proc/%d/task", pid);
		d = opendir(path);
		while (d && (de = readdir(d)))
			if (de->d_name[0] != '.')
				consumer__add_thread(&r->consumer, pid, atoi(de->d_name), r->t0);
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
	ev.data.u64 = (uint64_t)EV_SIGNAL;
	epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->sigfd, &ev);
	ev.data.u64 = (uint64_t)EV_TIMER;
	epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->timerfd, &ev);
	ev.data.u64 = (uint64_t)EV_RING;
	epoll_ctl(r->epfd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(r->rb), &ev);
	for (size_t i = 0; i < r->tracked.ntargets; i++)
		watch_pidfd(r, &r->tracked.targets[i]);
	return 0;
}

/* Everything in the ring buffer now, past the consume budget. */
static void drain(struct recording *r)
{
	while (ring_buffer__consume(r->rb) == -EAGAIN)
		;
}

/* SIGUSR1: pause or resume. While paused, nothing new is recorded; calls in progress still
 * complete (their returns pop their frames). */
static void toggle_pause(struct recording *r)
{
	bool pause = r->skel->bss->phase == PHASE_RECORDING;

	r->skel->bss->phase = pause ? PHASE_PAUSED : PHASE_RECORDING;
	drain(r);
	consumer__pause(&r->consumer, pause, now_ns());
	pr_info("%s", pause ? "paused (SIGUSR1 resumes)" : "resumed");
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

/* Records the full ring buffer dropped: a counter track in the trace shows when. */
static void mark_losses(struct recording *r, uint64_t now, const uint64_t *c)
{
	uint64_t lost = c[CNT_LOST_SPAN] + c[CNT_LOST_SWITCH] + c[CNT_LOST_WAKEUP] +
			c[CNT_LOST_TASK];

	if (lost == r->lost_marked || !r->consumer.npids)
		return;
	if (!r->lost_marked) /* the track starts at 0, so the rise shows where loss began */
		trace_writer__counter(r->writer, r->consumer.pids[0], r->last_tick, "tracer: lost records",
				      "lost", 0);
	trace_writer__counter(r->writer, r->consumer.pids[0], now, "tracer: lost records", "lost",
			      lost);
	r->lost_marked = lost;
}

/* Once a second: the status line, and the file's size against --max-size and the viewers'
 * limits (catapult fails at about 256 MB of JSON, Perfetto in a browser at about 2 GB). */
static void every_tick(struct recording *r, uint64_t now)
{
	uint64_t bytes = trace_writer__bytes(r->writer), counters[CNT_MAX];

	if (!r->warned_size && bytes >= (256ull << 20)) {
		r->warned_size = true;
		status__clear(&r->status);
		pr_warn("the trace passed 256 MB: chrome://tracing may not open it (Perfetto opens up "
			"to about 2 GB); --min-dur, --max-size or a .gz name keep it smaller");
	}
	read_counters(r, counters);
	mark_losses(r, now, counters);
	r->last_tick = now;
	if (r->py.session)
		py_session__refresh_names(r->py.session);
	if (!r->status.on)
		return;
	status__update(&r->status, now, now - r->t0, counters[CNT_SPANS], r->consumer.threads.cnt,
		       counters[CNT_LOST_SPAN] + counters[CNT_LOST_SWITCH] +
			       counters[CNT_LOST_WAKEUP] + counters[CNT_LOST_TASK],
		       bytes, r->skel->bss->phase == PHASE_PAUSED);
}

/* A target's pidfd became readable: it exited. */
static void target_exited(struct recording *r, int pid)
{
	int i = tracked__find(&r->tracked, pid);
	struct target *t;

	if (i < 0)
		return;
	t = &r->tracked.targets[i];
	epoll_ctl(r->epfd, EPOLL_CTL_DEL, t->pidfd, NULL);
	close(t->pidfd);
	t->pidfd = -1;
	pr_debug("pid %d exited", pid);
	if ((size_t)i < r->primary && --r->alive == 0 && !r->opts->system_wide)
		r->stop_reason = "target exited";
}

/* Runs until a signal, -d, every target gone, or a write error. */
static void event_loop(struct recording *r)
{
	uint64_t deadline = r->opts->duration_ns ? r->t0 + r->opts->duration_ns : 0;
	struct epoll_event evs[16];
	unsigned int ticks = 0;

	bool more = false;

	while (!r->stop_reason) {
		/* records left behind by the consume budget: look at the other fds, come back */
		int n = epoll_wait(r->epfd, evs, 16, more ? 0 : -1), ret;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r->stop_reason = "error";
			break;
		}
		for (int i = 0; i < n; i++) {
			int64_t id = (int64_t)evs[i].data.u64;
			struct signalfd_siginfo si;
			uint64_t expirations;

			if (id == EV_SIGNAL) {
				if (read(r->sigfd, &si, sizeof(si)) != sizeof(si))
					continue;
				if (si.ssi_signo == SIGUSR1)
					toggle_pause(r);
				else
					r->stop_reason = si.ssi_signo == SIGINT	   ? "SIGINT"
							 : si.ssi_signo == SIGTERM ? "SIGTERM"
										   : "SIGHUP";
			} else if (id == EV_TIMER) {
				if (read(r->timerfd, &expirations, sizeof(expirations)) <= 0 ||
				    ++ticks % RESCAN_TICKS)
					continue;
				if (tracked__rescan(&r->tracked, r->err, sizeof(r->err)) < 0)
					pr_warn("%s", r->err);
				every_tick(r, now_ns());
			} else if (id > 0) {
				target_exited(r, id);
			}
		}
		ret = ring_buffer__consume(r->rb);
		more = ret == -EAGAIN;
		if (ret < 0 && trace_writer__error(r->writer))
			r->stop_reason = "write error";
		overhead__sample(&r->overhead);
		if (trace_writer__error(r->writer))
			r->stop_reason = "write error";
		if (deadline && now_ns() >= deadline && !r->stop_reason)
			r->stop_reason = "duration elapsed";
		if (r->consumer.max_bytes &&
		    trace_writer__bytes(r->writer) >= r->consumer.max_bytes && !r->stop_reason)
			r->stop_reason = "--max-size reached";
	}
}

/* Calls still in progress when recording stopped: their frames are still in task storage. */
static void close_open_spans(struct recording *r)
{
	int map_fd = bpf_map__fd(r->skel->maps.stacks);
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
			fd = syscall(SYS_pidfd_open, tid, tid == pid ? 0 : PIDFD_THREAD);
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
			close(fd);
		}
		if (d)
			closedir(d);
	}
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
	};
	cJSON *m = cJSON_CreateObject(), *a, *o;
	char cmd[4096] = "", num[32];
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
	/* exact integers: a double would round nanoseconds away */
	snprintf(num, sizeof(num), "%llu", (unsigned long long)r->t0);
	cJSON_AddRawToObject(m, "t0_monotonic_ns", num);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)r->t0_realtime);
	cJSON_AddRawToObject(m, "t0_realtime_ns", num);
	cJSON_AddNumberToObject(m, "duration_ns", r->end - r->t0);
	cJSON_AddStringToObject(m, "stop_reason", r->stop_reason);
	if (trace_writer__error(r->writer))
		cJSON_AddStringToObject(m, "write_error",
					"writing the trace failed; events after the last one in "
					"traceEvents, and the scheduler text, are missing");
	cJSON_AddStringToObject(m, "attach", r->multi ? "uprobe_multi" : "uprobe");
	cJSON_AddNumberToObject(m, "min_dur_ns", r->opts->min_dur_ns);
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
		cJSON_AddItemToArray(a, o);
	}
	o = cJSON_AddObjectToObject(m, "counts");
	for (int k = 0; k < CNT_MAX; k++)
		cJSON_AddNumberToObject(o, counter_names[k], c[k]);
	overhead__add_json(&r->overhead, m);
	py_record__add_json(&r->py, m, c);
	s = cJSON_PrintUnformatted(m);
	cJSON_Delete(m);
	return s;
}

/* Counts spans per probe on their way to the consumer: the overhead accounting needs the hits
 * per kind of site. */
static int handle_record(void *ctx, void *data, size_t size)
{
	struct recording *r = ctx;
	const struct span_rec *s = data;

	if (size >= sizeof(*s) && s->type == REC_SPAN && s->probe_id < MAX_PROBES) {
		if (s->probe_id >= r->ncalls) {
			size_t n = s->probe_id + 64;

			r->calls_per_probe = xrealloc(r->calls_per_probe, n, sizeof(uint64_t));
			memset(r->calls_per_probe + r->ncalls, 0, (n - r->ncalls) * sizeof(uint64_t));
			r->ncalls = n;
		}
		r->calls_per_probe[s->probe_id]++;
		r->returns += !(s->flags & (SPAN_INSTANT | SPAN_INCOMPLETE));
	}
	return consumer__handle(&r->consumer, data, size);
}

/* The kind of site a probe traps on, from the first instruction in a file that maps it. */
static enum insn_class probe_site_class(struct recording *r, const struct probe *p)
{
	for (size_t t = 0; t < r->tracked.ntargets; t++)
		for (size_t i = 0; i < r->tracked.targets[t].nobjs; i++) {
			const struct mapped_object *o = &r->tracked.targets[t].objs[i];

			if (o->dev != p->dev || o->ino != p->ino)
				continue;
			if (!access(o->open_path, R_OK))
				return overhead__site_class(o->open_path, p->offset);
			if (!access(o->path, R_OK)) /* the target is gone: its map_files too */
				return overhead__site_class(o->path, p->offset);
		}
	return INSN_STEPPED;
}

/* BPF run time of tracer's programs, the trap time of the hits, and the targets' CPU time. */
static void finish_overhead(struct recording *r)
{
	uint64_t calls[INSN_CLASS_MAX] = { 0 }, c[CNT_MAX];
	struct bpf_program *prog;
	int other[16];
	size_t nother = 0;

	for (size_t i = 0; i < r->tracked.probes.cnt && i < r->ncalls; i++)
		if (r->calls_per_probe[i])
			calls[probe_site_class(r, &r->tracked.probes.v[i])] += r->calls_per_probe[i];
	bpf_object__for_each_program(prog, r->skel->obj) {
		/* the Python reads on ticks and switches are counted by BPF itself (below) */
		if (prog == r->skel->progs.span_enter || prog == r->skel->progs.span_exit ||
		    prog == r->skel->progs.py_on_tick || prog == r->skel->progs.py_on_switch ||
		    bpf_program__fd(prog) < 0 || nother == sizeof(other) / sizeof(other[0]))
			continue;
		other[nother++] = bpf_program__fd(prog);
	}
	overhead__finish(&r->overhead, bpf_program__fd(r->skel->progs.span_enter),
			 bpf_program__fd(r->skel->progs.span_exit), other, nother, calls, r->returns);
	read_counters(r, c);
	r->overhead.python_ns = c[CNT_PY_NS] - c[CNT_PY_PROBE_NS];
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
	attach__detach(&r->tracked.attachment);
	/* every producer stops before the drain: a busy target's context switches would
	 * otherwise keep a slow reader draining for as long as the load lasts */
	for (size_t i = 0; i < r->nsched; i++)
		bpf_link__destroy(r->sched_links[i]);
	r->nsched = 0;
	py_record__stop(&r->py);
	r->end = now_ns();
	drain(r);
	close_open_spans(r);
	py_record__finish(&r->py, r->end);
	read_counters(r, counters);
	mark_losses(r, r->end, counters);
	finish_overhead(r);
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
	if (verbosity >= VERB_NORMAL)
		overhead__print(stderr, &r->overhead);
	if (verbosity >= VERB_NORMAL)
		/* the CPU time is the asked-for targets': no share when others were traced too */
		py_record__print(&r->py, stderr, counters,
				 r->consumer.npids == r->primary ? r->overhead.target_cpu_ns : 0);
	pr_info("wrote %s (stopped: %s); open it in ui.perfetto.dev or chrome://tracing", r->path,
		r->stop_reason);
	return 0;
}

/* The statistics are on only while recording; calibrating takes about 20 ms. A failure only
 * means the summary cannot say what tracing cost. */
static void start_overhead(struct recording *r)
{
	int *pids = xcalloc(r->primary ? r->primary : 1, sizeof(int)), err;

	for (size_t i = 0; i < r->primary; i++)
		pids[i] = r->tracked.targets[i].pid;
	err = overhead__start(&r->overhead, pids, r->primary, r->multi);
	if (err)
		pr_warn("cannot turn on the BPF run-time statistics: %s; the summary will not say "
			"what tracing cost", strerror(-err));
	free(pids);
}

static void cleanup(struct recording *r)
{
	attach__detach(&r->tracked.attachment);
	for (size_t i = 0; i < r->nstops; i++) {
		bpf_link__destroy(r->stop_links[i]);
		kill(r->stop_pids[i], SIGCONT); /* never leave a followed process stopped */
	}
	free(r->stop_links);
	free(r->stop_pids);
	for (size_t i = 0; i < r->nsched; i++)
		bpf_link__destroy(r->sched_links[i]);
	free(r->sched_links);
	ring_buffer__free(r->rb);
	tracer_bpf__destroy(r->skel);
	consumer__free(&r->consumer);
	overhead__free(&r->overhead);
	py_record__free(&r->py);
	free(r->calls_per_probe);
	tracked__free(&r->tracked);
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
	r.tracked.specs = &opts->specs;
	r.tracked.no_args = opts->no_args;
	r.tracked.resolve_flags = (opts->entry_only ? RESOLVE_ENTRY_ONLY : 0) |
				  (opts->follow || opts->system_wide ? RESOLVE_SHARED : 0);
	r.multi = r.tracked.attachment.multi = attach__multi_supported();
	err = opts->cmd ? launch(&r) : 0;
	/* a target with more busy threads than CPUs would starve the reader of CPU time: records
	 * would be lost and Ctrl-C answered only when the load ends. After the launch: the
	 * command keeps its own priority. */
	if (setpriority(PRIO_PROCESS, 0, -10))
		pr_debug("cannot raise tracer's priority: %s", strerror(errno));
	if (!err)
		err = open_targets(&r);
	if (!err)
		err = choose_specs(&r);
	if (!err && opts->system_wide) {
		err = tracked__add_system(&r.tracked, r.err, sizeof(r.err));
		if (err)
			pr_err("%s", r.err);
	}
	if (!err && !r.skel)
		err = load_bpf(&r);
	if (err)
		goto out;
	setup_tracked(&r);
	if (opts->start_paused)
		r.skel->bss->phase = PHASE_PAUSED;
	/* the trace's zero: before any probe can fire */
	r.t0 = r.last_tick = now_ns();
	r.t0_realtime = realtime_ns();
	/* with --follow, probes may match only programs the targets start later */
	err = check_targets(&r);
	if (err)
		goto out;
	/* stacks are read from the first probe hit on */
	for (size_t i = 0; i < r.primary; i++)
		py_record__add_pid(&r.py, r.tracked.targets[i].pid);
	err = tracked__attach_new(&r.tracked, !opts->follow, r.err, sizeof(r.err));
	if (err) {
		pr_err("%s", r.err);
		goto out;
	}
	warn_hazards(&r);
	err = open_output(&r);
	if (err)
		goto out;
	consumer__init(&r.consumer, r.writer, &r.tracked.probes,
		       !opts->no_sched && !opts->min_dur_ns, opts->no_args);
	r.consumer.on_process = on_process;
	py_record__open(&r.py, r.writer, &consumer__py_ops, &r.consumer);
	r.consumer.py = r.py.session;
	/* events stop with room left for the end: the scheduler text grows ~1/16 when escaped,
	 * the metadata stays under 64 KB unless thousands of functions are probed */
	if (opts->max_size)
		r.consumer.max_bytes = opts->max_size > (128 << 10) ?
					       (opts->max_size - (64 << 10)) * 16 / 17 : opts->max_size / 2;
	r.consumer.ctx = &r;
	r.rb = ring_buffer__new(bpf_map__fd(r.skel->maps.events), handle_record, &r, NULL);
	err = r.rb ? setup_loop(&r) : -errno;
	if (err) {
		pr_err("cannot set up the event loop: %s", strerror(-err));
		goto out_abort;
	}
	add_existing_threads(&r);
	if (opts->start_paused)
		consumer__pause(&r.consumer, true, r.t0);
	start_overhead(&r);
	err = attach_sched(&r);
	if (!err)
		err = py_record__start(&r.py);
	if (err)
		goto out_abort;
	if (!opts->start_paused)
		r.skel->bss->phase = PHASE_RECORDING;
	if (r.launched)
		kill(r.launched, SIGCONT);
	pr_info("recording %zu functions in %s (%s); Ctrl-C to stop", r.tracked.attachment.nprobes,
		opts->system_wide ? "every process mapping them"
		: r.primary == 1  ? "1 process"
				  : "several processes",
		r.multi ? "uprobe_multi" : "uprobe per function");
	if (opts->start_paused)
		pr_info("paused until SIGUSR1 (kill -USR1 %d)", getpid());
	status__init(&r.status, verbosity < VERB_NORMAL);
	event_loop(&r);
	status__clear(&r.status);
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
