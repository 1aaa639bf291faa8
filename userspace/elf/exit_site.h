/* SPDX-License-Identifier: MIT */
/* A function's exits (elf/site.h: struct site_exit): found by decoding it whole, then moved back
 * from each `ret` where that is provably the same. Used by elf/site.c. */
#ifndef TRACER_EXIT_SITE_H
#define TRACER_EXIT_SITE_H

#include "elf/site.h"

#include <capstone/capstone.h>

/* Each `ret` and tail jump of m's function into m->exits; none, with m->exits_why_not, when it
 * cannot be decoded whole. Then each `ret` whose exit can move back past m's entry site
 * (m->delta) is moved. */
void exit_site__find(csh h, cs_insn *insn, const struct code_view *v, struct site_move *m);

#endif
