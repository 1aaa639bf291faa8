// SPDX-License-Identifier: MIT
#include "elf/jump_table.h"
#include "util/util.h"

#include <string.h>

#define TABLE_MAX 16384 /* entries read at most */
#define LEA_BACK 6	/* instructions between the lea and the movslq at most */

static bool writes(csh h, const cs_insn *insn, unsigned int reg)
{
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0;

	if (cs_regs_access(h, insn, rd, &nrd, wr, &nwr))
		return true;
	for (uint8_t i = 0; i < nwr; i++)
		if (wr[i] == reg)
			return true;
	return false;
}

/* The address (vaddr) of code at file offset off; false outside the executable segments. */
static bool code_vaddr(const struct code_view *v, uint64_t off, uint64_t *va)
{
	for (size_t i = 0; i < v->nseg; i++)
		if (off >= v->seg[i].off && off - v->seg[i].off < v->seg[i].len) {
			*va = off - v->seg[i].off + v->seg[i].vaddr;
			return true;
		}
	return false;
}

/* The file offset of code at address va; false outside the executable segments. */
static bool code_off(const struct code_view *v, uint64_t va, uint64_t *off)
{
	for (size_t i = 0; i < v->nseg; i++)
		if (va >= v->seg[i].vaddr && va - v->seg[i].vaddr < v->seg[i].len) {
			*off = va - v->seg[i].vaddr + v->seg[i].off;
			return true;
		}
	return false;
}

/* Entry k of the table at address table (in any loaded segment); false past its segment. */
static bool entry(const struct code_view *v, uint64_t table, size_t k, int32_t *e)
{
	uint64_t at = table + 4 * k;

	for (size_t i = 0; i < v->nload; i++)
		if (at >= v->load[i].vaddr && at - v->load[i].vaddr + 4 <= v->load[i].len &&
		    v->load[i].bytes) {
			memcpy(e, v->load[i].bytes + (at - v->load[i].vaddr), 4);
			return true;
		}
	return false;
}

bool jump_table__targets(csh h, const struct code_view *v, const uint64_t *prev, size_t nprev,
			 const cs_insn *jmp, uint64_t **out, size_t *n, size_t *cap,
			 uint64_t *lea)
{
	const cs_x86 *jx = &jmp->detail->x86;
	cs_insn *insn = cs_malloc(h);
	unsigned int a, b;
	uint64_t table = 0, va;
	size_t k;
	bool ok = false;

	if (jx->op_count != 1 || jx->operands[0].type != X86_OP_REG || nprev < 3)
		goto out;
	a = jx->operands[0].reg;
	/* add %rB,%rA */
	if (!code_view__decode(v, h, insn, prev[nprev - 1]) || insn->id != X86_INS_ADD ||
	    insn->detail->x86.op_count != 2 || insn->detail->x86.operands[0].type != X86_OP_REG ||
	    insn->detail->x86.operands[0].reg != a ||
	    insn->detail->x86.operands[1].type != X86_OP_REG)
		goto out;
	b = insn->detail->x86.operands[1].reg;
	/* movslq (%rB,%rI,4),%rA */
	if (!code_view__decode(v, h, insn, prev[nprev - 2]) || insn->id != X86_INS_MOVSXD ||
	    insn->detail->x86.op_count != 2 || insn->detail->x86.operands[0].type != X86_OP_REG ||
	    insn->detail->x86.operands[0].reg != a ||
	    insn->detail->x86.operands[1].type != X86_OP_MEM ||
	    insn->detail->x86.operands[1].mem.base != b ||
	    insn->detail->x86.operands[1].mem.scale != 4 || insn->detail->x86.operands[1].mem.disp)
		goto out;
	/* lea TABLE(%rip),%rB, with nothing writing rB after it */
	for (k = nprev - 2; k-- > 0 && nprev - 2 - k <= LEA_BACK;) {
		const cs_x86 *x;

		if (!code_view__decode(v, h, insn, prev[k]))
			goto out;
		x = &insn->detail->x86;
		if (insn->id == X86_INS_LEA && x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
		    x->operands[0].reg == b && x->operands[1].mem.base == X86_REG_RIP &&
		    x->operands[1].mem.index == X86_REG_INVALID) {
			if (!code_vaddr(v, insn->address + insn->size, &va))
				goto out;
			table = va + x->operands[1].mem.disp;
			*lea = insn->address;
			break;
		}
		if (writes(h, insn, b) || cs_insn_group(h, insn, CS_GRP_JUMP) ||
		    cs_insn_group(h, insn, CS_GRP_CALL) || cs_insn_group(h, insn, CS_GRP_RET))
			goto out;
	}
	if (!table)
		goto out;
	for (k = 0; k < TABLE_MAX; k++) {
		int32_t e;
		uint64_t off;

		if (!entry(v, table, k, &e) || !code_off(v, table + (int64_t)e, &off))
			break;
		if (*n == *cap) {
			*cap = *cap ? 2 * *cap : 256;
			*out = xrealloc(*out, *cap, sizeof(uint64_t));
		}
		(*out)[(*n)++] = off;
	}
	ok = k > 0;
out:
	cs_free(insn, 1);
	return ok;
}
