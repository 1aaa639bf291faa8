/* SPDX-License-Identifier: MIT */
/* The symbols of the objects a resolution looks at: read once per (dev, inode) however many
 * targets map the object, and a C++ object's demangled names indexed, so that a spec naming
 * one function is looked up, not matched against every symbol. */
#ifndef TRACER_SYM_INDEX_H
#define TRACER_SYM_INDEX_H

#include "record/target.h"

#include <stdbool.h>
#include <stddef.h>

/* A growing array of indexes (doubling: tens of thousands of matches). */
struct index_list {
	size_t *v;
	size_t cnt, cap;
};

/* A demangled name ("onnx::Conv::Compute", with or without its parameters) of a symbol. */
struct demangled_name {
	const char *name;
	size_t sym; /* index in elf_syms */
};

/* Symbols are read once per (dev, inode), however many targets map the object. */
struct sym_cache {
	struct sym_entry {
		dev_t dev;
		ino_t ino;
		struct elf_syms *syms; /* NULL if unreadable */
		/* the C++ symbols' demangled names, sorted: a spec that names one function is
		 * looked up, not matched against every symbol (10,000 specs x 70,000 symbols) */
		struct demangled_name *demangled;
		size_t ndemangled;
		bool indexed;
	} *v;
	size_t cnt;
};

void index_list__add(struct index_list *l, size_t i);
/* The object's entry in the cache (its symbols read on first use; syms NULL if unreadable). */
struct sym_entry *sym_cache__entry(struct sym_cache *c, const struct mapped_object *o);
struct elf_syms *sym_cache__get(struct sym_cache *c, const struct mapped_object *o);
void sym_cache__free(struct sym_cache *c);
/* The symbols (indexes, ascending) that demangle__match(glob) matches, into out. */
size_t sym_cache__match(struct sym_entry *e, const char *glob, struct index_list *out);

#endif
