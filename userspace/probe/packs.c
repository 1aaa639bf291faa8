// SPDX-License-Identifier: MIT
/* The packs folder, and the one rule that picks the packs a process gets by default. */
#include "probe/packs.h"
#include "util/util.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct mapped_object *probe_pack__reason(const struct probe_pack *pack,
					       const struct mapped_object *objs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t w = 0; w < pack->when_cnt; w++)
			if (!fnmatch(pack->when_maps[w], objs[i].base, 0))
				return &objs[i];
	return NULL;
}

bool probe_pack__applies(const struct probe_pack *pack, const struct mapped_object *objs, size_t n)
{
	return probe_pack__reason(pack, objs, n);
}

int pack_set__load(struct pack_set *set, char *err, size_t errlen)
{
	struct probe_pack *all = NULL;
	int n = probe_pack__list(&all);

	memset(set, 0, sizeof(*set));
	if (n < 0) {
		snprintf(err, errlen,
			 "cannot read the probe packs folder %s: %s (set TRACER_PROBES to it)",
			 probe_pack__dir(), strerror(-n));
		return n;
	}
	set->packs = xcalloc(n, sizeof(*set->packs));
	set->specs = xcalloc(n, sizeof(*set->specs));
	for (int i = 0; i < n; i++) {
		char msg[512];

		/* listed packs parsed once already; one that changed since is left out */
		if (probe_pack__load(all[i].path, &set->packs[set->cnt], &set->specs[set->cnt], msg,
				     sizeof(msg)))
			pr_warn("%s", msg);
		else
			set->cnt++;
		probe_pack__free(&all[i]);
	}
	free(all);
	return 0;
}

void pack_set__free(struct pack_set *set)
{
	for (size_t i = 0; i < set->cnt; i++) {
		probe_pack__free(&set->packs[i]);
		probe_specs__free(&set->specs[i]);
	}
	free(set->packs);
	free(set->specs);
	memset(set, 0, sizeof(*set));
}
