/* SPDX-License-Identifier: MIT */
/* Function symbols of one ELF object, read with libelf, with the file offsets uprobes need. */
#ifndef TRACER_ELF_SYMS_H
#define TRACER_ELF_SYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_sym {
	char *name;	 /* as in the ELF, version suffix ("@@LIBAVCODEC_59", "@GLIBC_2.2.5") cut */
	uint64_t addr;	 /* st_value: the virtual address the object was linked at */
	uint64_t size;	 /* st_size, 0 when the ELF does not say */
	uint64_t offset; /* file offset of the first instruction: what a uprobe is attached at */
	bool ifunc;	 /* STT_GNU_IFUNC: the address is the resolver's, not the implementation's */
	bool global;	 /* STB_GLOBAL or STB_WEAK (false for STB_LOCAL) */
};

struct elf_syms {
	struct elf_sym *syms; /* sorted by name, then by addr; one entry per (name, addr) */
	size_t cnt;
	bool pie;    /* ET_DYN: shared object or position-independent executable */
	bool is_go;  /* has a .go.buildinfo section or a Go build-id note */
	bool switches_stacks; /* imports swapcontext, setcontext or makecontext */
	bool unwinds;	      /* C++ with exceptions (it uses __gxx_personality_v0): they unwind
			       * through its functions */
};

/* Reads STT_FUNC and STT_GNU_IFUNC symbols with a non-zero address from .symtab and .dynsym.
 * Symbols whose address lies in no executable PT_LOAD segment are skipped. Duplicates (the same
 * name and address in both tables) are kept once. Returns 0 or -errno (-ENOEXEC: not an ELF
 * file, or a malformed one); never crashes on a truncated or hostile file. */
int elf_syms__open(const char *path, struct elf_syms **out);
int elf_syms__open_fd(int fd, struct elf_syms **out);
void elf_syms__free(struct elf_syms *syms);

/* The first entry with exactly this name, or NULL. */
const struct elf_sym *elf_syms__find(const struct elf_syms *syms, const char *name);

#endif
