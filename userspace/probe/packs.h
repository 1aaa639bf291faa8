/* SPDX-License-Identifier: MIT */
/* The packs folder (every pack with its probes), and the one rule that picks the packs a process
 * gets when no -u/-P is given. */
#ifndef TRACER_PACKS_H
#define TRACER_PACKS_H

#include "probe/probe_spec.h"
#include "record/target.h"

#include <stdbool.h>
#include <stddef.h>

/* Every pack of the packs folder with its probes, sorted by name. */
struct pack_set {
	struct probe_pack *packs;
	struct probe_specs *specs; /* specs[i]: the probes of packs[i] */
	size_t cnt;
};

/* Loads every pack; a malformed one is warned about and left out (as recording does).
 * 0 or -errno with a message in err ("cannot read the probe packs folder ..."). */
int pack_set__load(struct pack_set *set, char *err, size_t errlen);
void pack_set__free(struct pack_set *set);

/* THE rule: a pack is used by default for a process that maps an object whose file name
 * matches one of the pack's "when" globs. */
bool probe_pack__applies(const struct probe_pack *pack, const struct mapped_object *objs,
			 size_t n);
/* The first of objs that makes the pack apply, or NULL. */
const struct mapped_object *probe_pack__reason(const struct probe_pack *pack,
					       const struct mapped_object *objs, size_t n);

#endif
