// SPDX-License-Identifier: MIT
/* Unit test of userspace/probe/resolve.c on a generated program of 20,000 functions
 * (tests/unit/fixtures/gen_funcs.py): 5,000 specs, names and globs, aliases and repeats, give one
 * probe per function at the symbol's offset, its site past endbr64 and test where that is safe,
 * and one attach site per probe. Resolution was quadratic (every spec against every symbol,
 * the object's code rescanned per spec, duplicates found by linear search); its speed is
 * measured by hand, not here. */
#include "elf/elf_syms.h"
#include "probe/resolve.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NFUNCS 20000
#define NSPECS 5000 /* f_0, f_4, f_8, ...: every fourth function */

static const char *fixdir;

static void add_spec(struct probe_specs *specs, const char *fmt, int k)
{
	char text[64], err[256];

	snprintf(text, sizeof(text), fmt, k);
	if (probe_specs__add_spec(specs, text, err, sizeof(err)))
		fprintf(stderr, "  %s: %s\n", text, err);
}

static int probed(const struct probe_table *t, const char *function)
{
	int n = 0;

	for (size_t i = 0; i < t->cnt; i++)
		n += !strcmp(t->v[i].function, function);
	return n;
}

static void test_many_specs(void)
{
	struct mapped_object obj = { .base = "fix_many", .is_exe = true };
	struct target target = { .pid = 4242, .objs = &obj, .nobjs = 1 };
	struct probe_specs specs = { 0 };
	struct probe_table table = { 0 };
	struct attach_sites sites = { 0 };
	struct elf_syms *syms = NULL;
	char path[4096], err[512] = "";
	struct stat st;
	size_t moved = 0;
	int ret;

	snprintf(path, sizeof(path), "%s/fix_many", fixdir);
	CHECK(!stat(path, &st) && !elf_syms__open(path, &syms));
	if (!syms)
		return;
	obj.path = obj.open_path = path;
	obj.dev = st.st_dev;
	obj.ino = st.st_ino;
	for (int i = 0; i < NSPECS; i++)
		add_spec(&specs, "other:fix_many:f_%d", 4 * i);
	add_spec(&specs, "other:fix_many:f_%d", 400);	 /* again */
	add_spec(&specs, "other:fix_many:a_%d", 800);	 /* an alias of f_800 */
	add_spec(&specs, "other:fix_many:f_1999%d*", 9); /* f_19999 and f_199990..: f_19999 */
	add_spec(&specs, "other:fix_many:f_%d", 1);
	CHECK(specs.cnt == NSPECS + 4);

	ret = resolve__probes(&specs, &target, 1, 0, &table, &sites, err, sizeof(err));
	CHECK(ret == 0);
	if (ret)
		fprintf(stderr, "  %s\n", err);
	/* one probe per function: the repeat and the alias add none */
	CHECK(table.cnt == NSPECS + 2);
	CHECK(probed(&table, "f_400") == 1 && probed(&table, "f_800") == 1);
	CHECK(probed(&table, "a_800") == 0 && probed(&table, "f_19999") == 1);
	CHECK(probed(&table, "f_1") == 1 && probed(&table, "f_2") == 0);
	for (size_t i = 0; i < table.cnt; i++) {
		const struct probe *p = &table.v[i];
		const struct elf_sym *sym = elf_syms__find(syms, p->function);

		CHECK(sym && p->offset == sym->offset);
		/* endbr64 (4 bytes), test (3): onto the je, unless a byte elsewhere reads as a
		 * branch into them */
		if (p->site != p->offset) {
			CHECK(p->site == p->offset + 7 && p->site_past &&
			      !strcmp(p->site_past, "endbr64; test"));
			moved++;
		}
	}
	CHECK(moved > table.cnt * 9 / 10);
	/* the sites: one per probe, its cookie the probe's index, at the probe's site */
	CHECK(sites.cnt == 1);
	if (sites.cnt == 1) {
		const struct attach_site *s = &sites.v[0];

		CHECK(s->pid == 4242 && s->cnt == table.cnt && !s->entry_only);
		for (size_t i = 0; i < s->cnt; i++)
			CHECK(s->cookies[i] == i && s->offsets[i] == table.v[i].site);
	}
	/* a second resolution appends nothing new: the table already holds them all */
	{
		struct attach_sites again = { 0 };

		CHECK(!resolve__probes(&specs, &target, 1, 0, &table, &again, err, sizeof(err)));
		CHECK(table.cnt == NSPECS + 2);
		CHECK(again.cnt == 1 && again.v[0].cnt == table.cnt);
		attach_sites__free(&again);
	}
	attach_sites__free(&sites);
	probe_table__free(&table);
	probe_specs__free(&specs);
	elf_syms__free(syms);
}

/* A pack probe's "exclude": the functions its glob matches that it leaves out. */
static void test_exclude(void)
{
	struct mapped_object obj = { .base = "fix_many", .is_exe = true };
	struct target target = { .pid = 4242, .objs = &obj, .nobjs = 1 };
	struct probe_specs specs = { 0 };
	struct probe_table table = { 0 };
	struct attach_sites sites = { 0 };
	char path[4096], err[512] = "";
	struct stat st;

	snprintf(path, sizeof(path), "%s/fix_many", fixdir);
	CHECK(!stat(path, &st));
	obj.path = obj.open_path = path;
	obj.dev = st.st_dev;
	obj.ino = st.st_ino;
	add_spec(&specs, "other:fix_many:f_1999%d", 9); /* f_19999 */
	add_spec(&specs, "other:fix_many:f_1998%d", 9); /* f_19989 */
	CHECK(specs.cnt == 2);
	if (specs.cnt != 2)
		return;
	specs.v[0].function[strlen(specs.v[0].function) - 1] = '*'; /* f_1999* */
	specs.v[0].exclude = calloc(2, sizeof(char *));
	specs.v[0].exclude[0] = strdup("f_19995");
	specs.v[0].exclude[1] = strdup("f_1999[0-3]");
	specs.v[0].nexclude = 2;
	CHECK(probe_spec__excludes(&specs.v[0], "f_19991") && !probe_spec__excludes(&specs.v[0],
										   "f_19994"));
	CHECK(!probe_spec__excludes(&specs.v[1], "f_19989"));
	CHECK(resolve__probes(&specs, &target, 1, 0, &table, &sites, err, sizeof(err)) == 0);
	CHECK(probed(&table, "f_1999") == 1 && probed(&table, "f_19994") == 1 &&
	      probed(&table, "f_19999") == 1 && probed(&table, "f_19989") == 1);
	CHECK(probed(&table, "f_19995") == 0 && probed(&table, "f_19990") == 0 &&
	      probed(&table, "f_19993") == 0);
	CHECK(table.cnt == 1 + 10 - 5 + 1);
	attach_sites__free(&sites);
	probe_table__free(&table);
	probe_specs__free(&specs);
}

int main(int argc, char **argv)
{
	fixdir = argc > 1 ? argv[1] : ".output/fixtures";
	RUN(test_many_specs);
	RUN(test_exclude);
	UNIT_EXIT();
}
