/* SPDX-License-Identifier: MIT */
/* The catalogue behind `tracer list`: what can be probed, what it costs, which packs probe it. */
#ifndef TRACER_LIST_H
#define TRACER_LIST_H

#include "elf/insn.h"
#include "probe/packs.h"
#include "record/target.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Prints the catalogue of these objects: a header naming where ("pid N (comm)" or the file),
 * the packs used by default, every probe-able function matching pattern (all when NULL) with
 * its cost, then the USDT probes. file: the one file listed, NULL for a process's objects.
 * 0, or -1 after printing the error (unreadable file, nothing matches: near names). */
int list__print(const struct mapped_object *objs, size_t nobjs, const char *file,
		const char *where, const char *pattern);

/* The entry cost of a uprobe per hit, by the class of the function's first instruction
 * (measured on kernel 6.18, see bench/results.md): "0.7us". */
const char *list__insn_cost(enum insn_class c);

#endif
