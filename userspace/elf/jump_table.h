/* SPDX-License-Identifier: MIT */
/* The places a jump table can send a `jmp *%reg` to, in position-independent x86-64 code as GCC
 * and clang emit it:
 *     lea TABLE(%rip),%rB; ...; movslq (%rB,%rI,4),%rA; add %rB,%rA; jmp *%rA
 * each entry of TABLE a signed 32-bit offset from TABLE. Read from the object's file, entry by
 * entry until one points outside its code: reading past the table's end only adds places
 * (elf/exit_site.c then keeps more exits at their `ret`), never loses one. */
#ifndef TRACER_JUMP_TABLE_H
#define TRACER_JUMP_TABLE_H

#include "elf/site.h"

#include <capstone/capstone.h>
#include <stdbool.h>

/* The jmp is at prev[nprev] (prev: the function's instructions so far). Appends its targets
 * (file offsets) to *out (*n of them, *cap allocated); *lea: where the table's address was
 * taken (a branch landing after it, up to the jmp, would make the shape a guess). False, and
 * nothing appended, when the jump is not that shape. */
bool jump_table__targets(csh h, const struct code_view *v, const uint64_t *prev, size_t nprev,
			 const cs_insn *jmp, uint64_t **out, size_t *n, size_t *cap,
			 uint64_t *lea);

#endif
