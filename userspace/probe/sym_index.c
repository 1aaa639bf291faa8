// SPDX-License-Identifier: MIT
#include "probe/sym_index.h"
#include "elf/demangle.h"
#include "elf/elf_syms.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

void index_list__add(struct index_list *l, size_t i)
{
	if (l->cnt == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = xrealloc(l->v, l->cap, sizeof(*l->v));
	}
	l->v[l->cnt++] = i;
}

struct sym_entry *sym_cache__entry(struct sym_cache *c, const struct mapped_object *o)
{
	struct elf_syms *syms = NULL;
	int ret;

	for (size_t i = 0; i < c->cnt; i++)
		if (c->v[i].dev == o->dev && c->v[i].ino == o->ino)
			return &c->v[i];
	ret = elf_syms__open(o->open_path, &syms);
	if (ret)
		pr_debug("cannot read symbols of %s: %s", o->path, strerror(-ret));
	c->v = xrealloc(c->v, c->cnt + 1, sizeof(*c->v));
	c->v[c->cnt] = (struct sym_entry){ .dev = o->dev, .ino = o->ino, .syms = syms };
	return &c->v[c->cnt++];
}

struct elf_syms *sym_cache__get(struct sym_cache *c, const struct mapped_object *o)
{
	return sym_cache__entry(c, o)->syms;
}

void sym_cache__free(struct sym_cache *c)
{
	for (size_t i = 0; i < c->cnt; i++) {
		elf_syms__free(c->v[i].syms);
		free(c->v[i].demangled);
	}
	free(c->v);
}

static int by_demangled(const void *a, const void *b)
{
	const struct demangled_name *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : x->sym < y->sym ? -1 : x->sym > y->sym;
}

static void index_demangled(struct sym_entry *e)
{
	size_t n = 0;

	e->indexed = true;
	if (!e->syms)
		return;
	e->demangled = xcalloc(2 * e->syms->cnt + 1, sizeof(*e->demangled));
	for (size_t k = 0; k < e->syms->cnt; k++) {
		const struct demangled *d = demangle__get(e->syms->syms[k].name);

		if (!d)
			continue;
		e->demangled[n++] = (struct demangled_name){ d->base, k };
		if (strcmp(d->full, d->base))
			e->demangled[n++] = (struct demangled_name){ d->full, k };
	}
	qsort(e->demangled, n, sizeof(*e->demangled), by_demangled);
	e->ndemangled = n;
}

/* A glob without wildcards (fnmatch's *, ?, [ and \\) matches its own text only. */
static bool is_plain(const char *glob)
{
	return !strpbrk(glob, "*?[\\");
}

static int by_index(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/* The symbols (indexes, ascending) that demangle__match(glob) matches: for a plain name, those
 * of that name and those whose demangled name it is, by binary search; else every symbol
 * tried. */
size_t sym_cache__match(struct sym_entry *e, const char *glob, struct index_list *out)
{
	const struct elf_syms *syms = e->syms;
	size_t lo = 0, hi, n;

	out->cnt = 0;
	if (!syms)
		return 0;
	if (!is_plain(glob)) {
		for (size_t k = 0; k < syms->cnt; k++)
			if (demangle__match(glob, syms->syms[k].name))
				index_list__add(out, k);
		return out->cnt;
	}
	for (const struct elf_sym *f = elf_syms__find(syms, glob);
	     f && f < syms->syms + syms->cnt && !strcmp(f->name, glob); f++)
		index_list__add(out, f - syms->syms);
	if (!e->indexed)
		index_demangled(e);
	hi = e->ndemangled;
	while (lo < hi) { /* the first demangled name not less than glob */
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(e->demangled[mid].name, glob) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < e->ndemangled && !strcmp(e->demangled[lo].name, glob); lo++)
		index_list__add(out, e->demangled[lo].sym);
	if (out->cnt > 1)
		qsort(out->v, out->cnt, sizeof(*out->v), by_index);
	n = 0;
	for (size_t i = 0; i < out->cnt; i++) /* a name and its demangled one: once */
		if (!n || out->v[n - 1] != out->v[i])
			out->v[n++] = out->v[i];
	return out->cnt = n;
}

/* USDT notes, likewise once per object. */
