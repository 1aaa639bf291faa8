// SPDX-License-Identifier: MIT
/* Launch mode (tracer -- CMD) and --follow: programs held at their entry point while
 * they are probed. */
#include "record/recording.h"
#include "record/launch.h"
#include "util/util.h"
#include "tracer.skel.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

/* Launch mode: start the command held at its exec, load the programs, let it run to its entry
 * point (libraries mapped, none of its code run) and stop it there. */
/* Whether the command (found on PATH as execvp finds it) is a script ("#!"): what it runs is
 * another program, which --no-follow leaves untraced. */
static bool is_script(const char *cmd)
{
	char path[PATH_MAX], head[2] = { 0 };
	const char *env = getenv("PATH");
	char *dirs, *save = NULL;
	int fd = -1;

	if (strchr(cmd, '/')) {
		fd = open(cmd, O_RDONLY | O_CLOEXEC);
	} else {
		dirs = xstrdup(env ? env : "/usr/bin:/bin");
		for (char *d = strtok_r(dirs, ":", &save); d && fd < 0;
		     d = strtok_r(NULL, ":", &save)) {
			snprintf(path, sizeof(path), "%s/%s", *d ? d : ".", cmd);
			if (!access(path, X_OK))
				fd = open(path, O_RDONLY | O_CLOEXEC);
		}
		free(dirs);
	}
	if (fd < 0)
		return false;
	if (read(fd, head, 2) != 2)
		head[0] = 0;
	close(fd);
	return head[0] == '#' && head[1] == '!';
}

int recording__launch(struct recording *r)
{
	struct record_opts *o = r->opts;
	LIBBPF_OPTS(bpf_uprobe_opts, uo);
	struct bpf_link *stop;
	uint64_t entry;
	char exe[64];
	int err;

	if (!o->follow && is_script(o->cmd[0]))
		pr_info("%s is a script: the program it starts (an exec, a child) is traced only "
			"without --no-follow", o->cmd[0]);
	err = launch__start(o->cmd, o->output && !strcmp(o->output, "-"), &r->launched, r->err,
			    sizeof(r->err));
	if (err) {
		pr_err("%s", r->err);
		return err;
	}
	err = launch__entry_offset(r->launched, &entry);
	if (err) {
		pr_err("cannot find the entry point of %s: %s", o->cmd[0], strerror(-err));
		return err;
	}
	err = recording__load_bpf(r);
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

	if (recording__over(r)) { /* -d ended it: nothing to probe, nothing to hold */
		kill(pid, SIGCONT);
		return;
	}
	if (i >= 0) {
		struct target *t = &r->tracked.targets[i];

		/* its own links would go on probing the new program where it maps the same
		 * objects, beside the new ones: twice each call */
		tracked__release(&r->tracked, pid);
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
		r->stop_since = xrealloc(r->stop_since, r->nstops + 1, sizeof(uint64_t));
		r->stop_links[r->nstops] = l;
		r->stop_since[r->nstops] = now_ns();
		r->stop_pids[r->nstops++] = pid;
	} else {
		pr_warn("pid %d exec'd a program tracer cannot stop at its start: its calls are "
			"probed from the next scan", pid);
	}
	kill(pid, SIGCONT);
}

/* Forgets the stop at a followed program's entry point k. */
static void release_stop(struct recording *r, size_t k)
{
	__u32 key = r->stop_pids[k];

	bpf_link__destroy(r->stop_links[k]);
	bpf_map__delete_elem(r->skel->maps.stop_pids, &key, sizeof(key), BPF_ANY);
	r->nstops--;
	r->stop_links[k] = r->stop_links[r->nstops];
	r->stop_pids[k] = r->stop_pids[r->nstops];
	r->stop_since[k] = r->stop_since[r->nstops];
}

void recording__release_late_stops(struct recording *r, uint64_t now)
{
	for (size_t k = 0; k < r->nstops; k++) {
		int pid = r->stop_pids[k];

		if (now - r->stop_since[k] < STOP_TIMEOUT_NS)
			continue;
		pr_warn("pid %d did not reach its program's entry point within %d s: letting it "
			"run; its calls are probed from the next scan", pid,
			(int)(STOP_TIMEOUT_NS / 1000000000));
		release_stop(r, k--);
		kill(pid, SIGCONT); /* never leave a followed process stopped */
	}
}

/* Attaches the probes of what the followed process i maps and no probe covers yet. One that
 * exited meanwhile is no failure. The functions the budget stopped probing stay unprobed. */
static void probe_new_objects(struct recording *r, int i)
{
	const struct target *t = &r->tracked.targets[i];

	if (recording__over(r)) /* -d ended it: probes now would record nothing */
		return;
	if (tracked__attach_new(&r->tracked, false, r->err, sizeof(r->err)) < 0) {
		if (target__alive(t))
			pr_warn("pid %d: %s", t->pid, r->err);
		else
			pr_debug("pid %d exited before its probes were attached", t->pid);
	}
	if (r->budget.nshed)
		attach__shed(&r->tracked.attachment, r->budget.shed, r->budget.n);
}

/* Probes what a followed process maps now (at its entry point), then lets it go on. */
static void follow_entry(struct recording *r, int pid)
{
	int i = tracked__find(&r->tracked, pid);

	if (i >= 0) {
		target__read_maps(&r->tracked.targets[i]);
		probe_new_objects(r, i);
	}
	for (size_t k = 0; k < r->nstops; k++) {
		if (r->stop_pids[k] != pid)
			continue;
		release_stop(r, k);
		break;
	}
	kill(pid, SIGCONT);
}

void recording__watch_pidfd(struct recording *r, const struct target *t)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = t->pid };

	if (t->pidfd >= 0)
		epoll_ctl(r->epfd, EPOLL_CTL_ADD, t->pidfd, &ev);
}

/* The consumer met a new process: a child (followed), an exec, an entry point reached. */
void recording__on_process(void *ctx, const struct task_rec *t)
{
	struct recording *r = ctx;
	__u32 key = t->pid;
	__u8 one;

	switch (t->event) {
	case TASK_NEW:
		if (!r->opts->follow)
			return;
		/* traced already (BPF added it at the fork); it may be gone by now */
		consumer__add_pid(&r->consumer, t->pid, t->comm);
		overhead__add_pid(&r->overhead, t->pid, true); /* the share is the tree's */
		py_record__add_child(&r->py, t->pid, t->parent_pid);
		if (tracked__add(&r->tracked, t->pid, r->err, sizeof(r->err))) {
			pr_debug("pid %d: %s", t->pid, r->err);
			return;
		}
		/* the pid opened is the child's while the kernel counts it traced: freed, its pid
		 * may be another process's by now */
		if (bpf_map__lookup_elem(r->skel->maps.targets, &key, sizeof(key), &one, 1, 0)) {
			pr_debug("pid %d exited before tracer took it in", t->pid);
			tracked__drop_last(&r->tracked);
			return;
		}
		recording__watch_pidfd(r, &r->tracked.targets[r->tracked.ntargets - 1]);
		/* by default a forked child gets links of its own: its parent's fire only in the
		 * parent (a uprobe_multi link with a pid filters by its task), so its calls are
		 * recorded from a few ms after its fork; --follow's shared links record them from
		 * its first instruction */
		if (!(r->tracked.resolve_flags & RESOLVE_SHARED))
			probe_new_objects(r, r->tracked.ntargets - 1);
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
