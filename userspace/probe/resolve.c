// SPDX-License-Identifier: MIT
#include "probe/resolve.h"
#include "probe/sym_index.h"
#include "elf/demangle.h"
#include "elf/elf_syms.h"
#include "elf/site.h"
#include "elf/usdt.h"
#include "util/util.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The process's executable switches stacks (swapcontext...): a return probe anywhere in it
 * can return onto the wrong stack, so all its probes are entry-only, as in a Go program. */
static bool switches_stacks(struct sym_cache *c, const struct target *t, int *warned)
{
	for (size_t i = 0; i < t->nobjs; i++) {
		const struct elf_syms *syms;

		if (!t->objs[i].is_exe)
			continue;
		syms = sym_cache__get(c, &t->objs[i]);
		if (!syms || !syms->switches_stacks)
			return false;
		if (*warned != t->pid)
			pr_warn("pid %d switches stacks (%s calls swapcontext/setcontext): its "
				"probes are entry-only (a return probe would return onto the wrong "
				"stack and crash it); calls show as instants",
				t->pid, t->objs[i].base);
		*warned = t->pid;
		return true;
	}
	return false;
}

struct usdt_cache {
	struct {
		dev_t dev;
		ino_t ino;
		struct usdt_probes probes;
	} *v;
	size_t cnt;
};

static const struct usdt_probes *usdt_cache__get(struct usdt_cache *c,
						 const struct mapped_object *o)
{
	for (size_t i = 0; i < c->cnt; i++)
		if (c->v[i].dev == o->dev && c->v[i].ino == o->ino)
			return &c->v[i].probes;
	c->v = xrealloc(c->v, c->cnt + 1, sizeof(*c->v));
	c->v[c->cnt].dev = o->dev;
	c->v[c->cnt].ino = o->ino;
	if (usdt__read(o->open_path, &c->v[c->cnt].probes))
		memset(&c->v[c->cnt].probes, 0, sizeof(c->v[c->cnt].probes));
	return &c->v[c->cnt++].probes;
}

static void usdt_cache__free(struct usdt_cache *c)
{
	for (size_t i = 0; i < c->cnt; i++)
		usdt_probes__free(&c->v[i].probes);
	free(c->v);
}

/* The BPF side of a spec: argument indexes in capture order, the queue's slot among them. */
static void probe__set_cfg(struct probe *p, const struct probe_spec *spec, bool entry_only)
{
	struct probe_cfg *c = &p->cfg;

	memset(c, 0, sizeof(*c));
	p->queue_slot = -1;
	if (entry_only)
		c->flags |= PROBE_ENTRY_ONLY;
	if (spec->python_wait)
		c->flags |= PROBE_PY_WAIT;
	if (spec->name_arg >= 0) {
		c->flags |= PROBE_NAME_FROM;
		c->name_arg = spec->name_arg;
		c->name_nderef = spec->name_nderef;
		for (int i = 0; i < spec->name_nderef; i++)
			c->name_deref[i] = spec->name_deref[i];
	}
	for (int i = 0; i < spec->nargs; i++) {
		if (spec->args[i].idx == ARG_RET) {
			c->flags |= PROBE_RET;
			continue;
		}
		if (spec->args[i].idx == spec->queue_arg)
			p->queue_slot = c->nargs;
		c->arg_idx[c->nargs++] = spec->args[i].idx;
	}
	if (spec->queue_role && p->queue_slot < 0 && c->nargs < MAX_ARGS) {
		p->queue_slot = c->nargs;
		c->arg_idx[c->nargs++] = spec->queue_arg;
	}
	if (c->nargs)
		c->flags |= PROBE_ARGS;
}

/* A span's name: the spec's, else the function's (C++: demangled without its parameters,
 * "onnx::Conv::Compute"). A '*' in the spec's name stands for what the '*' of its function
 * glob matched: "aten::*" for at::_ops::*::call names at::_ops::conv2d::call "aten::conv2d". */
static char *span_name(const struct probe_spec *spec, const char *sym)
{
	const struct demangled *d = demangle__get(sym);
	const char *base = d ? d->base : sym, *star = spec->name ? strchr(spec->name, '*') : NULL;
	const char *glob_star = strchr(spec->function, '*');
	size_t pre, post, len = strlen(base);
	char *name;

	if (!spec->name)
		return xstrdup(base);
	if (!star || !glob_star || strpbrk(glob_star + 1, "*?[") ||
	    strpbrk(spec->function, "?[") || strchr(star + 1, '*'))
		return xstrdup(spec->name);
	pre = glob_star - spec->function;
	post = strlen(glob_star + 1);
	if (len < pre + post || strncmp(base, spec->function, pre) ||
	    strcmp(base + len - post, glob_star + 1))
		return xstrdup(base);
	if (asprintf(&name, "%.*s%.*s%s", (int)(star - spec->name), spec->name,
		     (int)(len - pre - post), base + pre, star + 1) < 0)
		abort();
	return name;
}

/* The probe already at this offset of the object (an alias, or a second spec for the same
 * function: the first wins), or -1 after making room for a new one, which takes the next
 * index. */
static int probe_table__find(struct probe_table *t, const struct mapped_object *o,
			     uint64_t offset)
{
	struct probe_site *ps;
	struct probe_site_key key;

	memset(&key, 0, sizeof(key));
	key.dev = o->dev;
	key.ino = o->ino;
	key.offset = offset;
	HASH_FIND(hh, t->by_site, &key, sizeof(key), ps);
	if (ps)
		return ps->id;
	if (t->cnt == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 64;
		t->v = xrealloc(t->v, t->cap, sizeof(*t->v));
	}
	ps = xcalloc(1, sizeof(*ps));
	ps->key = key;
	ps->id = t->cnt;
	HASH_ADD(hh, t->by_site, key, sizeof(key), ps);
	return -1;
}

static int probe_table__add(struct probe_table *t, const struct probe_spec *spec,
			    const struct mapped_object *o, const struct elf_sym *sym,
			    bool entry_only)
{
	int id = probe_table__find(t, o, sym->offset);
	struct probe *p;

	if (id >= 0)
		return id;
	p = &t->v[t->cnt];
	p->cat = spec->cat;
	p->function = xstrdup(sym->name);
	p->name = span_name(spec, sym->name);
	p->object = xstrdup(o->base);
	p->dev = o->dev;
	p->ino = o->ino;
	p->offset = sym->offset;
	p->size = sym->size;
	p->site = sym->offset;
	p->site_past = NULL;
	p->exits = NULL;
	p->nexits = 0;
	p->placed = false;
	p->spec = spec;
	probe__set_cfg(p, spec, entry_only);
	return t->cnt++;
}

/* A USDT probe's entry: named PROVIDER:NAME unless the spec names it; its arguments are the
 * note's operands, in the order the spec captures them. An instant when there is no end. */
static int probe_table__add_usdt(struct probe_table *t, const struct probe_spec *spec,
				 const struct mapped_object *o, const struct usdt_probe *u)
{
	static const uint32_t kinds[] = { [USDT_ARG_CONST] = USDT_BPF_CONST,
					  [USDT_ARG_REG] = USDT_BPF_REG,
					  [USDT_ARG_MEM] = USDT_BPF_MEM };
	int id = probe_table__find(t, o, u->offset);
	struct probe *p;
	char name[256];

	if (id >= 0)
		return id;
	p = &t->v[t->cnt];
	memset(p, 0, sizeof(*p));
	snprintf(name, sizeof(name), "%s:%s", u->provider, u->name);
	p->cat = spec->cat;
	p->function = xstrdup(name);
	p->name = xstrdup(spec->name ? spec->name : name);
	p->object = xstrdup(o->base);
	p->dev = o->dev;
	p->ino = o->ino;
	p->offset = u->offset;
	p->spec = spec;
	probe__set_cfg(p, spec, !spec->usdt_end);
	p->cfg.flags &= ~PROBE_RET; /* a USDT site has no return */
	if (p->cfg.nargs) {
		p->cfg.flags |= PROBE_USDT;
		for (int i = 0; i < p->cfg.nargs; i++) {
			const struct usdt_arg *a = &u->args[p->cfg.arg_idx[i] % USDT_MAX_ARGS];

			if (p->cfg.arg_idx[i] >= u->nargs || !u->args_ok)
				continue; /* not there: reads as 0 */
			p->usdt.args[i].kind = kinds[a->kind];
			p->usdt.args[i].size = a->size;
			p->usdt.args[i].is_signed = a->is_signed;
			p->usdt.args[i].reg_off = a->reg_off;
			p->usdt.args[i].val = a->val;
		}
	}
	return t->cnt++;
}

static void usdt_site__add(struct attach_sites *sites, int pid, const struct mapped_object *o,
			   const struct usdt_probe *u, uint64_t cookie, bool end)
{
	struct attach_site *s = NULL;

	for (size_t i = 0; i < sites->cnt && !s; i++)
		if (sites->v[i].pid == pid && sites->v[i].dev == o->dev &&
		    sites->v[i].ino == o->ino && sites->v[i].ref_ctr_offsets &&
		    sites->v[i].usdt_end == end)
			s = &sites->v[i];
	if (!s) {
		sites->v = xrealloc(sites->v, sites->cnt + 1, sizeof(*sites->v));
		s = &sites->v[sites->cnt++];
		memset(s, 0, sizeof(*s));
		s->pid = pid;
		s->dev = o->dev;
		s->ino = o->ino;
		s->path = o->open_path;
		s->object = o->base;
		s->entry_only = true;
		s->usdt_end = end;
		s->ref_ctr_offsets = xcalloc(1, sizeof(uint64_t));
	}
	for (size_t i = 0; i < s->cnt; i++)
		if (s->offsets[i] == u->offset && s->cookies[i] == cookie)
			return;
	s->offsets = xrealloc(s->offsets, s->cnt + 1, sizeof(uint64_t));
	s->cookies = xrealloc(s->cookies, s->cnt + 1, sizeof(uint64_t));
	s->ref_ctr_offsets = xrealloc(s->ref_ctr_offsets, s->cnt + 1, sizeof(uint64_t));
	s->offsets[s->cnt] = u->offset;
	s->cookies[s->cnt] = cookie;
	s->ref_ctr_offsets[s->cnt] = u->sema_offset;
	s->cnt++;
}

/* The USDT probes of one object a spec matches: each start, and the ends of its provider
 * named by the spec, attached with the start's probe id. Returns how many starts. */
static int resolve_usdt(const struct probe_spec *spec, const struct mapped_object *o, int pid,
			struct usdt_cache *cache, struct probe_table *table,
			struct attach_sites *sites)
{
	const struct usdt_probes *all = usdt_cache__get(cache, o);
	int n = 0;

	for (size_t i = 0; i < all->cnt; i++) {
		const struct usdt_probe *u = &all->v[i];
		int id;

		if (fnmatch(spec->usdt_provider, u->provider, 0) ||
		    fnmatch(spec->usdt_name, u->name, 0))
			continue;
		id = probe_table__add_usdt(table, spec, o, u);
		usdt_site__add(sites, pid, o, u, id, false);
		for (size_t k = 0; spec->usdt_end && k < all->cnt; k++)
			if (!strcmp(all->v[k].provider, u->provider) &&
			    !fnmatch(spec->usdt_end, all->v[k].name, 0))
				usdt_site__add(sites, pid, o, &all->v[k], id, true);
		n++;
	}
	return n;
}

uint64_t site_exit__cookie(const struct site_exit *e, uint32_t id)
{
	uint64_t c = id;

	if (e->off == e->ret)
		return c;
	c |= (uint64_t)(uint16_t)e->sp_delta << EXIT_SP_SHIFT;
	if (e->from_rbp)
		c |= EXIT_FROM_RBP;
	if (e->cond >= 0)
		c |= EXIT_IF_NOT_TAKEN | (uint64_t)e->cond << EXIT_CC_SHIFT;
	return c;
}

void attach_sites__add(struct attach_sites *sites, int pid, const struct mapped_object *o,
		       uint64_t offset, uint64_t cookie, bool entry_only, bool at_exit)
{
	struct attach_site *s = NULL;

	for (size_t i = 0; i < sites->cnt && !s; i++)
		if (sites->v[i].pid == pid && sites->v[i].dev == o->dev &&
		    sites->v[i].ino == o->ino && sites->v[i].entry_only == entry_only &&
		    sites->v[i].at_exit == at_exit && !sites->v[i].ref_ctr_offsets)
			s = &sites->v[i];
	if (!s) {
		sites->v = xrealloc(sites->v, sites->cnt + 1, sizeof(*sites->v));
		s = &sites->v[sites->cnt++];
		memset(s, 0, sizeof(*s));
		s->pid = pid;
		s->dev = o->dev;
		s->ino = o->ino;
		s->path = o->open_path;
		s->object = o->base;
		s->entry_only = entry_only;
		s->at_exit = at_exit;
	}
	if (s->cnt == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->offsets = xrealloc(s->offsets, s->cap, sizeof(uint64_t));
		s->cookies = xrealloc(s->cookies, s->cap, sizeof(uint64_t));
	}
	s->offsets[s->cnt] = offset;
	s->cookies[s->cnt] = cookie;
	s->cnt++;
}

/* Offers the names of the object's USDT probes, "PROVIDER:NAME". */
static void offer_usdt(struct near_names *nr, const struct usdt_probes *all)
{
	char name[256];

	for (size_t k = 0; k < all->cnt; k++) {
		snprintf(name, sizeof(name), "%s:%s", all->v[k].provider, all->v[k].name);
		near_names__offer(nr, name);
	}
}

/* Nothing matched: which kind of thing, with the names near it (USDT probes for a USDT spec,
 * never function names). */
static void no_match_error(const struct probe_spec *spec, struct target *targets,
			   size_t ntargets, struct sym_cache *cache, struct usdt_cache *ucache,
			   bool object_matched, char *err, size_t errlen)
{
	struct near_names nr;
	char usdt[512];
	const char *want = spec->function, *what = "function";
	size_t n;

	snprintf(usdt, sizeof(usdt), "%s:%s", spec->usdt_provider ? spec->usdt_provider : "",
		 spec->usdt_name ? spec->usdt_name : "");
	if (!object_matched)
		want = spec->object, what = "mapped object";
	else if (spec->usdt_name)
		want = usdt, what = "USDT probe";
	near_names__init(&nr, want);
	for (size_t t = 0; t < ntargets; t++) {
		for (size_t i = 0; i < targets[t].nobjs; i++) {
			const struct mapped_object *o = &targets[t].objs[i];
			struct elf_syms *syms;

			if (!object_matched) {
				near_names__offer(&nr, o->base);
				continue;
			}
			if (!probe_spec__object_matches(spec->object, o->base))
				continue;
			if (spec->usdt_name) {
				offer_usdt(&nr, usdt_cache__get(ucache, o));
				continue;
			}
			syms = sym_cache__get(cache, o);
			for (size_t k = 0; syms && k < syms->cnt; k++) {
				const struct demangled *d = demangle__get(syms->syms[k].name);

				near_names__offer(&nr, d ? d->base : syms->syms[k].name);
			}
		}
	}
	n = snprintf(err, errlen, "%s: no %s matches '%s'", spec->origin, what, want);
	if (n < errlen)
		n += near_names__format(&nr, err + n, errlen - n);
	if (!nr.name[0] && n < errlen)
		snprintf(err + n, errlen - n, "; list candidates with: tracer list -p %d",
			 targets[0].pid);
	near_names__free(&nr);
}

/* Whether another symbol of the same name (another version) is an IFUNC. syms is sorted by
 * name, so its versions are neighbours. */
static bool ifunc_twin(const struct elf_syms *syms, size_t k)
{
	const char *name = syms->syms[k].name;

	for (size_t i = k; i-- > 0 && !strcmp(syms->syms[i].name, name);)
		if (syms->syms[i].ifunc)
			return true;
	for (size_t i = k + 1; i < syms->cnt && !strcmp(syms->syms[i].name, name); i++)
		if (syms->syms[i].ifunc)
			return true;
	return false;
}

/* An object glob that matches nothing mapped but is a typo away from a mapped object's name
 * ("pipelin"): a mistake to report now, not a library to wait for. */
static bool misspelled_object(const struct probe_spec *spec, const struct target *targets,
			      size_t ntargets)
{
	struct near_names nr;
	bool near;

	near_names__init(&nr, spec->object);
	for (size_t t = 0; t < ntargets; t++)
		for (size_t i = 0; i < targets[t].nobjs; i++)
			near_names__offer(&nr, targets[t].objs[i].base);
	near = nr.name[0] && nr.dist[0] <= 2;
	near_names__free(&nr);
	return near;
}

/* A probe matched in one process's mapping of an object, waiting for its site. */
struct matched {
	int pid; /* 0: shared */
	const struct mapped_object *o;
	int id;
};

struct matched_list {
	struct matched *v;
	size_t cnt, cap;
};

static void matched__add(struct matched_list *l, int pid, const struct mapped_object *o, int id)
{
	if (l->cnt == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = xrealloc(l->v, l->cap, sizeof(*l->v));
	}
	l->v[l->cnt++] = (struct matched){ pid, o, id };
}

static int by_object_key(const struct matched *x, const struct matched *y)
{
	if (x->o->dev != y->o->dev)
		return x->o->dev < y->o->dev ? -1 : 1;
	return x->o->ino < y->o->ino ? -1 : x->o->ino > y->o->ino;
}

static int by_object(const void *a, const void *b)
{
	const struct matched *x = *(const struct matched *const *)a;
	const struct matched *y = *(const struct matched *const *)b;
	int c = by_object_key(x, y);

	return c ? c : x < y ? -1 : x > y; /* in the order matched */
}

/* A function's cold part (GCC's foo.cold, "[clone .cold]"): code its function jumps to, never
 * called; only a spec that names it probes it. */
static bool cold_part(const struct probe_spec *spec, const char *name)
{
	const char *c = strstr(name, ".cold");

	return c && (!c[5] || c[5] == '.') && !strstr(spec->function, "cold");
}

/* Where a C++ exception can unwind through a function (its object is C++ with exceptions), its
 * calls end at its own exits, not at a return probe (elf/site.h says why); one that cannot be
 * decoded whole is entry-only. TRACER_RETURN_PROBES=1 (the benchmark's baseline) says
 * otherwise. */
static void set_exits(struct probe *p, struct site_move *m)
{
	if (!m->want_exits)
		return;
	/* one probe cannot be both a call's start and its end: an exit at the site keeps the
	 * site at the first instruction, and a function that starts with one (a thunk's jmp)
	 * has no span to time */
	for (size_t e = 0; e < m->nexits; e++) {
		if (m->exits[e].off == p->offset) {
			m->nexits = 0;
			m->exits_why_not = "it is a jump to another function";
		} else if (m->exits[e].off <= p->offset + m->delta) {
			m->delta = 0;
		}
	}
	if (m->nexits) {
		p->exits = m->exits;
		p->nexits = m->nexits;
		p->exits_cls = m->exits_cls;
		return;
	}
	free(m->exits);
	p->cfg.flags |= PROBE_ENTRY_ONLY;
	pr_debug("%s:%s: entry-only (C++ exceptions unwind through it, and %s)", p->object,
		 p->function, m->exits_why_not);
}

/* The sites of the probes of one object (ids: their indexes): past their leading
 * single-stepped instructions where that is safe (elf/site.h), and their exits where
 * exceptions pass, all chosen in one pass over the object. Go code is left alone (entry-only,
 * and its stack checks branch back to the entry). */
static void place(struct probe_table *t, const struct index_list *ids,
		  const struct mapped_object *o, const struct elf_syms *syms)
{
	/* TRACER_NO_SITE_MOVE: the first instruction, as before: to compare */
	bool move = !getenv("TRACER_NO_SITE_MOVE");
	bool exits = syms && syms->unwinds && !getenv("TRACER_RETURN_PROBES");
	struct site_move *m;
	int *which;
	size_t k = 0;

	m = xcalloc(ids->cnt + 1, sizeof(*m));
	which = xcalloc(ids->cnt + 1, sizeof(*which));

	for (size_t i = 0; i < ids->cnt; i++) {
		struct probe *p = &t->v[ids->v[i]];

		if (p->placed)
			continue;
		p->placed = true;
		m[k].func = p->offset;
		m[k].size = !syms || syms->is_go ? 0 : p->size;
		m[k].keep_args = p->cfg.flags & (PROBE_ARGS | PROBE_NAME_FROM);
		m[k].want_exits = exits && !(p->cfg.flags & PROBE_ENTRY_ONLY);
		m[k].keep_ret = p->cfg.flags & PROBE_RET;
		which[k++] = ids->v[i];
	}
	if (k && syms)
		site__choose_in(o->open_path, syms, m, k);
	for (size_t i = 0; i < k; i++) {
		struct probe *p = &t->v[which[i]];

		set_exits(p, &m[i]);
		if (!m[i].delta || !move)
			continue;
		p->site = p->offset + m[i].delta;
		p->site_past = xstrdup(m[i].skipped);
		pr_debug("%s:%s: probes at +%u, past %s", p->object, p->function, m[i].delta,
			 m[i].skipped);
	}
	free(which);
	free(m);
}

/* Places the matched probes, once per object whatever the number of specs, processes and
 * mappings. */
static void place_all(struct probe_table *t, const struct matched_list *l, struct sym_cache *c)
{
	const struct matched **order = xcalloc(l->cnt + 1, sizeof(*order));
	struct index_list ids = { 0 };

	for (size_t i = 0; i < l->cnt; i++)
		order[i] = &l->v[i];
	qsort(order, l->cnt, sizeof(*order), by_object);
	for (size_t a = 0, b; a < l->cnt; a = b) { /* [a, b): one object */
		ids.cnt = 0;
		for (b = a; b < l->cnt && !by_object_key(order[a], order[b]); b++)
			index_list__add(&ids, order[b]->id);
		place(t, &ids, order[a]->o, sym_cache__get(c, order[a]->o));
	}
	free(ids.v);
	free(order);
}

/* Each probe once per process and object, in the order matched. */
struct site_seen {
	struct {
		int pid, id;
		dev_t dev;
		ino_t ino;
	} key;
	UT_hash_handle hh;
};

static void add_sites(struct attach_sites *sites, const struct probe_table *t,
		      const struct matched_list *l)
{
	struct site_seen *seen = NULL, *e, *tmp;

	for (size_t i = 0; i < l->cnt; i++) {
		const struct matched *m = &l->v[i];
		const struct probe *p = &t->v[m->id];

		e = xcalloc(1, sizeof(*e));
		e->key.pid = m->pid;
		e->key.id = m->id;
		e->key.dev = m->o->dev;
		e->key.ino = m->o->ino;
		HASH_FIND(hh, seen, &e->key, sizeof(e->key), tmp);
		if (tmp) {
			free(e);
			continue;
		}
		HASH_ADD(hh, seen, key, sizeof(e->key), e);
		attach_sites__add(sites, m->pid, m->o, p->site, m->id,
				  (p->cfg.flags & PROBE_ENTRY_ONLY) || p->nexits, false);
		for (size_t x = 0; x < p->nexits; x++)
			attach_sites__add(sites, m->pid, m->o, p->exits[x].off,
					  site_exit__cookie(&p->exits[x], m->id), true, true);
	}
	HASH_ITER(hh, seen, e, tmp) {
		HASH_DEL(seen, e);
		free(e);
	}
}

bool probe_spec__excludes(const struct probe_spec *s, const char *sym)
{
	for (int i = 0; i < s->nexclude; i++)
		if (demangle__match(s->exclude[i], sym))
			return true;
	return false;
}

/* The functions of one mapped object that spec matches, added to the table and to matched.
 * Returns whether any did; *ifunc names a match that is only an IFUNC. */
static bool resolve_functions(const struct probe_spec *spec, struct target *target,
			      const struct mapped_object *o, unsigned int flags,
			      struct sym_cache *cache, struct index_list *found,
			      struct probe_table *table, struct matched_list *matched,
			      const char **ifunc, int *warned_go, int *warned_switch)
{
	struct sym_entry *e = sym_cache__entry(cache, o);
	const struct elf_syms *syms = e->syms;
	bool any = false;

	sym_cache__match(e, spec->function, found);
	for (size_t i = 0; i < found->cnt; i++) {
		size_t k = found->v[i];
		const struct elf_sym *sym = &syms->syms[k];
		bool eo;

		/* An IFUNC's address is its resolver's, which runs once at load: probing it
		 * would show nothing of the calls. An IFUNC, or an old version of a name that is
		 * an IFUNC now (memcpy@GLIBC_2.2.5 next to memcpy@@GLIBC_2.14): programs call
		 * neither */
		if (sym->ifunc || ifunc_twin(syms, k)) {
			*ifunc = sym->name;
			continue;
		}
		if (cold_part(spec, sym->name) || probe_spec__excludes(spec, sym->name))
			continue;
		if (syms->is_go && !(*warned_go)++)
			pr_warn("%s is a Go program: its probes are entry-only (return probes "
				"crash Go's moving stacks); calls show as instants",
				o->base);
		eo = (flags & RESOLVE_ENTRY_ONLY) || spec->entry_only || syms->is_go ||
		     switches_stacks(cache, target, warned_switch);
		matched__add(matched, flags & RESOLVE_SHARED ? 0 : target->pid, o,
			     probe_table__add(table, spec, o, sym, eo));
		any = true;
	}
	return any;
}

int resolve__probes(const struct probe_specs *specs, struct target *targets, size_t ntargets,
		    unsigned int flags, struct probe_table *table, struct attach_sites *sites,
		    char *err, size_t errlen)
{
	struct sym_cache cache = { 0 };
	int ret = resolve__probes_cached(specs, targets, ntargets, flags, table, sites, &cache,
					 err, errlen);

	sym_cache__free(&cache);
	return ret;
}

int resolve__probes_cached(const struct probe_specs *specs, struct target *targets,
			   size_t ntargets, unsigned int flags, struct probe_table *table,
			   struct attach_sites *sites, struct sym_cache *cache, char *err,
			   size_t errlen)
{
	struct usdt_cache ucache = { 0 };
	struct index_list found = { 0 };
	struct matched_list matched = { 0 };
	int ret = 0, warned_go = 0;
	int warned_switch = 0; /* the last pid warned about */

	for (size_t s = 0; s < specs->cnt && !ret; s++) {
		const struct probe_spec *spec = &specs->v[s];
		bool object_matched = false, matched_any = false;
		const char *ifunc = NULL; /* a matching name that is only an IFUNC */

		for (size_t t = 0; t < ntargets; t++) {
			for (size_t i = 0; i < targets[t].nobjs; i++) {
				const struct mapped_object *o = &targets[t].objs[i];

				if (!probe_spec__object_matches(spec->object, o->base))
					continue;
				object_matched = true;
				if (spec->usdt_name)
					matched_any |= resolve_usdt(spec, o,
								  flags & RESOLVE_SHARED ?
									  0 :
									  targets[t].pid,
								  &ucache, table, sites) > 0;
				else
					matched_any |= resolve_functions(
						spec, &targets[t], o, flags, cache, &found, table,
						&matched, &ifunc, &warned_go, &warned_switch);
			}
		}
		/* A pack covers several libraries; a process may map only some of them. */
		if (!matched_any && (spec->optional || (flags & RESOLVE_LENIENT))) {
			pr_debug("%s: nothing matches '%s:%s' here; skipped", spec->origin,
				 spec->object, spec->function);
			continue;
		}
		/* its library is not loaded yet: probed when it is (tracked__rescan) */
		if (!object_matched && !misspelled_object(spec, targets, ntargets)) {
			pr_info("%s: no object '%s' is mapped yet: probing it when one is loaded",
				spec->origin, spec->object);
			continue;
		}
		if (!matched_any && ifunc) {
			snprintf(err, errlen, "%s: '%s' is an IFUNC: its symbol is the resolver that "
				 "picks an implementation once, at load, so there is no function of "
				 "that name to probe (its implementations are local symbols; see tracer "
				 "list)", spec->origin, ifunc);
			ret = -ENOENT;
		} else if (!matched_any) {
			no_match_error(spec, targets, ntargets, cache, &ucache, object_matched, err,
				       errlen);
			ret = -ENOENT;
		}
	}
	place_all(table, &matched, cache);
	add_sites(sites, table, &matched);
	free(matched.v);
	free(found.v);
	usdt_cache__free(&ucache);
	return ret;
}

void probe_table__free(struct probe_table *table)
{
	struct probe_site *ps, *tmp;

	for (size_t i = 0; i < table->cnt; i++) {
		free(table->v[i].name);
		free(table->v[i].function);
		free(table->v[i].object);
		free(table->v[i].site_past);
		free(table->v[i].exits);
	}
	HASH_ITER(hh, table->by_site, ps, tmp) {
		HASH_DEL(table->by_site, ps);
		free(ps);
	}
	free(table->v);
	memset(table, 0, sizeof(*table));
}

void attach_sites__free(struct attach_sites *sites)
{
	for (size_t i = 0; i < sites->cnt; i++) {
		free(sites->v[i].offsets);
		free(sites->v[i].cookies);
		free(sites->v[i].ref_ctr_offsets);
	}
	free(sites->v);
	memset(sites, 0, sizeof(*sites));
}
