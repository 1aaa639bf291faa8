/* SPDX-License-Identifier: MIT */
/* `tracer list` and `tracer packs`: what can be probed, what it costs, which packs probe it. */
#ifndef TRACER_LIST_H
#define TRACER_LIST_H

#include "elf/insn.h"
#include "probe/probe_spec.h"
#include "record/target.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Every pack of the packs folder with its probes, sorted by name. */
struct pack_set {
	struct probe_pack *packs;
	struct probe_specs *specs; /* specs[i]: the probes of packs[i] */
	size_t cnt;
};

/* Loads every pack; a malformed one is warned about and left out (as recording does).
 * 0 or -errno with a message in err. */
int pack_set__load(struct pack_set *set, char *err, size_t errlen);
void pack_set__free(struct pack_set *set);

/* Whether a pack is used by default (no -u/-P) for a process mapping these objects. */
bool pack__applies(const struct probe_pack *pack, const struct mapped_object *objs, size_t n);

/* The class of the instruction at offset in the file fd (unreadable or truncated: stepped). */
enum insn_class list__first_insn(int fd, uint64_t offset);

/* The entry cost of a uprobe per hit, by the class of the function's first instruction
 * (measured on kernel 6.18, see shared/targets.md): "0.7us". */
const char *list__insn_cost(enum insn_class c);

#endif
