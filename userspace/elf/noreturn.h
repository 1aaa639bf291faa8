/* SPDX-License-Identifier: MIT */
/* Where an object's code calls functions that never return (__stack_chk_fail, abort,
 * __cxa_throw, std::__throw_*, ...): their PLT stubs, found through .rela.plt, and its own
 * definitions of them. A path through such a call ends there (elf/exit_site.c). */
#ifndef TRACER_NORETURN_H
#define TRACER_NORETURN_H

#include <stddef.h>
#include <stdint.h>

struct elf_syms;

/* Whether a symbol name is that of a function known never to return. */
int noreturn__name(const char *name);

/* The file offsets of the object's PLT stubs of such functions and of its own (syms), sorted,
 * into *out (xcalloc'd; none on an error: nothing is known not to return). */
void noreturn__find(int fd, const struct elf_syms *syms, uint64_t **out, size_t *n);

#endif
