// SPDX-License-Identifier: MIT
#include "record/tracked.h"
#include "probe/packs.h"
#include "record/overhead.h"
#include "util/util.h"

#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int tracked__find(const struct tracked *t, int pid)
{
	for (size_t i = 0; i < t->ntargets; i++)
		if (t->targets[i].pid == pid)
			return i;
	return -1;
}

static struct target *push_target(struct tracked *t)
{
	t->targets = xrealloc(t->targets, t->ntargets + 1, sizeof(*t->targets));
	t->resolved = xrealloc(t->resolved, t->ntargets + 1, sizeof(size_t));
	t->resolved[t->ntargets] = 0;
	return &t->targets[t->ntargets];
}

int tracked__add(struct tracked *t, int pid, char *err, size_t errlen)
{
	int ret;

	if (tracked__find(t, pid) >= 0) {
		snprintf(err, errlen, "pid %d is given twice", pid);
		return -EEXIST;
	}
	ret = target__open(pid, push_target(t), err, errlen);
	if (ret)
		return ret;
	/* the kernel side learns of it at setup (recording__setup_tracked) or, for a followed
	 * child, at its fork: marked here, one gone by now would leave its pid looking traced */
	t->ntargets++;
	return 0;
}

void tracked__drop_last(struct tracked *t)
{
	target__close(&t->targets[--t->ntargets]);
}

static bool linked(const struct tracked *t, const struct mapped_object *o)
{
	for (size_t i = 0; i < t->nlinked; i++)
		if (t->linked[i].dev == o->dev && t->linked[i].ino == o->ino)
			return true;
	return false;
}

/* What this round resolves: for each target, its objects not probed yet (and, with shared
 * links, not probed through another process). Views share the targets' strings. */
static size_t make_views(struct tracked *t, struct target *views)
{
	size_t n = 0;

	for (size_t i = 0; i < t->ntargets; i++) {
		struct target *v = &views[n];

		*v = t->targets[i];
		v->objs = xcalloc(t->targets[i].nobjs, sizeof(*v->objs));
		v->nobjs = 0;
		for (size_t k = t->resolved[i]; k < t->targets[i].nobjs; k++) {
			const struct mapped_object *o = &t->targets[i].objs[k];

			if ((t->resolve_flags & RESOLVE_SHARED) && linked(t, o))
				continue;
			v->objs[v->nobjs++] = *o;
			if (t->resolve_flags & RESOLVE_SHARED) {
				t->linked = xrealloc(t->linked, t->nlinked + 1, sizeof(*t->linked));
				t->linked[t->nlinked].dev = o->dev;
				t->linked[t->nlinked].ino = o->ino;
				t->nlinked++;
			}
		}
		t->resolved[i] = t->targets[i].nobjs;
		n++;
	}
	return n;
}

/* What each new probe captures, before it is attached: a probe without its config would
 * record nothing of what it was asked for, so that is an error, not a silent loss. */
static int write_cfgs(struct tracked *t, size_t first, char *err, size_t errlen)
{
	size_t no_args = 0;

	for (__u32 id = first; id < t->probes.cnt; id++) {
		struct probe_cfg cfg = t->probes.v[id].cfg;

		if (t->no_args)
			cfg.flags &= ~(PROBE_ARGS | PROBE_RET | PROBE_NAME_FROM | PROBE_USDT);
		if ((cfg.flags & PROBE_USDT) && t->usdt_map &&
		    bpf_map__update_elem(t->usdt_map, &id, sizeof(id), &t->probes.v[id].usdt,
					 sizeof(t->probes.v[id].usdt), BPF_ANY)) {
			cfg.flags &= ~(PROBE_USDT | PROBE_ARGS); /* no room: no arguments */
			no_args++;
		}
		if (bpf_map__update_elem(t->cfg_map, &id, sizeof(id), &cfg, sizeof(cfg), BPF_ANY)) {
			snprintf(err, errlen, "%s: cannot configure its probe: %s",
				 t->probes.v[id].function, strerror(errno));
			return -errno;
		}
	}
	if (no_args)
		pr_warn("%zu USDT probe%s recorded without %s arguments: more with arguments than "
			"the kernel side holds (%u)", no_args, plural_s(no_args),
			no_args == 1 ? "its" : "their", bpf_map__max_entries(t->usdt_map));
	return 0;
}

#define STEPPED_WARN 20 /* single-stepped sites worth a warning, if a quarter of all */

/* Before attaching: a probe on an instruction the kernel single-steps costs ~10 µs a call
 * instead of ~1 (endbr64, mov, sub ...). Many of them can slow a target several times over:
 * one line says so, with the worst-looking names. Counted once per function and object. */
static void warn_stepped(const struct attach_sites *sites)
{
	size_t total = 0, stepped = 0;

	for (size_t i = 0; i < sites->cnt; i++) {
		if (sites->v[i].usdt_end || sites->v[i].ref_ctr_offsets || sites->v[i].at_exit)
			continue; /* USDT sites are nops: emulated; exits are not where calls start */
		for (size_t k = 0; k < sites->v[i].cnt; k++) {
			total++;
			stepped += insn__classify_site(sites->v[i].path, sites->v[i].offsets[k]) ==
				   INSN_STEPPED;
		}
	}
	if (stepped >= STEPPED_WARN && stepped * 4 >= total)
		pr_warn("%zu of the %zu functions to probe start with an instruction the kernel "
			"single-steps (~10 us a call instead of ~1): a hot one slows the target "
			"(the summary's overhead line says by how much); narrow -u if it matters",
			stepped, total);
}

/* What the kernel said about a function it would not probe, in words. */
static const char *refusal(int e)
{
	return e == -524 ? "ENOTSUPP: an instruction uprobes cannot handle" : strerror(-e);
}

/* One warning per refusal since `from` (entries: a return is refused with its entry), naming
 * the functions; an error when nothing at all could be attached. */
static int report_refused(struct tracked *t, size_t from, char *err, size_t errlen)
{
	struct attachment *a = &t->attachment;
	size_t n = 0, shown = 0;
	char names[512] = "";

	for (size_t i = from; i < a->nrefused; i++) {
		const struct probe *p = &t->probes.v[a->refused[i].cookie];
		size_t len = strlen(names);

		if (a->refused[i].ret)
			continue;
		n++;
		if (len + strlen(p->function) + 8 < sizeof(names)) {
			snprintf(names + len, sizeof(names) - len, "%s%s", shown ? ", " : "",
				 p->function);
			shown++;
		}
	}
	if (!n)
		return 0;
	a->nprobes -= n < a->nprobes ? n : a->nprobes;
	if (!a->nprobes) {
		snprintf(err, errlen, "the kernel refused uprobes on every function matched (%s): "
				      "pick other functions",
			 refusal(a->refused[from].err));
		return -EINVAL;
	}
	pr_warn("the kernel refused uprobes on %zu function%s (%s): %s%s; traced without %s", n,
		plural_s(n), refusal(a->refused[a->nrefused - 1].err), names,
		shown < n ? ", ..." : "", n == 1 ? "it" : "them");
	return 0;
}

/* Where calls end at their exits, the throws and catches that end the calls an exception unwinds. */
static int hook_exceptions(struct tracked *t, const struct attach_sites *sites, char *err,
			size_t errlen)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < t->ntargets; i++)
		ret = exception_hooks__add(&t->exceptions, &t->targets[i],
					   t->resolve_flags & RESOLVE_SHARED ? 0 : t->targets[i].pid,
					   sites, &t->syms, err, errlen);
	return ret;
}

/* Resolves specs against views, then attaches what they resolved to. */
static int attach_specs(struct tracked *t, const struct probe_specs *specs, struct target *views,
			size_t n, unsigned int flags, char *err, size_t errlen)
{
	struct attach_sites sites = { 0 };
	size_t first = t->probes.cnt, refused = t->attachment.nrefused;
	int ret;

	ret = resolve__probes_cached(specs, views, n, flags, &t->probes, &sites, &t->syms, err,
				     errlen);
	if (!ret && t->probes.cnt > bpf_map__max_entries(t->cfg_map)) {
		snprintf(err, errlen, "%zu functions to probe: at most %u; narrow the -u patterns",
			 t->probes.cnt, bpf_map__max_entries(t->cfg_map));
		ret = -E2BIG;
	}
	if (!ret) {
		if (t->probes.cnt > first) /* a child's sites are its parent's: said already */
			warn_stepped(&sites);
		ret = write_cfgs(t, first, err, errlen);
		if (!ret)
			ret = hook_exceptions(t, &sites, err, errlen);
	}
	if (!ret)
		ret = attach__sites(&t->attachment, &sites, t->enter, t->exit, err, errlen);
	if (!ret)
		ret = report_refused(t, refused, err, errlen);
	attach_sites__free(&sites);
	return ret;
}

static void free_views(struct target *views, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(views[i].objs);
	free(views);
}

int tracked__attach_new(struct tracked *t, bool strict, char *err, size_t errlen)
{
	struct target *views = xcalloc(t->ntargets + 1, sizeof(*views));
	size_t n = make_views(t, views);
	unsigned int flags = t->resolve_flags | (strict ? 0 : RESOLVE_LENIENT);
	int ret;

	ret = attach_specs(t, t->specs, views, n, flags, err, errlen);
	/* the packs picked since the start probe the new objects too */
	for (size_t k = 0; !ret && k < t->nlate; k++)
		if (t->late[k].picked)
			ret = attach_specs(t, t->late[k].specs, views, n,
					   t->resolve_flags | RESOLVE_LENIENT, err, errlen);
	free_views(views, n);
	return ret;
}

void tracked__add_late_pack(struct tracked *t, struct probe_pack *pack, struct probe_specs *specs)
{
	struct late_pack *l;

	t->late = xrealloc(t->late, t->nlate + 1, sizeof(*t->late));
	l = &t->late[t->nlate++];
	l->pack = *pack;
	l->specs = xcalloc(1, sizeof(*l->specs));
	*l->specs = *specs;
	l->picked = false;
}

/* Every object of every target, probed or not: a pack picked now probes all of them. With
 * shared links, each object once. */
static size_t all_views(const struct tracked *t, struct target *views)
{
	for (size_t i = 0; i < t->ntargets; i++) {
		struct target *v = &views[i];

		*v = t->targets[i];
		v->objs = xcalloc(t->targets[i].nobjs + 1, sizeof(*v->objs));
		v->nobjs = 0;
		for (size_t k = 0; k < t->resolved[i]; k++) {
			const struct mapped_object *o = &t->targets[i].objs[k];
			bool seen = false;

			for (size_t j = 0; (t->resolve_flags & RESOLVE_SHARED) && j <= i && !seen; j++)
				for (size_t m = 0; m < views[j].nobjs && !seen; m++)
					seen = views[j].objs[m].dev == o->dev &&
					       views[j].objs[m].ino == o->ino;
			if (!seen)
				v->objs[v->nobjs++] = *o;
		}
	}
	return t->ntargets;
}

/* The late packs a target now maps the library of: picked and attached. */
static int pick_late_packs(struct tracked *t, char *err, size_t errlen)
{
	int ret = 0;

	for (size_t k = 0; !ret && k < t->nlate; k++) {
		struct late_pack *l = &t->late[k];
		const struct mapped_object *why = NULL;
		struct target *views;
		size_t i, n;

		for (i = 0; !l->picked && i < t->ntargets && !why; i++)
			why = probe_pack__reason(&l->pack, t->targets[i].objs, t->resolved[i]);
		if (!why)
			continue;
		l->picked = true;
		views = xcalloc(t->ntargets + 1, sizeof(*views));
		n = all_views(t, views);
		ret = attach_specs(t, l->specs, views, n, t->resolve_flags | RESOLVE_LENIENT, err,
				   errlen);
		free_views(views, n);
		if (ret)
			break;
		/* said once its probes are live: from here on every call is recorded */
		pr_info("pid %d mapped %s: probing it with the %s pack", t->targets[i - 1].pid,
			why->base, l->pack.name);
	}
	return ret;
}

int tracked__rescan(struct tracked *t, char *err, size_t errlen)
{
	size_t before = 0, after = 0;
	int ret;

	for (size_t i = 0; i < t->ntargets; i++) {
		before += t->resolved[i];
		if (t->targets[i].pid > 0 && t->targets[i].pidfd >= 0)
			target__read_maps(&t->targets[i]);
		after += t->targets[i].nobjs;
	}
	ret = after == before ? 0 : tracked__attach_new(t, false, err, errlen);
	if (!ret)
		ret = pick_late_packs(t, err, errlen);
	return ret ? ret : (int)(after - before);
}

void tracked__release(struct tracked *t, int pid)
{
	if ((t->resolve_flags & RESOLVE_SHARED) || pid <= 0)
		return;
	attach__release_pid(&t->attachment, pid);
	exception_hooks__forget(&t->exceptions, pid);
}

/* Library folders searched with -a for objects no process maps yet. */
static const char *const lib_dirs[] = { "/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu",
					"/usr/local/lib", "/usr/lib", "/usr/bin", "/usr/local/bin" };

static bool wanted(const struct tracked *t, const char *base)
{
	for (size_t s = 0; s < t->specs->cnt; s++)
		if (strcmp(t->specs->v[s].object, "*") &&
		    probe_spec__object_matches(t->specs->v[s].object, base))
			return true;
	return false;
}

static void add_object(struct target *sys, const char *path, const char *open_path,
		       const struct stat *st)
{
	struct mapped_object *o;

	for (size_t i = 0; i < sys->nobjs; i++)
		if (sys->objs[i].dev == st->st_dev && sys->objs[i].ino == st->st_ino)
			return;
	sys->objs = xrealloc(sys->objs, sys->nobjs + 1, sizeof(*sys->objs));
	o = &sys->objs[sys->nobjs++];
	memset(o, 0, sizeof(*o)); /* not any process's executable: system-wide objects */
	o->path = xstrdup(path);
	o->base = xstrdup(strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
	o->open_path = xstrdup(open_path);
	o->dev = st->st_dev;
	o->ino = st->st_ino;
}

int tracked__add_system(struct tracked *t, char *err, size_t errlen)
{
	struct target *sys = push_target(t);
	char path[PATH_MAX];
	struct dirent *de;
	struct stat st;
	DIR *d;

	memset(sys, 0, sizeof(*sys));
	sys->pidfd = -1;
	snprintf(sys->comm, sizeof(sys->comm), "(system)");
	/* what every process maps now, opened through that process */
	d = opendir("/proc");
	while (d && (de = readdir(d))) {
		struct target one = { .pid = atoi(de->d_name), .pidfd = -1 };

		if (one.pid <= 0 || one.pid == getpid() || target__read_maps(&one))
			continue;
		for (size_t i = 0; i < one.nobjs; i++)
			if (wanted(t, one.objs[i].base) && !stat(one.objs[i].open_path, &st))
				add_object(sys, one.objs[i].path, one.objs[i].open_path, &st);
		target__close(&one);
	}
	if (d)
		closedir(d);
	/* and the library folders, for processes that start later */
	for (size_t k = 0; k < sizeof(lib_dirs) / sizeof(lib_dirs[0]); k++) {
		d = opendir(lib_dirs[k]);
		while (d && (de = readdir(d))) {
			snprintf(path, sizeof(path), "%s/%s", lib_dirs[k], de->d_name);
			if (wanted(t, de->d_name) && !stat(path, &st) && S_ISREG(st.st_mode))
				add_object(sys, path, path, &st);
		}
		if (d)
			closedir(d);
	}
	if (!sys->nobjs) {
		snprintf(err, errlen, "-a: no process maps, and no library folder holds, an object "
				      "matching the probes' object patterns");
		target__close(sys);
		return -ENOENT;
	}
	t->ntargets++;
	return 0;
}

void tracked__free(struct tracked *t)
{
	attach__detach(&t->attachment);
	exception_hooks__free(&t->exceptions);
	sym_cache__free(&t->syms);
	probe_table__free(&t->probes);
	for (size_t k = 0; k < t->nlate; k++) {
		probe_pack__free(&t->late[k].pack);
		probe_specs__free(t->late[k].specs);
		free(t->late[k].specs);
	}
	free(t->late);
	for (size_t i = 0; i < t->ntargets; i++)
		target__close(&t->targets[i]);
	free(t->targets);
	free(t->resolved);
	free(t->linked);
	memset(t, 0, sizeof(*t));
}
