// SPDX-License-Identifier: MIT
/* Set-up of a recording: the targets, the probe packs, the BPF object, the output file. */
#include "record/recording.h"
#include "record/irq_ctx.h"
#include "record/kernel_check.h"
#include "probe/packs.h"
#include "trace/trace_file.h"
#include "util/proc.h"
#include "util/util.h"
#include "tracer.skel.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function" /* its open and destroy: only its bytes */
#include "tracer_compat.skel.h"
#pragma GCC diagnostic pop

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <time.h>
#include <unistd.h>

/* Following (the default): the processes the targets started before tracer did (DataLoader workers, a pool)
 * are followed too, as the ones they start from now on will be. */
static void add_descendants(struct recording *r)
{
	char names[512] = "";
	size_t added = 0;

	for (size_t i = 0; i < r->primary; i++) {
		int *pids, pid = r->tracked.targets[i].pid;
		size_t n = proc__descendants(pid, &pids);

		for (size_t k = 0; k < n; k++) {
			if (tracked__add(&r->tracked, pids[k], r->err, sizeof(r->err))) {
				pr_debug("pid %d: %s", pids[k], r->err); /* gone, or given twice */
				continue;
			}
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%d (%s)",
				 added++ ? ", " : "", pids[k],
				 r->tracked.targets[r->tracked.ntargets - 1].comm);
		}
		free(pids);
	}
	if (added)
		pr_info("following %zu process%s the targets started before: %s", added,
			added == 1 ? "" : "es", names);
}

int *recording__primary_pids(const struct recording *r)
{
	int *pids = xcalloc(r->primary + 1, sizeof(*pids));

	for (size_t i = 0; i < r->primary; i++)
		pids[i] = r->tracked.targets[i].pid;
	return pids;
}

int recording__open_targets(struct recording *r)
{
	struct record_opts *o = r->opts;

	for (size_t i = 0; i < o->npids; i++) {
		if (tracked__add(&r->tracked, o->pids[i], r->err, sizeof(r->err))) {
			pr_err("%s", r->err);
			return -ESRCH;
		}
	}
	r->primary = r->alive = r->tracked.ntargets;
	if (o->follow)
		add_descendants(r);
	else if (!o->system_wide) {
		int *pids = recording__primary_pids(r);

		children__start(&r->children, pids, r->primary);
		free(pids);
	}
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
void recording__warn_hazards(const struct recording *r)
{
	static const struct {
		const char *glob, *what;
	} hazards[] = {
		{ "libboost_context*.so*", "Boost.Context coroutines" },
		{ "libboost_fiber*.so*", "Boost.Fiber fibers" },
		{ "libco.so*", "libco coroutines" },
		{ "libdill.so*", "libdill coroutines" },
		{ "libfolly*.so*", "folly fibers" },
	};
	const struct tracked *t = &r->tracked;
	bool returns = false;

	/* C++ exceptions need no warning: where they unwind, calls end at the functions' own
	 * exits (probe/resolve.h); a stack switch still meets a return probe */
	for (size_t i = 0; i < t->probes.cnt && !returns; i++)
		returns = !t->probes.v[i].nexits && !(t->probes.v[i].cfg.flags & PROBE_ENTRY_ONLY);
	for (size_t h = 0; returns && h < sizeof(hazards) / sizeof(hazards[0]); h++)
		for (size_t k = 0; k < t->ntargets; k++)
			for (size_t i = 0; i < t->targets[k].nobjs; i++)
				if (!fnmatch(hazards[h].glob, t->targets[k].objs[i].base, 0)) {
					pr_warn("pid %d uses %s (%s): if one switches stacks through "
						"a probed function, its return probe crashes the "
						"process; use --entry-only then",
						t->targets[k].pid, hazards[h].what,
						t->targets[k].objs[i].base);
					k = t->ntargets;
					break;
				}
}

static bool left_out(const struct record_opts *o, const char *name)
{
	for (size_t i = 0; i < o->nno_packs; i++)
		if (!strcmp(o->no_packs[i], "all") || !strcmp(o->no_packs[i], name))
			return true;
	return false;
}

/* A pack that applies to no target yet: picked when one maps its library. */
static void keep_late(struct recording *r, const struct probe_pack *listed, char *names,
		      size_t len)
{
	struct probe_specs specs = { 0 };
	struct probe_pack pack;

	if (probe_pack__load(listed->path, &pack, &specs, r->err, sizeof(r->err)))
		return;
	snprintf(names + strlen(names), len - strlen(names), "%s%s", names[0] ? ", " : "",
		 pack.name);
	tracked__add_late_pack(&r->tracked, &pack, &specs);
}

/* -P packs, or with no -u/-P every pack whose "when" matches a target; the other packs with a
 * "when" wait for a target to map their library. */
int recording__choose_specs(struct recording *r)
{
	struct record_opts *o = r->opts;
	char path[PATH_MAX], *chosen = r->packs_chosen, later[512] = "";
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
	r->auto_packs = true;
	n = probe_pack__list(&all);
	if (n < 0) {
		pr_warn("cannot read the probe packs folder %s: %s (set TRACER_PROBES to it): "
			"recording the scheduler only", probe_pack__dir(), strerror(-n));
		return 0;
	}
	for (int i = 0; i < n; i++) {
		if (left_out(o, all[i].name)) {
			probe_pack__free(&all[i]);
			continue;
		}
		if (pack_applies(&all[i], r) &&
		    !probe_pack__load(all[i].path, &pack, &o->specs, r->err, sizeof(r->err))) {
			snprintf(chosen + strlen(chosen), sizeof(r->packs_chosen) - strlen(chosen), "%s%s",
				 chosen[0] ? ", " : "", pack.name);
			probe_pack__free(&pack);
		} else if (all[i].when_cnt) {
			keep_late(r, &all[i], later, sizeof(later));
		}
		probe_pack__free(&all[i]);
	}
	free(all);
	if (chosen[0])
		pr_info("probe packs matching the target: %s", chosen);
	else if (!later[0] && o->nno_packs)
		pr_info("no probe pack left after --no-pack: recording the scheduler only");
	else if (!later[0])
		pr_warn("no probe pack matches the target and no -u/-P given: recording the "
			"scheduler only (see -u)");
	if (later[0])
		pr_info("probe packs waiting for their library to be loaded: %s", later);
	return 0;
}

/* The compat object (kernels 5.10 to 5.16) through tracer_bpf's skeleton: the build checked
 * that both have the same maps, programs and variables (Makefile). */
static struct tracer_bpf *open_compat(void)
{
	struct tracer_bpf *skel = calloc(1, sizeof(*skel));
	int err;

	if (!skel)
		return NULL;
	err = tracer_bpf__create_skeleton(skel);
	if (!err) {
		skel->skeleton->data = (void *)tracer_compat_bpf__elf_bytes(&skel->skeleton->data_sz);
		err = bpf_object__open_skeleton(skel->skeleton, NULL);
	}
	if (err) {
		tracer_bpf__destroy(skel);
		errno = -err;
		return NULL;
	}
	return skel;
}

/* Opens the BPF object and sets it up for this recording; NULL (errno) if it cannot. */
static struct tracer_bpf *open_bpf(struct recording *r, int ncpu, bool iter)
{
	struct record_opts *o = r->opts;
	struct tracer_bpf *skel = r->compat ? open_compat() : tracer_bpf__open();

	if (!skel)
		return NULL;
	skel->rodata->min_dur_ns = o->min_dur_ns;
	skel->rodata->launch_pid = r->launched;
	skel->rodata->filter_tgid = o->follow_given || o->system_wide; /* shared links */
	skel->rodata->follow = o->follow;
	skel->rodata->system_wide = o->system_wide;
	bpf_map__set_max_entries(skel->maps.rings, ncpu);
	/* probes are added while recording (libraries loaded later): room for all */
	bpf_map__set_max_entries(skel->maps.probe_cfgs, MAX_PROBES);
	/* a site each function's entry, exits and USDT ends: tracefs events only */
	bpf_map__set_max_entries(skel->maps.probe_sites,
				 r->tracked.attachment.by_event ? 4 * MAX_PROBES : 1);
	if (r->multi) {
		bpf_program__set_expected_attach_type(skel->progs.span_enter, TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.span_exit, TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.usdt_end, TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.span_exit_at, TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.on_exception, TRACE_UPROBE_MULTI);
	}
	bpf_program__set_autoload(skel->progs.stop_at_entry, r->launched || o->follow);
	bpf_program__set_autoload(skel->progs.open_calls, iter);
	if (o->no_sched) {
		bpf_program__set_autoload(skel->progs.on_switch, false);
		bpf_program__set_autoload(skel->progs.on_waking, false);
		bpf_program__set_autoload(skel->progs.on_wakeup_new, false);
		bpf_program__set_autoload(skel->progs.on_irq_entry, false);
		bpf_program__set_autoload(skel->progs.on_irq_exit, false);
		bpf_program__set_autoload(skel->progs.on_hrtimer_entry, false);
		bpf_program__set_autoload(skel->progs.on_hrtimer_exit, false);
		bpf_program__set_autoload(skel->progs.on_softirq_entry, false);
		bpf_program__set_autoload(skel->progs.on_softirq_exit, false);
		bpf_program__set_autoload(skel->progs.check_irq_ctx, false);
	} else {
		irq_ctx__configure(skel);
	}
	py_record__configure(&r->py, skel,
			     r->compat ? "this kernel lacks bpf_loop, 5.17 on"
			     : o->no_python || o->no_args ? "--no-python or --no-args" : NULL,
			     o->py_hz);
	return skel;
}

/* Opens and loads the BPF object. The probe table is sized to the resolved probes, or to its
 * maximum when they are not known yet (recording__launch mode loads before the command's libraries are
 * mapped). */
int recording__load_bpf(struct recording *r)
{
	struct record_opts *o = r->opts;
	int ncpu = libbpf_num_possible_cpus();
	/* the task iterator reads the calls open at the stop only where a pidfd cannot name a
	 * thread (record/finish.c): elsewhere it is not loaded, and a kernel that refuses it
	 * (iter/task 5.8, task storage from it) records without it */
	bool iter = !r->compat && !kernel_check__pidfd_thread();
	struct tracer_bpf *skel;
	int err;

	if (ncpu <= 0) {
		pr_err("cannot count the CPUs: %s", strerror(-ncpu));
		return ncpu ? ncpu : -EINVAL;
	}
	for (;;) {
		skel = open_bpf(r, ncpu, iter);
		if (!skel) {
			pr_err("cannot open the BPF object: %s", strerror(errno));
			return -errno;
		}
		r->skel = skel;
		err = tracer_bpf__load(skel);
		if (!err || !iter)
			break;
		pr_debug("the BPF programs with the task iterator: %s; again without it",
			 strerror(-err));
		py_record__free(&r->py);
		tracer_bpf__destroy(skel);
		r->skel = NULL;
		iter = false;
	}
	if (err) {
		pr_err("cannot load the BPF programs: %s (run with -v for the verifier's log)",
		       strerror(-err));
		return err;
	}
	/* --buffer-size in all, split among the CPUs */
	err = rings__create(&r->rings, bpf_map__fd(skel->maps.rings), ncpu,
			    rings__size((uint64_t)o->buffer_mb << 20, ncpu));
	if (err)
		pr_err("cannot create the ring buffers (%d of %u KB): %s", ncpu,
		       rings__size((uint64_t)o->buffer_mb << 20, ncpu) >> 10, strerror(-err));
	if (!err && !o->no_sched)
		irq_ctx__choose(skel);
	return err;
}

/* The processes opened are still the ones probes go to: not exited, their pid not reused
 * (pidfd and start time) while the programs loaded. */
int recording__check_targets(struct recording *r)
{
	for (size_t i = 0; i < r->tracked.ntargets; i++) {
		const struct target *t = &r->tracked.targets[i];

		if (t->pid && !target__alive(t)) {
			if (i >= r->primary) { /* a child followed that ended meanwhile: nothing of it to see */
				pr_debug("followed pid %d exited before tracer attached", t->pid);
				continue;
			}
			pr_err("pid %d exited (or its pid now belongs to another process) before tracer "
			       "attached; nothing was recorded", t->pid);
			return -ESRCH;
		}
	}
	return 0;
}

/* The BPF side of the tracked set. */
int recording__setup_tracked(struct recording *r)
{
	struct tracked *t = &r->tracked;

	t->enter = r->skel->progs.span_enter;
	t->exit = r->skel->progs.span_exit;
	t->targets_map = r->skel->maps.targets;
	t->cfg_map = r->skel->maps.probe_cfgs;
	t->usdt_map = r->skel->maps.usdt_cfgs;
	attach__set_programs(&t->attachment, r->skel->progs.usdt_end, r->skel->progs.span_exit_at);
	t->attachment.sites_map_fd = bpf_map__fd(r->skel->maps.probe_sites);
	t->exceptions.prog = r->skel->progs.on_exception;
	t->exceptions.links.multi = t->attachment.multi;
	/* the hook each hit is (EXC_THROW, EXC_CATCH) is the site's cookie: the compat programs
	 * have no link cookies */
	t->exceptions.links.by_event = t->attachment.by_event;
	t->exceptions.links.sites_map_fd = t->attachment.sites_map_fd;
	for (size_t i = 0; i < t->ntargets; i++) {
		__u32 pid = t->targets[i].pid;
		__u8 one = 1;

		if (pid && bpf_map__update_elem(t->targets_map, &pid, sizeof(pid), &one, 1, BPF_ANY)) {
			pr_err("pid %u: cannot add it to the traced processes (%s): trace at most %u "
			       "at once", pid, strerror(errno), bpf_map__max_entries(t->targets_map));
			return -errno;
		}
	}
	return 0;
}

/* An interrupt entry program counts up, its exit program down: attached before its exit, an
 * entry could count an interrupt whose exit is never seen, and the CPU would look inside an
 * interrupt for the rest of the recording. */
static bool irq_entry(const struct bpf_program *prog)
{
	const char *name = bpf_program__name(prog);
	size_t n = strlen(name);

	return !strncmp(name, "on_", 3) && n > 6 && !strcmp(name + n - 6, "_entry");
}

int recording__attach_sched(struct recording *r)
{
	struct bpf_program *prog;

	for (int pass = 0; pass < 2; pass++) {
		bpf_object__for_each_program(prog, r->skel->obj) {
			struct bpf_link *l;

			if (!bpf_program__autoload(prog) || !bpf_program__autoattach(prog) ||
			    bpf_program__type(prog) != BPF_PROG_TYPE_TRACING ||
			    irq_entry(prog) != (pass == 1))
				continue;
			l = bpf_program__attach(prog);
			if (!l) {
				pr_err("cannot attach %s: %s", bpf_program__name(prog),
				       strerror(errno));
				return -errno;
			}
			r->sched_links = xrealloc(r->sched_links, r->nsched + 1,
						  sizeof(*r->sched_links));
			r->sched_links[r->nsched++] = l;
		}
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

int recording__open_output(struct recording *r)
{
	int fd, err;

	if (r->opts->output)
		snprintf(r->path, sizeof(r->path), "%s", r->opts->output);
	else if (r->opts->top) /* a live view writes nothing unless asked */
		snprintf(r->path, sizeof(r->path), "/dev/null");
	else
		default_output(r);
	fd = r->opts->top && !r->opts->output
		     ? open("/dev/null", O_WRONLY | O_CLOEXEC)
		     : trace_file__create(r->path, TF_IN_PLACE, NULL, r->err, sizeof(r->err));
	if (fd < 0) {
		pr_err("%s", r->err);
		return fd;
	}
	err = trace_writer__open(&r->writer, r->path, fd, r->t0);
	if (err) {
		close(fd);
		pr_err("cannot write %s: %s", r->path, strerror(-err));
		return err;
	}
	recording__write_started(r);
	/* on disk before anything is attached: a recording killed at once is still repairable */
	trace_writer__flush(r->writer);
	return 0;
}

/* Names and starting states of the processes and threads already running. */
void recording__add_existing_threads(struct recording *r)
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

void recording__span_prog_fds(const struct recording *r, int fds[SPAN_PROGS])
{
	fds[SPAN_PROG_ENTRY] = bpf_program__fd(r->skel->progs.span_enter);
	fds[SPAN_PROG_RETURN] = bpf_program__fd(r->skel->progs.span_exit);
	fds[SPAN_PROG_EXIT] = bpf_program__fd(r->skel->progs.span_exit_at);
}

/* The statistics are on only while recording; calibrating takes about 20 ms. A failure only
 * means the summary cannot say what tracing cost. */
void recording__start_overhead(struct recording *r)
{
	int *pids = xcalloc(r->primary ? r->primary : 1, sizeof(int)), err;

	for (size_t i = 0; i < r->primary; i++)
		pids[i] = r->tracked.targets[i].pid;
	int fds[SPAN_PROGS];

	err = overhead__start(&r->overhead, pids, r->primary, r->multi);
	recording__span_prog_fds(r, fds);
	overhead__watch(&r->overhead, fds);
	if (err)
		pr_warn("cannot turn on the BPF run-time statistics: %s; the summary will not say "
			"what tracing cost", strerror(-err));
	/* the children followed from the start (a pool's workers): the share is the tree's */
	for (size_t i = r->primary; i < r->tracked.ntargets; i++)
		if (r->tracked.targets[i].pid > 0)
			overhead__add_pid(&r->overhead, r->tracked.targets[i].pid, false);
	free(pids);
}
