/* SPDX-License-Identifier: MIT */
/* Data symbols (STT_OBJECT) of an ELF object: where a program keeps a global, such as CPython's
 * _PyRuntime, and how the object is placed in memory. */
#ifndef TRACER_ELF_DATASYM_H
#define TRACER_ELF_DATASYM_H

#include <stdbool.h>
#include <stdint.h>

struct elf_datasym {
	uint64_t value;	   /* st_value: the address the object was linked at */
	uint64_t size;
	uint64_t load_vaddr; /* p_vaddr of the first PT_LOAD, page-aligned down */
	bool pie;	   /* ET_DYN: add the load bias to value */
};

/* Looks name up in .dynsym, then .symtab, of the ELF file open on fd. 0, -ENOENT (no such
 * data symbol) or -ENOEXEC (not an ELF file, or a malformed one). */
int elf_datasym__find(int fd, const char *name, struct elf_datasym *out);

#endif
