// SPDX-License-Identifier: MIT
/* The event loop: the ring buffers, signals, the tick (losses, the size limit, new
 * libraries), targets exiting, SIGUSR1. */
#include "record/recording.h"
#include "util/util.h"
#include "tracer.skel.h"

#include <bpf/bpf.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>

static void stop_signals(sigset_t *mask, bool pause_too)
{
	sigemptyset(mask);
	sigaddset(mask, SIGINT);
	sigaddset(mask, SIGTERM);
	sigaddset(mask, SIGHUP);
	if (pause_too)
		sigaddset(mask, SIGUSR1);
}

void recording__block_signals(void)
{
	sigset_t mask;

	stop_signals(&mask, true);
	sigprocmask(SIG_BLOCK, &mask, NULL);
}

int recording__signal_pending(void)
{
	sigset_t mask, pending;
	int sig;

	stop_signals(&mask, false);
	if (sigpending(&pending))
		return 0;
	for (sig = 1; sig < NSIG; sig++)
		if (sigismember(&mask, sig) == 1 && sigismember(&pending, sig) == 1)
			return sig;
	return 0;
}

/* one shot, at ns resolution: no steady timer puts the reader in step with the target */
static int arm_poll(struct recording *r)
{
	uint64_t ns = POLL_MS * 1000000ull * (0.5 + random_unit(&r->poll_rand));
	struct itimerspec its = { .it_value = { 0, ns } };

	return timerfd_settime(r->timerfd, 0, &its, NULL);
}

int recording__setup_loop(struct recording *r)
{
	struct epoll_event ev = { .events = EPOLLIN };
	sigset_t mask;

	stop_signals(&mask, true); /* blocked since the start: read from here on */
	signal(SIGPIPE, SIG_IGN);
	r->sigfd = signalfd(-1, &mask, SFD_CLOEXEC);
	r->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	r->epfd = epoll_create1(EPOLL_CLOEXEC);
	r->poll_rand = now_ns() | 1;
	if (r->sigfd < 0 || r->timerfd < 0 || r->epfd < 0 || arm_poll(r))
		return -errno;
	ev.data.u64 = (uint64_t)EV_SIGNAL;
	epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->sigfd, &ev);
	ev.data.u64 = (uint64_t)EV_TIMER;
	epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->timerfd, &ev);
	if (rings__watch(&r->rings, r->epfd, (uint64_t)EV_RING))
		return -errno;
	for (size_t i = 0; i < r->tracked.ntargets; i++)
		recording__watch_pidfd(r, &r->tracked.targets[i]);
	return 0;
}

/* tracer top: the live view takes the terminal, and its keys come in with the other events. */
void recording__start_top(struct recording *r)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)EV_KEY };

	top__start(&r->top);
	if (r->top.raw_keys)
		epoll_ctl(r->epfd, EPOLL_CTL_ADD, STDIN_FILENO, &ev);
	top__draw(&r->top, r, now_ns());
}

/* Every record in the rings now, past the consume budget and the time order's lag. */
void recording__drain(struct recording *r)
{
	while (rings__consume(&r->rings, UINT64_MAX, recording__handle_record, r) == -EAGAIN)
		;
}

/* SIGUSR1: pause or resume. While paused, nothing new is recorded; calls in progress still
 * complete (their returns pop their frames). */
static void toggle_pause(struct recording *r)
{
	bool pause = r->skel->bss->phase == PHASE_RECORDING;
	enum record_phase to = pause ? PHASE_PAUSED : PHASE_RECORDING;
	/* the mark is where nothing recorded lies beyond: a resume's before the switch (what
	 * starts after it starts after the mark), a pause's after it (what started, before) */
	uint64_t mark = pause ? 0 : now_ns();

	/* not over -d's end, which the deadline thread may have written meanwhile */
	if (!deadline__switch_phase(&r->skel->bss->phase, pause ? PHASE_RECORDING : PHASE_PAUSED,
				    to))
		return;
	if (pause)
		mark = now_ns();
	recording__drain(r);
	consumer__pause(&r->consumer, pause, mark);
	pr_info("%s", pause ? "paused (SIGUSR1 resumes)" : "resumed");
}

/* Runs of our programs the kernel skipped because one was already running on that CPU (an
 * interrupt's wake-up inside a wake-up program, say): each is an event lost without a ring
 * buffer failure. The kernel counts them per program. */
static void skipped_runs(struct recording *r, uint64_t *out)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, r->skel->obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		const char *name = bpf_program__name(prog);
		int fd = bpf_program__fd(prog);

		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) || !info.recursion_misses)
			continue;
		if (!strncmp(name, "span_", 5) || !strcmp(name, "usdt_end"))
			out[CNT_SKIPPED_PROBES] += info.recursion_misses;
		else if (strncmp(name, "py_", 3)) /* Python reads: a missed one is a later one */
			out[CNT_SKIPPED_SCHED] += info.recursion_misses;
	}
}

void recording__read_counters(struct recording *r, uint64_t *out)
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
	skipped_runs(r, out);
	out[CNT_SCHED_GAPS] = r->consumer.sched_gaps;
	out[CNT_SPANS] = r->spans;
	out[CNT_PY_READS] = r->py_reads;
}

/* Records the full ring buffer dropped: a counter track in the trace shows when. */
void recording__mark_losses(struct recording *r, uint64_t now, const uint64_t *c)
{
	uint64_t lost = c[CNT_LOST_SPAN] + c[CNT_LOST_SWITCH] + c[CNT_LOST_WAKEUP] +
			c[CNT_LOST_TASK] + c[CNT_SKIPPED_SCHED] + c[CNT_SKIPPED_PROBES];

	if (lost == r->lost_marked || !r->consumer.npids)
		return;
	if (!r->lost_marked) /* the track starts at 0, so the rise shows where loss began */
		trace_writer__counter(r->writer, r->consumer.pids[0], r->last_tick, "tracer: lost records",
				      "lost", 0);
	trace_writer__counter(r->writer, r->consumer.pids[0], now, "tracer: lost records", "lost",
			      lost);
	r->lost_marked = lost;
}

/* A terminal's Ctrl-C reaches the launched command too (one process group); a signal sent to
 * tracer alone (kill, timeout) is passed on, so that the command stops as well. */
static void stop_on_signal(struct recording *r, const struct signalfd_siginfo *si)
{
	r->stop_reason = si->ssi_signo == SIGINT    ? "SIGINT"
			 : si->ssi_signo == SIGTERM ? "SIGTERM"
						    : "SIGHUP";
	if (si->ssi_code == SI_USER || si->ssi_code == SI_QUEUE)
		r->forward_signal = si->ssi_signo;
}

/* Once a second: the status line, and the file's size against --max-size and the viewers'
 * limits (catapult fails at about 256 MB of JSON, Perfetto in a browser at about 2 GB). */
static void every_tick(struct recording *r, uint64_t now)
{
	uint64_t bytes = trace_writer__bytes(r->writer), counters[CNT_MAX];

	recording__release_late_stops(r, now);
	/* --to: the streaming thread reads the file behind the writer (store/stream.h); hand it
	 * what was recorded every tick, in whole lines, not once a megabyte (plain files: a
	 * gzip flush costs compression, and a .gz is pushed at the end only) */
	if (r->opts->to && !strstr(r->path, ".gz"))
		trace_writer__flush(r->writer);

	if (!r->warned_size && bytes >= (256ull << 20)) {
		r->warned_size = true;
		status__clear(&r->status);
		pr_warn("the trace passed 256 MB: chrome://tracing may not open it (Perfetto opens up "
			"to about 2 GB); --min-dur, --max-size or a .gz name keep it smaller");
	}
	recording__read_counters(r, counters);
	recording__mark_losses(r, now, counters);
	budget__check(r, now);
	r->last_tick = now;
	if (r->py.session)
		py_session__refresh_names(r->py.session, true);
	if (r->top.on)
		top__draw(&r->top, r, now);
	if (!r->status.on)
		return;
	status__update(&r->status, now, now - r->t0,
		       counters[CNT_SPANS] + r->consumer.summary.py_spans +
			       r->consumer.summary.gil_spans, r->consumer.threads.cnt,
		       counters[CNT_LOST_SPAN] + counters[CNT_LOST_SWITCH] +
			       counters[CNT_LOST_WAKEUP] + counters[CNT_LOST_TASK] +
			       counters[CNT_SKIPPED_SCHED] + counters[CNT_SKIPPED_PROBES],
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
	/* its links go: thousands of short-lived children leave none behind */
	tracked__release(&r->tracked, pid);
	pr_debug("pid %d exited", pid);
	if ((size_t)i < r->primary && --r->alive == 0 && !r->opts->system_wide)
		r->stop_reason = "target exited";
}

bool recording__over(const struct recording *r)
{
	return deadline__ended(&r->deadline) != 0;
}

/* Runs until a signal, -d, every target gone, or a write error. */
void recording__event_loop(struct recording *r)
{
	/* -d counts from when tracer was set up, not from t0: attaching to many processes
	 * under load took a second or more of it. deadline.h ends it on time; this is the loop's
	 * own look, for when the thread could not */
	uint64_t deadline = r->opts->duration_ns ? r->started + r->opts->duration_ns : 0;
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
					stop_on_signal(r, &si);
			} else if (id == EV_TIMER) {
				bool fired = read(r->timerfd, &expirations,
						  sizeof(expirations)) > 0;

				arm_poll(r); /* after the read: it resets what the read takes */
				if (!fired)
					continue;
				if (++ticks % (PY_DITHER_MS / POLL_MS) == 0)
					py_record__dither(&r->py);
				/* over: no new library is probed, no probe shed */
				if (ticks % RESCAN_TICKS || recording__over(r))
					continue;
				if (tracked__rescan(&r->tracked, r->err, sizeof(r->err)) < 0)
					pr_warn("%s", r->err);
				every_tick(r, now_ns());
			} else if (id == EV_KEY) {
				if (top__key(&r->top))
					r->stop_reason = "q";
			} else if (id > 0) {
				target_exited(r, id);
			}
		}
		ret = rings__consume(&r->rings, now_ns() - ORDER_LAG_NS, recording__handle_record,
				     r);
		more = ret == -EAGAIN;
		if (r->py.session) /* new Python threads: named while they live */
			py_session__refresh_names(r->py.session, false);
		if (ret < 0 && trace_writer__error(r->writer))
			r->stop_reason = "write error";
		overhead__sample(&r->overhead);
		if (trace_writer__error(r->writer))
			r->stop_reason = "write error";
		if (deadline && (recording__over(r) || now_ns() >= deadline) && !r->stop_reason)
			r->stop_reason = "duration elapsed";
		if (r->consumer.max_bytes &&
		    trace_writer__bytes(r->writer) >= r->consumer.max_bytes && !r->stop_reason)
			r->stop_reason = "--max-size reached";
	}
}

/* Counts spans per probe on their way to the consumer: the overhead accounting needs the hits
 * per kind of site. */
int recording__handle_record(void *ctx, void *data, size_t size)
{
	struct recording *r = ctx;
	const struct span_rec *s = data;
	const struct py_stack_rec *py = data;

	if (size >= sizeof(*s) && s->type == REC_SPAN)
		r->spans++;
	/* a read that found the stack unchanged carries no frames */
	if (size >= offsetof(struct py_stack_rec, frames) && py->type == REC_PY_STACK &&
	    !(py->flags & PY_SAME))
		r->py_reads++;
	if (size >= sizeof(*s) && s->type == REC_SPAN && s->probe_id < MAX_PROBES) {
		if (s->probe_id >= r->ncalls) {
			size_t n = s->probe_id + 64;

			r->calls_per_probe = xrealloc(r->calls_per_probe, n, sizeof(uint64_t));
			memset(r->calls_per_probe + r->ncalls, 0, (n - r->ncalls) * sizeof(uint64_t));
			r->ncalls = n;
		}
		r->calls_per_probe[s->probe_id]++;
		/* a return probe's hits; a hit on a function's exits is a plain probe's (finish.c) */
		r->returns += !(s->flags & (SPAN_INSTANT | SPAN_INCOMPLETE | SPAN_EXCEPTION)) &&
			      !(s->probe_id < r->tracked.probes.cnt &&
				r->tracked.probes.v[s->probe_id].nexits);
	}
	return consumer__handle(&r->consumer, data, size);
}
