/* SPDX-License-Identifier: MIT */
/* What a uprobe on a function costs depends on the function's first instruction: the kernel
 * emulates a few instructions inside the trap, rewrites 5-byte nops into a call (6.18+), and
 * copies everything else out of line and single-steps it, which takes a second trap. This is a
 * minimal x86-64 classifier for that first instruction (arch/x86/kernel/uprobes.c:
 * branch_setup_xol_ops, push_setup_xol_ops, can_optimize). It decodes only what it needs to. */
#ifndef TRACER_INSN_H
#define TRACER_INSN_H

#include <stddef.h>
#include <stdint.h>

enum insn_class {
	/* Emulated in the trap, one trap per hit: `push reg` (50-57, or 41 50-57), nop (90,
	 * 66 90) and nopl (0f 1f /0) other than 5 bytes long, jmp/call rel (eb, e9, e8), jcc
	 * (70-7f, 0f 80-8f). */
	INSN_EMULATED,
	/* A 5-byte nop or nopl (e.g. 0f 1f 44 00 00): kernel 6.18+ rewrites the site into a call
	 * to a trampoline after the first hit, cheaper than a trap (on older kernels it is
	 * emulated). */
	INSN_OPTIMIZED,
	/* Anything else (sub, mov, lea, endbr64 f3 0f 1e fa, ...), and code too short to decode:
	 * executed out of line with single-stepping, two traps per hit. */
	INSN_STEPPED,
	INSN_CLASS_MAX,
};

/* Classifies the instruction at code[0..len). Never reads past len. */
enum insn_class insn__classify(const uint8_t *code, size_t len);
enum insn_class insn__classify_site(const char *path, uint64_t offset);

/* "emulated", "optimized", "single-stepped". */
const char *insn_class__name(enum insn_class c);

#endif
