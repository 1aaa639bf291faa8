// SPDX-License-Identifier: MIT
/* Fuzzes probe_specs__add_spec (the `-u CATEGORY:OBJECT:FUNCTION` parser). The input is split at
 * newlines into several specs added to one list, so that the list grows. Checks: an accepted
 * spec has a valid category and the object and function of the text; a refused one leaves the
 * list as it was and says why. */
#include "fuzz.h"
#include "probe/probe_spec.h"

#include <stdint.h>
#include <string.h>

static void check_accepted(const struct probe_spec *s, const char *text)
{
	const char *c1 = strchr(text, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

	fuzz_check(c1 && c2, "accepted '%s' without two colons", text);
	fuzz_check(s->cat < CAT_MAX && !strncmp(category__name(s->cat), text, c1 - text) &&
			   strlen(category__name(s->cat)) == (size_t)(c1 - text),
		   "category of '%s' is %s", text, category__name(s->cat));
	fuzz_check(s->object[0] && strlen(s->object) == (size_t)(c2 - c1 - 1) &&
			   !strncmp(s->object, c1 + 1, c2 - c1 - 1),
		   "object of '%s' is '%s'", text, s->object);
	fuzz_check(s->function[0] && !strcmp(s->function, c2 + 1), "function of '%s' is '%s'",
		   text, s->function);
	fuzz_check(!s->name, "a -u spec has no span name");
	fuzz_check(s->origin && strstr(s->origin, text), "origin '%s'", s->origin);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct probe_specs specs = { 0 };
	char *copy = malloc(size + 1), *save = NULL, err[512];

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	copy[size] = 0;
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t before = specs.cnt;

		err[0] = 0;
		if (probe_specs__add_spec(&specs, line, err, sizeof(err))) {
			fuzz_check(specs.cnt == before, "refused '%s' but the list grew", line);
			fuzz_check(err[0], "refused '%s' without a message", line);
		} else {
			fuzz_check(specs.cnt == before + 1, "accepted '%s': %zu specs", line,
				   specs.cnt);
			check_accepted(&specs.v[before], line);
		}
	}
	probe_specs__free(&specs);
	free(copy);
	return 0;
}
