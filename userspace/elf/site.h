/* SPDX-License-Identifier: MIT */
/* Where the probes on a function go. A uprobe on an instruction the kernel cannot emulate
 * (endbr64, test, mov, ...) is single-stepped, about ten times the cost of an emulated one
 * (insn.h). When a function starts with such instructions, its entry and return probes can
 * move to the first emulated instruction after them, where every call still passes, when
 * that is provably the same as probing the first instruction:
 *   - no instruction before the new site branches, calls, returns or traps;
 *   - none writes rsp (the return probe takes the return address from [rsp] at its site);
 *   - none writes an argument register, when the probe reads arguments there;
 *   - nothing jumps into the skipped bytes or onto the new site: no branch of the function
 *     itself (decoded whole, with capstone), no jump table in it (its targets are unknown),
 *     and no rel8/rel32 branch anywhere else in the object's code (every byte position is
 *     read as a possible branch: a false alarm only keeps the original site).
 * Otherwise the site stays at the function's first instruction. */
#ifndef TRACER_SITE_H
#define TRACER_SITE_H

#include "elf/insn.h"

#include <capstone/capstone.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SITE_MAX_SKIP 8 /* instructions skipped at most */

/* An object's executable bytes, addressed by file offset (what uprobes use). */
struct code_view {
	uint8_t *map; /* the whole file, read-only (NULL over bytes in memory) */
	size_t map_len;
	struct {
		uint64_t off, len;  /* in the file */
		uint64_t vaddr;	    /* where the object is linked to load it */
		const uint8_t *bytes; /* its first byte */
	} seg[4], load[8]; /* its executable PT_LOAD segments; all of them (jump tables) */
	size_t nseg, nload;
	/* the object's symbols' file offsets, sorted (set by the caller): another entry point
	 * in the skipped bytes keeps the site too */
	const uint64_t *entries;
	size_t nentries;
	/* functions that never return (__stack_chk_fail, abort, __cxa_throw, ...) and the PLT
	 * stubs of those, sorted (set by the caller, elf/noreturn.h): a call to one ends a path */
	const uint64_t *noreturn;
	size_t nnoreturn;
};

int code_view__open(struct code_view *v, int fd);
/* Over bytes already in memory (tests): one executable segment at file offset and address
 * base. */
void code_view__init_mem(struct code_view *v, const uint8_t *code, size_t len, uint64_t base);
void code_view__close(struct code_view *v);
/* The executable bytes from off to the end of its segment (NULL, 0 when off is in none). */
const uint8_t *code_view__at(const struct code_view *v, uint64_t off, size_t *len);
/* The instruction at off into insn (its address: off); false when none decodes there. */
bool code_view__decode(const struct code_view *v, csh h, cs_insn *insn, uint64_t off);

/* Where a call of a function ends, and how the exit program finds the call there. A `ret` is
 * single-stepped; the exit moves back to the emulated instruction before it (the stack
 * protector's jcc, most often) when every path to the `ret` passes that instruction, at most
 * once a call, with nothing between them that branches, calls or makes rsp unknown. */
struct site_exit {
	uint64_t off;	     /* the probed instruction (file offset) */
	uint64_t ret;	     /* the `ret` or tail jump it stands for (off: not moved) */
	enum insn_class cls; /* of the probed instruction */
	int32_t sp_delta;    /* rsp at ret = (from_rbp ? rbp : rsp) at off + sp_delta */
	bool from_rbp;
	int8_t cond;	     /* -1; or the jcc's condition code: the call ends if it is not taken */
};

struct site_move {
	/* in */
	uint64_t func;	/* the function's file offset */
	uint64_t size;	/* its size (st_size); 0, unknown: never moved */
	bool keep_args; /* the probe reads argument registers at its site */
	bool want_exits; /* find its exits: its returns are probed there, not by a return probe */
	bool keep_ret;	 /* the exits read the return value (rax) */
	/* out */
	enum insn_class first; /* of the function's first instruction */
	enum insn_class cls;   /* of the instruction at the site */
	uint32_t delta;	       /* the site, in bytes past func (0: not moved) */
	char skipped[64];      /* what the probes moved past: "endbr64", "test; mov" */
	const char *why_not;   /* first single-stepped and not moved: why (static text) */
	/* want_exits: where a call of it ends (xcalloc'd, the caller frees): each `ret`, and
	 * each tail call (a jmp to another function's entry). NULL when the function cannot be
	 * decoded whole (exits_why_not says why). */
	struct site_exit *exits;
	size_t nexits;
	enum insn_class exits_cls; /* the costliest of them to probe */
	size_t exits_moved;	   /* how many moved back from a `ret` */
	const char *exits_why_not;
};

/* Chooses each function's site; one pass over the object's code checks the jumps from
 * elsewhere for all of them. With want_exits, also finds each function's exits.
 *
 * Why exits: a return probe puts a trampoline's address in the call's return slot, and a C++
 * exception unwinding through that frame finds no unwind information there and aborts the
 * process. A probe on the function's own `ret` instructions (and tail jumps) touches no stack;
 * a call an exception unwinds hits none of them and ends at the catch instead. */
void site__choose(const struct code_view *v, struct site_move *m, size_t n);

struct elf_syms;
/* site__choose on the object at path, whose symbols are syms (the other entry points). On an
 * error (-errno) every site stays where it is, classified by its first instruction. */
int site__choose_in(const char *path, const struct elf_syms *syms, struct site_move *m,
		    size_t n);

#endif
