// SPDX-License-Identifier: MIT
/* The catalogue behind `tracer list`: the functions tracer can probe in each object, what an
 * entry probe on each costs (from its first instruction), and which packs would probe it. */
#include "elf/demangle.h"
#include "elf/elf_syms.h"
#include "elf/insn.h"
#include "elf/site.h"
#include "probe/list.h"
#include "probe/packs.h"
#include "probe/resolve.h"
#include "elf/usdt.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Costs measured on kernel 6.18 (bench/results.md); the calibration in overhead_cal.c measures
 * the machine at hand when recording. */
const char *list__insn_cost(enum insn_class c)
{
	switch (c) {
	case INSN_EMULATED:
		return "0.7us";
	case INSN_OPTIMIZED:
		return "0.5us";
	default:
		return "10us";
	}
}

/* Every name list prints (symbols, objects, packs, USDT probes) is under the text rule
 * (util/util.h): a binary anyone can hand to `tracer list` must not drive the terminal. */
struct row {
	char *name; /* displayed: demangled for C++ */
	uint64_t offset;
	enum insn_class cls; /* at the probes' site */
	uint32_t delta;	     /* the site, past the function's start */
	char *past;	     /* what the site moved past ("endbr64"), or NULL */
	const char *stays;   /* single-stepped: why the site could not move (static text) */
	char *packs; /* "ffmpeg:decode,other:queue", or NULL */
};

struct object_rows {
	const struct mapped_object *obj;
	int err;   /* reading its symbols failed: -errno */
	bool is_go;
	size_t nsyms; /* probe-able functions, before PATTERN */
	struct row *rows;
	size_t cnt;
};

static int row_cmp(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	int r = strcmp(a->name, b->name);

	return r ? r : (a->offset > b->offset) - (a->offset < b->offset);
}

/* Symbols that demangle alike at one address (a C++ constructor's or destructor's complete and
 * base variants, _ZN1AD1Ev and _ZN1AD2Ev) are one function: one row. */
static size_t rows_dedup(struct row *rows, size_t cnt)
{
	size_t n = 0;

	for (size_t i = 0; i < cnt; i++) {
		struct row *keep = n ? &rows[n - 1] : NULL;

		if (keep && keep->offset == rows[i].offset && !strcmp(keep->name, rows[i].name)) {
			if (!keep->packs) {
				keep->packs = rows[i].packs;
				rows[i].packs = NULL;
			}
			free(rows[i].name);
			free(rows[i].packs);
			free(rows[i].past);
			continue;
		}
		rows[n++] = rows[i];
	}
	return n;
}

/* s under the text rule (util/util.h), in place of s. */
static char *safe_dup_free(char *s)
{
	char *safe = text_safe_dup(s);

	free(s);
	return safe;
}

/* "pack:category" of every pack probe that matches the function, comma separated. */
static char *packs_of(const struct pack_set *set, const char *object, const char *sym)
{
	char *out = NULL;
	size_t len = 0;

	for (size_t p = 0; p < set->cnt; p++) {
		const char *pack = set->packs[p].name;

		/* one entry per pack: its first probe that matches wins, as in resolve */
		for (size_t s = 0; s < set->specs[p].cnt; s++) {
			const struct probe_spec *spec = &set->specs[p].v[s];
			const char *cat = category__name(spec->cat);

			if (!probe_spec__object_matches(spec->object, object) ||
			    !demangle__match(spec->function, sym) || probe_spec__excludes(spec, sym))
				continue;
			out = xrealloc(out, len + strlen(pack) + strlen(cat) + 3, 1);
			len += sprintf(out + len, "%s%s:%s", len ? "," : "", pack, cat);
			break;
		}
	}
	return out ? safe_dup_free(out) : NULL;
}

/* The object's probe-able functions that match pattern, with the class of the instruction
 * their probes go on (site.h: the first, or past single-stepped ones when that is safe). */
static void object_rows__read(struct object_rows *o, const struct pack_set *set,
			      const char *pattern)
{
	struct elf_syms *syms = NULL;
	struct site_move *m;

	o->err = elf_syms__open(o->obj->open_path, &syms);
	if (o->err)
		return;
	o->is_go = syms->is_go;
	o->rows = xcalloc(syms->cnt, sizeof(*o->rows));
	m = xcalloc(syms->cnt + 1, sizeof(*m));
	for (size_t i = 0; i < syms->cnt; i++) {
		const struct elf_sym *sym = &syms->syms[i];
		struct row *r;

		/* an IFUNC's address is its resolver's: resolve never probes one */
		if (sym->ifunc)
			continue;
		o->nsyms++;
		if (pattern && !demangle__match(pattern, sym->name))
			continue;
		m[o->cnt].func = sym->offset;
		m[o->cnt].size = syms->is_go ? 0 : sym->size; /* Go: entry-only, left alone */
		r = &o->rows[o->cnt++];
		r->name = text_safe_dup(demangle__display(sym->name));
		r->offset = sym->offset;
		r->packs = packs_of(set, o->obj->base, sym->name);
	}
	site__choose_in(o->obj->open_path, syms, m, o->cnt);
	for (size_t i = 0; i < o->cnt; i++) {
		o->rows[i].cls = m[i].cls;
		o->rows[i].delta = m[i].delta;
		o->rows[i].past = m[i].delta ? xstrdup(m[i].skipped) : NULL;
		o->rows[i].stays = m[i].why_not;
	}
	free(m);
	elf_syms__free(syms);
	qsort(o->rows, o->cnt, sizeof(*o->rows), row_cmp);
	o->cnt = rows_dedup(o->rows, o->cnt);
}

static void object_rows__free(struct object_rows *o)
{
	for (size_t i = 0; i < o->cnt; i++) {
		free(o->rows[i].name);
		free(o->rows[i].packs);
		free(o->rows[i].past);
	}
	free(o->rows);
}

/* "BASE  PATH", a line of its own. */
static void print_object(const struct mapped_object *obj)
{
	char *base = text_safe_dup(obj->base), *path = text_safe_dup(obj->path);

	printf("\n%s  %s\n", base, path);
	free(base);
	free(path);
}

/* Prints the table. Widths are computed over every object, so that all columns line up; the
 * packs follow the name, so that names keep the most room within 100 columns. */
static void print_rows(const struct object_rows *objs, size_t n, const char *pattern)
{
	int offw = 6;

	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < objs[i].cnt; k++) {
			unsigned long long off = objs[i].rows[k].offset;
			int w = snprintf(NULL, 0, "%llx", off);

			if (w > offw)
				offw = w;
		}
	}
	for (size_t i = 0; i < n; i++) {
		const struct object_rows *o = &objs[i];

		if (pattern && !o->cnt)
			continue;
		print_object(o->obj);
		if (o->err) {
			printf("  cannot read its symbols: %s\n", strerror(-o->err));
			continue;
		}
		if (o->is_go)
			printf("  a Go binary: probes are entry-only (return probes crash Go)\n");
		if (!o->nsyms) {
			printf("  no function symbols (stripped): nothing to probe\n");
			continue;
		}
		printf("  %*s  %-18s  %-5s  FUNCTION  [PACK:CATEGORY]\n", offw, "OFFSET", "SITE",
		       "COST");
		for (size_t k = 0; k < o->cnt; k++) {
			const struct row *r = &o->rows[k];
			char site[32];

			snprintf(site, sizeof(site), r->delta ? "%s +%u" : "%s",
				 insn_class__name(r->cls), r->delta);
			printf("  %*llx  %-18s  %-5s  %s", offw, (unsigned long long)r->offset, site,
			       list__insn_cost(r->cls), r->name);
			if (r->past)
				printf("  (past %s)", r->past);
			else if (r->stays)
				printf("  (stays: %s)", r->stays);
			if (r->packs)
				printf("  [%s]", r->packs);
			putchar('\n');
		}
	}
}

static void print_usdt_head(const struct mapped_object *obj)
{
	char *base = text_safe_dup(obj->base);

	printf("\n%s  USDT probes (-u CATEGORY:%s:usdt:PROVIDER:NAME[..END])\n"
	       "  %6s  %-40s  %-9s  ARGUMENTS\n", base, base, "OFFSET", "PROBE", "SEMAPHORE");
	free(base);
}

/* The USDT probes of each object (all of them, or those a "usdt:PROVIDER:NAME" pattern
 * matches), with their operands and whether a semaphore guards them. */
static size_t print_usdt(const struct object_rows *objs, size_t n, const char *pattern,
			 bool print)
{
	const char *want = pattern && !strncmp(pattern, "usdt:", 5) ? pattern + 5 : NULL;
	size_t found = 0;

	if (pattern && !want)
		return 0;
	for (size_t i = 0; i < n; i++) {
		struct usdt_probes u;
		bool head = false;

		if (usdt__read(objs[i].obj->open_path, &u))
			continue;
		for (size_t k = 0; k < u.cnt; k++) {
			char name[256], safe[3 * sizeof(name)], *args;

			snprintf(name, sizeof(name), "%s:%s", u.v[k].provider, u.v[k].name);
			if (want && fnmatch(want, name, 0))
				continue;
			found++;
			if (!print)
				continue;
			if (!head)
				print_usdt_head(objs[i].obj);
			head = true;
			args = text_safe_dup(u.v[k].args_text);
			printf("  %6llx  %-40s  %-9s  %s\n", (unsigned long long)u.v[k].offset,
			       printable(name, safe, sizeof(safe)),
			       u.v[k].sema_offset ? "yes" : "no", args);
			free(args);
		}
		usdt_probes__free(&u);
	}
	return found;
}

/* Offers the object's USDT probes as list names them, "usdt:PROVIDER:NAME". */
static void offer_usdt(struct near_names *nr, const struct mapped_object *obj)
{
	struct usdt_probes u;
	char name[256];

	if (usdt__read(obj->open_path, &u))
		return;
	for (size_t k = 0; k < u.cnt; k++) {
		snprintf(name, sizeof(name), "usdt:%s:%s", u.v[k].provider, u.v[k].name);
		near_names__offer(nr, name);
	}
	usdt_probes__free(&u);
}

/* PATTERN matched nothing: one line naming near functions, or how to see them all. Reads the
 * symbols again: this is the error path only. */
static void no_match_error(const char *pattern, const char *where,
			   const struct object_rows *objs, size_t n)
{
	struct near_names nr;
	char msg[1024];

	near_names__init(&nr, pattern);
	for (size_t i = 0; i < n && nr.want[0]; i++) {
		struct elf_syms *syms;

		if (!strncmp(pattern, "usdt:", 5)) { /* near USDT probes, not functions */
			offer_usdt(&nr, objs[i].obj);
			continue;
		}
		if (elf_syms__open(objs[i].obj->open_path, &syms))
			continue;
		for (size_t k = 0; k < syms->cnt; k++) {
			const struct demangled *d = demangle__get(syms->syms[k].name);

			if (!syms->syms[k].ifunc)
				near_names__offer(&nr, d ? d->base : syms->syms[k].name);
		}
		elf_syms__free(syms);
	}
	msg[0] = 0;
	near_names__format(&nr, msg, sizeof(msg));
	if (!nr.name[0])
		snprintf(msg, sizeof(msg), "; run without a PATTERN to see them all");
	pr_err("no function matches '%s' in %s%s", pattern, where, msg);
	near_names__free(&nr);
}

static void print_default_packs(const struct pack_set *set, const struct mapped_object *objs,
				size_t n)
{
	bool any = false;
	char *name;

	printf("packs used with no -u/-P:");
	for (size_t i = 0; i < set->cnt; i++) {
		if (!probe_pack__applies(&set->packs[i], objs, n))
			continue;
		name = text_safe_dup(set->packs[i].name);
		printf("%s %s", any ? "," : "", name);
		free(name);
		any = true;
	}
	printf("%s\n", any ? "" : " none");
}

int list__print(const struct mapped_object *objs, size_t nobjs, const char *file,
		const char *where, const char *pattern)
{
	struct object_rows *rows = NULL;
	struct pack_set set = { 0 };
	size_t matched = 0;
	char err[512], *safe_where;
	int ret = -1;

	if (pack_set__load(&set, err, sizeof(err))) {
		pr_err("%s", err);
		goto out;
	}
	rows = xcalloc(nobjs, sizeof(*rows));
	for (size_t i = 0; i < nobjs; i++) {
		rows[i].obj = &objs[i];
		object_rows__read(&rows[i], &set, pattern);
		matched += rows[i].cnt;
	}
	matched += print_usdt(rows, nobjs, pattern, false);
	if (file && rows[0].err) {
		pr_err("cannot read %s: %s", file,
		       rows[0].err == -ENOEXEC ? "not an ELF file" : strerror(-rows[0].err));
		goto out;
	}
	if (file && !rows[0].nsyms && !matched) {
		pr_err("%s has no function symbols (stripped): nothing to probe in it", file);
		goto out;
	}
	if (pattern && !matched) {
		no_match_error(pattern, where, rows, nobjs);
		goto out;
	}
	safe_where = text_safe_dup(where);
	printf("%s: ", safe_where);
	free(safe_where);
	if (!file)
		printf("%zu object%s; ", nobjs, plural_s(nobjs));
	print_default_packs(&set, objs, nobjs);
	printf("SITE: the instruction the probes go on: the first, or +N bytes on, past single-stepped "
	       "ones,\n      where every call passes and nothing else changes\n");
	printf("COST: of an entry probe per hit, on kernel 6.18; a return probe adds 0.5us\n");
	print_rows(rows, nobjs, pattern);
	print_usdt(rows, nobjs, pattern, true);
	ret = 0;
out:
	for (size_t i = 0; rows && i < nobjs; i++)
		object_rows__free(&rows[i]);
	free(rows);
	pack_set__free(&set);
	return ret;
}
