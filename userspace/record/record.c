// SPDX-License-Identifier: MIT
#include "record/kernel_btf.h"
#include "record/kernel_check.h"
#include "record/recording.h"
#include "record/launch.h"
#include "store/push.h"
#include "store/stream.h"
#include "util/util.h"
#include "tracer.skel.h"

#include <inttypes.h>
#include <signal.h>
#include <sys/resource.h>

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* libbpf's warnings include whole verifier logs: our own one-line errors say what
	 * failed, and -v shows libbpf's detail. */
	if (verbosity < VERB_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static void cleanup(struct recording *r)
{
	deadline__stop(&r->deadline);
	attach__detach(&r->tracked.attachment);
	for (size_t i = 0; i < r->nstops; i++) {
		bpf_link__destroy(r->stop_links[i]);
		kill(r->stop_pids[i], SIGCONT); /* never leave a followed process stopped */
	}
	free(r->stop_links);
	free(r->stop_pids);
	free(r->stop_since);
	for (size_t i = 0; i < r->nsched; i++)
		bpf_link__destroy(r->sched_links[i]);
	free(r->sched_links);
	rings__free(&r->rings);
	tracer_bpf__destroy(r->skel);
	consumer__free(&r->consumer);
	overhead__free(&r->overhead);
	budget__free(&r->budget);
	py_record__free(&r->py);
	children__free(&r->children);
	free(r->calls_per_probe);
	tracked__free(&r->tracked);
	if (r->epfd >= 0)
		close(r->epfd);
	if (r->sigfd >= 0)
		close(r->sigfd);
	if (r->timerfd >= 0)
		close(r->timerfd);
}

/* A stop signal while setting up: nothing recorded, and the launched command, held at its
 * entry, is killed by the caller rather than let go untraced. */
static int interrupted(void)
{
	int sig = recording__signal_pending();

	if (!sig)
		return 0;
	pr_err("%s while setting up: stopped before recording, nothing written", strsignal(sig));
	return -EINTR;
}

/* The targets, their probes and the BPF object, attached: everything before the output. */
static int prepare(struct recording *r)
{
	struct record_opts *opts = r->opts;
	int err;

	r->tracked.specs = &opts->specs;
	r->tracked.no_args = opts->no_args;
	/* links that serve every process mapping an object only where asked: -a, and --follow
	 * (a child traced from its first instruction); by default each traced process has its
	 * own, and the others on the machine take no trap */
	r->tracked.resolve_flags = (opts->entry_only ? RESOLVE_ENTRY_ONLY : 0) |
				   (opts->follow_given || opts->system_wide ? RESOLVE_SHARED : 0);
	err = kernel_check__bpf(r->compat_note, sizeof(r->compat_note));
	if (err < 0) {
		pr_err("%s", r->compat_note);
		return err;
	}
	/* the compat programs find each hit's probe by the tracefs event that fired: they have
	 * no cookies */
	r->compat = err == 1;
	r->multi = r->tracked.attachment.multi = !r->compat && attach__multi_supported();
	r->tracked.attachment.by_event = !r->multi && probe_events__supported();
	if (r->compat && !r->tracked.attachment.by_event) {
		pr_err("kernel lacks BPF cookies (5.15): tracer needs tracefs uprobe events here, and "
		       "%s/uprobe_events cannot be used (mount tracefs there, or run tracer on Linux "
		       "5.15 or later)", "/sys/kernel/tracing");
		return -ENOTSUP;
	}
	err = opts->cmd ? recording__launch(r) : 0;
	/* a target with more busy threads than CPUs would starve the reader of CPU time: records
	 * would be lost and Ctrl-C answered only when the load ends. After the launch: the
	 * command keeps its own priority. */
	if (setpriority(PRIO_PROCESS, 0, -10))
		pr_debug("cannot raise tracer's priority: %s", strerror(errno));
	if (!err)
		err = interrupted() ?: recording__open_targets(r);
	if (!err)
		err = interrupted() ?: recording__choose_specs(r);
	if (!err && opts->system_wide) {
		err = tracked__add_system(&r->tracked, r->err, sizeof(r->err));
		if (err)
			pr_err("%s", r->err);
	}
	if (!err && !r->skel)
		err = interrupted() ?: recording__load_bpf(r);
	if (!err)
		err = interrupted() ?: recording__setup_tracked(r);
	if (err)
		return err;
	if (opts->start_paused)
		r->skel->bss->phase = PHASE_PAUSED;
	/* the trace's zero: before any probe can fire */
	r->t0 = r->last_tick = now_ns();
	r->t0_realtime = realtime_ns();
	/* with --follow, probes may match only programs the targets exec later */
	err = recording__check_targets(r);
	if (err)
		return err;
	/* stacks are read from the first probe hit on; -a's pseudo-target is pid 0 */
	for (size_t i = 0; i < r->tracked.ntargets; i++)
		if (r->tracked.targets[i].pid > 0)
			py_record__add_pid(&r->py, r->tracked.targets[i].pid);
	err = interrupted() ?: tracked__attach_new(&r->tracked, !opts->follow_given, r->err,
						    sizeof(r->err));
	if (err) {
		if (err != -EINTR)
			pr_err("%s", r->err);
		return err;
	}
	recording__warn_hazards(r);
	return interrupted();
}

/* With the output open: the consumer, the event loop, the scheduler and Python programs; then
 * the recording starts. */
static int start(struct recording *r)
{
	struct record_opts *opts = r->opts;
	int err;

	consumer__init(&r->consumer, r->writer, &r->tracked.probes,
		       !opts->no_sched && !opts->min_dur_ns, opts->no_args);
	r->consumer.on_process = recording__on_process;
	py_record__open(&r->py, r->writer, &consumer__py_ops, &r->consumer);
	r->consumer.py = r->py.session;
	/* events stop with room left for the end: the scheduler text grows ~1/16 when escaped,
	 * the metadata stays under 64 KB unless thousands of functions are probed */
	if (opts->max_size)
		r->consumer.max_bytes = opts->max_size > (128 << 10) ?
						(opts->max_size - (64 << 10)) * 16 / 17 :
						opts->max_size / 2;
	r->consumer.ctx = r;
	err = recording__setup_loop(r);
	if (err) {
		pr_err("cannot set up the event loop: %s", strerror(-err));
		return err;
	}
	recording__add_existing_threads(r);
	if (opts->start_paused)
		consumer__pause(&r->consumer, true, r->t0);
	recording__start_overhead(r);
	budget__init(&r->budget, r->opts->max_overhead);
	err = recording__attach_sched(r);
	if (!err)
		err = py_record__start(&r->py);
	if (err)
		return err;
	if (!opts->start_paused)
		r->skel->bss->phase = PHASE_RECORDING;
	r->started = now_ns();
	err = opts->duration_ns ? deadline__start(&r->deadline, &r->skel->bss->phase,
						  r->started + opts->duration_ns) : 0;
	if (err) {
		pr_err("cannot start the -d timer: %s", strerror(-err));
		return err;
	}
	if (r->launched)
		kill(r->launched, SIGCONT);
	return 0;
}

static void announce(const struct recording *r)
{
	size_t n = r->tracked.attachment.nprobes;

	size_t procs = r->tracked.ntargets;
	char where[64];

	if (r->opts->system_wide)
		snprintf(where, sizeof(where), "every process mapping them");
	else
		snprintf(where, sizeof(where), "%zu process%s", procs, procs == 1 ? "" : "es");
	if (r->compat)
		pr_warn("%s", r->compat_note);
	pr_info("recording %zu function%s in %s (%s); Ctrl-C to stop", n, plural_s(n), where,
		r->multi ? "uprobe_multi" : r->tracked.attachment.by_event ? "a tracefs uprobe event a "
		"site" : "uprobe per function");
	if (r->opts->start_paused)
		pr_info("paused until SIGUSR1 (kill -USR1 %d)", getpid());
}

/* --to: the file, once written, into ClickHouse. The network is never on the recording's
 * path: it starts after the last event is written; when it fails the file stays, and the
 * line says how to send it later. The recording's status does not change. */
static void push_at_end(const char *path, const char *url, const struct stream_sent *streamed)
{
	struct push_opts o = { .url = url, .path = path, .batch_rows = 10000 };
	char hint[PATH_MAX + 128];

	snprintf(hint, sizeof(hint), "; the recording is in %s: tracer push it --to the URL later",
		 path);
	o.hint = hint;
	if (streamed->spans || streamed->states || streamed->counters)
		pr_info("streamed %" PRIu64 " span%s, %" PRIu64 " state%s, %" PRIu64
			" counter value%s to ClickHouse while recording",
			streamed->spans, plural_s(streamed->spans), streamed->states,
			plural_s(streamed->states), streamed->counters, plural_s(streamed->counters));
	push__file(&o);
}

int record__run(struct record_opts *opts)
{
	struct recording r = { .opts = opts, .epfd = -1, .sigfd = -1, .timerfd = -1 };
	struct stream *streamer = NULL;
	struct stream_sent streamed = { 0 };
	int err;

	libbpf_set_print(libbpf_print);
	if (geteuid() != 0) {
		pr_err("need root: uprobes need CAP_SYS_ADMIN; run with sudo");
		return 1;
	}
	if (check_invoking_user())
		return 1;
	/* before anything starts; TRACER_KERNEL_BTF: tests name a missing file */
	if (kernel_btf__check(getenv("TRACER_KERNEL_BTF") ?: KERNEL_BTF_PATH))
		return 1;
	recording__block_signals();
	err = prepare(&r);
	if (!err)
		err = recording__open_output(&r);
	if (!err && start(&r)) {
		/* the file says why it holds nothing */
		err = -1;
		r.stop_reason = "setup failed";
		r.end = now_ns();
		trace_writer__close(r.writer, r.end, r.stop_reason, "{}");
		r.writer = NULL;
	} else if (!err) {
		announce(&r);
		if (opts->to) /* spans go while recording; the push at the end makes it whole */
			streamer = stream__start(r.path, trace_writer__sched_fd(r.writer), opts->to);
		status__init(&r.status, verbosity < VERB_NORMAL || opts->top);
		if (opts->top)
			recording__start_top(&r);
		recording__event_loop(&r);
		status__clear(&r.status);
		top__stop(&r.top);
		err = recording__finish(&r);
		stream__stop(streamer, &streamed);
	}
	top__stop(&r.top); /* whatever failed: the terminal as it was */
	cleanup(&r);
	if (!err && opts->to)
		push_at_end(r.path, opts->to, &streamed);
	if (r.launched && err) {
		kill(r.launched, SIGKILL); /* not traced as asked: do not let it run */
		launch__exit_status(r.launched);
	}
	if (r.launched && !err)
		return launch__wait(r.launched, r.forward_signal);
	return err ? 1 : 0;
}
