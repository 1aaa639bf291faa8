// SPDX-License-Identifier: MIT
/* Fuzzes probe_pack__parse (userspace/probe/probe_spec.c) with arbitrary text. Besides crashes, leaks
 * and hangs it checks what the header promises: a malformed pack gives a "path:line: what"
 * message with a line inside the text and leaves the spec list as it was; a good one appends
 * specs with a valid category and non-empty object and function. */
#include "fuzz.h"
#include "probe/probe_spec.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#define PATH "fuzz.json"

static int lines_of(const char *s)
{
	int n = 1;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void check_error(const char *text, const char *err)
{
	const char *p = err + strlen(PATH);
	long line;
	char *end;

	fuzz_check(!strncmp(err, PATH ":", strlen(PATH) + 1), "error without '%s:': %s", PATH,
		   err);
	line = strtol(p + 1, &end, 10);
	fuzz_check(end != p + 1 && !strncmp(end, ": ", 2) && end[2],
		   "error not 'path:line: what': %s", err);
	fuzz_check(line >= 1 && line <= lines_of(text), "line %ld outside the text (%d lines): %s",
		   line, lines_of(text), err);
}

static void check_specs(const struct probe_specs *specs, size_t from)
{
	for (size_t i = from; i < specs->cnt; i++) {
		const struct probe_spec *s = &specs->v[i];

		fuzz_check(s->cat < CAT_MAX, "category %d", s->cat);
		fuzz_check(s->object && s->object[0], "empty object");
		fuzz_check(s->function && s->function[0], "empty function");
		fuzz_check(!s->name || s->name[0], "empty name");
		fuzz_check(s->origin && !strncmp(s->origin, PATH ":", strlen(PATH) + 1),
			   "origin '%s'", s->origin ? s->origin : "(null)");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct probe_specs specs = { 0 };
	struct probe_pack pack;
	char err[512], *text;
	size_t before;
	int ret;

	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;

	/* A spec already in the list must survive a failed parse. */
	if (probe_specs__add_spec(&specs, "other:*:keep_me", err, sizeof(err)))
		fuzz_fail("cannot add a valid -u spec: %s", err);
	before = specs.cnt;
	err[0] = 0;
	ret = probe_pack__parse(text, PATH, &pack, &specs, err, sizeof(err));
	if (ret) {
		fuzz_check(ret == -EINVAL, "returned %d", ret);
		check_error(text, err);
		fuzz_check(specs.cnt == before, "failed parse left %zu specs (had %zu)", specs.cnt,
			   before);
		fuzz_check(!pack.name && !pack.path && !pack.when_maps, "failed parse left a pack");
	} else {
		fuzz_check(pack.name && pack.name[0], "pack without a name");
		fuzz_check(specs.cnt > before, "a pack without probes was accepted");
		check_specs(&specs, before);
		probe_pack__free(&pack);
	}
	fuzz_check(!strcmp(specs.v[0].function, "keep_me"), "the earlier spec changed");

	/* Without a spec list (how packs are listed): the same verdict. */
	err[0] = 0;
	if (!probe_pack__parse(text, PATH, &pack, NULL, err, sizeof(err))) {
		fuzz_check(!ret, "parse without specs accepted what parse with specs refused");
		probe_pack__free(&pack);
	} else {
		fuzz_check(ret, "parse without specs refused what parse with specs accepted: %s", err);
	}
	probe_specs__free(&specs);
	free(text);
	return 0;
}
