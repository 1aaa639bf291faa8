// SPDX-License-Identifier: MIT
#include "elf/exit_site.h"
#include "elf/jump_table.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

#define EXIT_MAX_BACK 16 /* instructions an exit moves back past at most */

/* The function decoded whole: each instruction's start, and where control goes from it. */
struct fn_code {
	uint64_t *addr;
	uint64_t *target; /* a branch's direct target in the function (~0: none) */
	uint8_t *flow;	  /* FLOW_* */
	size_t n, cap;
	uint64_t *landings; /* every place a branch of the function goes, sorted */
	size_t nlandings, landcap;
	uint64_t (*tables)[2]; /* each jump table's lea and jmp (elf/jump_table.h) */
	size_t ntables;
	bool table; /* an indirect jump that is no tail call and no jump table it can read */
};

enum {
	FLOW_NEXT = 1,	  /* falls through to the next instruction */
	FLOW_UNKNOWN = 2, /* goes where cannot be told */
};

/* The first index of the sorted v[0..n) whose value is at least x (n if none). */
static size_t lower_bound(const uint64_t *v, size_t n, uint64_t x)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Whether the sorted v[0..n) holds a value in [lo, hi]. */
static bool any_in(const uint64_t *v, size_t n, uint64_t lo, uint64_t hi)
{
	size_t i = lower_bound(v, n, lo);

	return i < n && v[i] <= hi;
}

/* The index of the instruction starting at addr; -1 if none does. */
static long insn_at(const struct fn_code *fc, uint64_t addr)
{
	size_t i = lower_bound(fc->addr, fc->n, addr);

	return i < fc->n && fc->addr[i] == addr ? (long)i : -1;
}

static bool is_entry(const struct code_view *v, uint64_t off)
{
	return any_in(v->entries, v->nentries, off, off);
}

/* A PLT stub: an indirect jump through the GOT, after an endbr64 and a bnd prefix in .plt.sec. */
static bool is_plt_stub(const struct code_view *v, uint64_t off)
{
	size_t len;
	const uint8_t *p = code_view__at(v, off, &len);

	if (p && len >= 4 && !memcmp(p, "\xf3\x0f\x1e\xfa", 4)) {
		p += 4;
		len -= 4;
	}
	if (p && len >= 1 && p[0] == 0xf2) {
		p++;
		len--;
	}
	return p && len >= 2 && p[0] == 0xff && p[1] == 0x25;
}

static bool inside(const struct site_move *m, uint64_t a)
{
	return a >= m->func && a < m->func + m->size;
}

/* Whether insn leaves the function for good: a return, or a tail call (a jmp to another
 * function's entry, to a PLT stub, or through the GOT). A jump to other code outside it (a
 * .cold part) is not an exit: calls taking it end when the thread is next seen above. */
static bool is_exit(const cs_insn *insn, const struct code_view *v, const struct site_move *m)
{
	const cs_x86 *x = &insn->detail->x86;

	if (insn->id == X86_INS_RET)
		return true;
	if (insn->id != X86_INS_JMP || x->op_count != 1)
		return false;
	if (x->operands[0].type == X86_OP_IMM) {
		uint64_t t = x->operands[0].imm;

		return !inside(m, t) && (is_entry(v, t) || is_plt_stub(v, t));
	}
	return x->operands[0].type == X86_OP_MEM && x->operands[0].mem.base == X86_REG_RIP &&
	       x->operands[0].mem.index == X86_REG_INVALID;
}

/* Where control can go after insn, besides falling through (*next): a direct target (*t, or
 * ~0 none). Returns false when it cannot be known (a jump table, a jump out of the function
 * that is not an exit: a .cold part may jump back). */
static bool successors(csh h, const cs_insn *insn, const struct code_view *v,
		       const struct site_move *m, bool *next, uint64_t *t)
{
	const cs_x86 *x = &insn->detail->x86;
	bool direct = x->op_count == 1 && x->operands[0].type == X86_OP_IMM;

	*next = true;
	*t = ~0ull;
	switch (insn->id) {
	case X86_INS_RET: case X86_INS_RETF: case X86_INS_UD2: case X86_INS_HLT: case X86_INS_INT3:
		*next = false;
		return true;
	}
	if (cs_insn_group(h, insn, CS_GRP_CALL)) {
		/* a call to a function that never returns ends the path */
		*next = !(direct && any_in(v->noreturn, v->nnoreturn, x->operands[0].imm,
					   x->operands[0].imm));
		return true;
	}
	if (!cs_insn_group(h, insn, CS_GRP_JUMP))
		return true;
	if (insn->id == X86_INS_JMP) {
		*next = false;
		if (is_exit(insn, v, m))
			return true;
	}
	if (!direct || !inside(m, x->operands[0].imm))
		return false;
	*t = x->operands[0].imm;
	return true;
}

/* Whether control from the instruction at from can reach the one at to (or cannot be told not
 * to) within a call of the function. */
static bool reaches(const struct fn_code *fc, uint64_t from, uint64_t to)
{
	uint8_t *seen = xcalloc(fc->n + 1, 1);
	size_t *todo = xcalloc(fc->n + 1, sizeof(size_t)), ntodo = 0;
	long i = insn_at(fc, from);
	bool found = i < 0;

	if (!found) {
		seen[i] = 1;
		todo[ntodo++] = i;
	}
	while (ntodo && !found) {
		size_t k = todo[--ntodo];
		long s[2];

		if (fc->addr[k] == to || (fc->flow[k] & FLOW_UNKNOWN)) {
			found = true;
			break;
		}
		s[0] = !(fc->flow[k] & FLOW_NEXT) ? -2 : k + 1 < fc->n ? (long)k + 1 : -1;
		s[1] = fc->target[k] == ~0ull ? -2 : insn_at(fc, fc->target[k]);
		for (int j = 0; j < 2 && !found; j++) {
			if (s[j] == -2 || (s[j] >= 0 && seen[s[j]]))
				continue;
			if (s[j] < 0) { /* into the middle of an instruction, or off the end */
				found = true;
				break;
			}
			seen[s[j]] = 1;
			todo[ntodo++] = s[j];
		}
	}
	free(seen);
	free(todo);
	return found;
}

static bool is_reg(unsigned int r, unsigned int r64)
{
	switch (r64) {
	case X86_REG_RSP:
		return r == X86_REG_RSP || r == X86_REG_ESP || r == X86_REG_SP || r == X86_REG_SPL;
	case X86_REG_RBP:
		return r == X86_REG_RBP || r == X86_REG_EBP || r == X86_REG_BP || r == X86_REG_BPL;
	default:
		return r == X86_REG_RAX || r == X86_REG_EAX || r == X86_REG_AX || r == X86_REG_AL ||
		       r == X86_REG_AH;
	}
}

/* Follows rsp through insn, one between the moved site and the `ret`: e->from_rbp, e->sp_delta
 * say what rsp is in terms of the site's registers; *rbp_changed, whether rbp was written
 * since. False when rsp becomes unknown, or insn branches, or writes rax that the exit reads. */
static bool follow_rsp(csh h, const cs_insn *insn, bool keep_ret, struct site_exit *e,
		       bool *rbp_changed)
{
	static const int flow[] = { CS_GRP_JUMP, CS_GRP_CALL, CS_GRP_RET, CS_GRP_INT, CS_GRP_IRET,
				    CS_GRP_PRIVILEGE };
	const cs_x86 *x = &insn->detail->x86;
	const cs_x86_op *o = x->operands;
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0;
	bool writes_sp = false, writes_bp = false;
	int64_t d;

	for (size_t i = 0; i < sizeof(flow) / sizeof(flow[0]); i++)
		if (cs_insn_group(h, insn, flow[i]))
			return false;
	if (insn->id == X86_INS_SYSCALL || insn->id == X86_INS_UD2 || insn->id == X86_INS_HLT ||
	    cs_regs_access(h, insn, rd, &nrd, wr, &nwr))
		return false;
	for (uint8_t i = 0; i < nwr; i++) {
		writes_sp |= is_reg(wr[i], X86_REG_RSP);
		writes_bp |= is_reg(wr[i], X86_REG_RBP);
		if (keep_ret && is_reg(wr[i], X86_REG_RAX))
			return false;
	}
	if (writes_sp) {
		switch (insn->id) {
		case X86_INS_PUSH:
			d = -(int64_t)o[0].size;
			break;
		case X86_INS_POP:
			if (o[0].type == X86_OP_REG && is_reg(o[0].reg, X86_REG_RSP))
				return false;
			d = o[0].size;
			break;
		case X86_INS_ADD: case X86_INS_SUB:
			if (x->op_count != 2 || o[0].type != X86_OP_REG || o[0].reg != X86_REG_RSP ||
			    o[1].type != X86_OP_IMM)
				return false;
			d = insn->id == X86_INS_ADD ? o[1].imm : -o[1].imm;
			break;
		case X86_INS_LEA:
			/* lea disp(%rsp),%rsp, or from the frame pointer: lea disp(%rbp),%rsp */
			if (x->op_count != 2 || o[0].type != X86_OP_REG || o[0].reg != X86_REG_RSP ||
			    o[1].mem.index != X86_REG_INVALID || o[1].mem.segment != X86_REG_INVALID)
				return false;
			if (o[1].mem.base == X86_REG_RBP) {
				if (*rbp_changed)
					return false;
				e->from_rbp = true;
				e->sp_delta = 0;
			} else if (o[1].mem.base != X86_REG_RSP) {
				return false;
			}
			d = o[1].mem.disp;
			break;
		case X86_INS_MOV: /* mov %rbp,%rsp */
			if (x->op_count != 2 || o[0].type != X86_OP_REG || o[0].reg != X86_REG_RSP ||
			    o[1].type != X86_OP_REG || o[1].reg != X86_REG_RBP || *rbp_changed)
				return false;
			e->from_rbp = true;
			e->sp_delta = 0;
			d = 0;
			break;
		case X86_INS_LEAVE: /* mov %rbp,%rsp; pop %rbp */
			if (*rbp_changed)
				return false;
			e->from_rbp = true;
			e->sp_delta = 0;
			d = 8;
			break;
		default:
			return false;
		}
		d += e->sp_delta;
		if (d < INT16_MIN || d > INT16_MAX)
			return false;
		e->sp_delta = d;
	}
	if (writes_bp)
		*rbp_changed = true;
	return true;
}

/* The jcc's condition code (the low nibble of 70-7f, 0f 80-8f), past its prefixes. */
static int8_t jcc_cond(const cs_insn *insn)
{
	const uint8_t *b = insn->bytes;
	size_t i = 0;

	while (i + 1 < insn->size && (b[i] == 0xf2 || b[i] == 0x2e || b[i] == 0x3e))
		i++;
	if (b[i] >= 0x70 && b[i] <= 0x7f)
		return b[i] & 0xf;
	if (b[i] == 0x0f && i + 1 < insn->size && (b[i + 1] & 0xf0) == 0x80)
		return b[i + 1] & 0xf;
	return -1;
}

/* Whether a branch of the function lands in [lo, hi]. */
static bool landing_in(const struct fn_code *fc, uint64_t lo, uint64_t hi)
{
	return any_in(fc->landings, fc->nlandings, lo, hi);
}

/* The exit of the `ret` at fc->addr[r], moved back to the emulated instruction before it
 * (into *e) when that is the same: every path to the `ret` passes it (no branch of the function
 * lands after it; jumps from elsewhere in the object are checked by elf/site.c), at most once
 * a call (a jcc's taken side cannot come back to it), and rsp at the `ret` follows from the
 * registers there. False: it stays at the `ret`. */
static bool move_back(csh h, cs_insn *insn, const struct code_view *v, const struct site_move *m,
		      const struct fn_code *fc, size_t r, struct site_exit *e)
{
	size_t s;

	for (s = r; s-- > 0 && r - s <= EXIT_MAX_BACK;) {
		size_t len;
		const uint8_t *p = code_view__at(v, fc->addr[s], &len);
		enum insn_class c = p ? insn__classify(p, len < 16 ? len : 16) : INSN_STEPPED;

		if (fc->addr[s] <= m->func + m->delta)
			return false; /* the entry's site: one probe cannot be both */
		if (!code_view__decode(v, h, insn, fc->addr[s]))
			return false;
		if (c == INSN_STEPPED)
			continue;
		/* an emulated push or nop, or a jcc falling through to the `ret` */
		if (cs_insn_group(h, insn, CS_GRP_CALL) || insn->id == X86_INS_JMP)
			return false;
		e->cond = cs_insn_group(h, insn, CS_GRP_JUMP) ? jcc_cond(insn) : -1;
		if (cs_insn_group(h, insn, CS_GRP_JUMP) &&
		    (e->cond < 0 || fc->target[s] == ~0ull ||
		     reaches(fc, fc->target[s], fc->addr[s])))
			return false;
		break;
	}
	if (s >= r || r - s > EXIT_MAX_BACK)
		return false;
	/* rsp from the site to the `ret`; the site itself too when it is a push */
	{
		bool rbp_changed = false;

		e->from_rbp = false;
		e->sp_delta = 0;
		for (size_t k = s; k < r; k++) {
			if (!code_view__decode(v, h, insn, fc->addr[k]))
				return false;
			if (k > s || insn->id == X86_INS_PUSH) {
				if (!follow_rsp(h, insn, m->keep_ret, e, &rbp_changed))
					return false;
			}
		}
	}
	/* no branch of the function lands after the site, up to the `ret` */
	if (fc->table || landing_in(fc, fc->addr[s] + 1, fc->addr[r]))
		return false;
	/* another entry point after the site */
	if (any_in(v->entries, v->nentries, fc->addr[s] + 1, fc->addr[r]))
		return false;
	e->off = fc->addr[s];
	return true;
}

static void fn_code__add(struct fn_code *fc, csh h, const cs_insn *insn,
			 const struct code_view *v, const struct site_move *m)
{
	const cs_x86 *x = &insn->detail->x86;
	bool next, jump = cs_insn_group(h, insn, CS_GRP_JUMP);
	uint64_t t;

	if (fc->n == fc->cap) { /* doubled: a function may be tens of thousands of them */
		fc->cap = fc->cap ? 2 * fc->cap : 256;
		fc->addr = xrealloc(fc->addr, fc->cap, sizeof(uint64_t));
		fc->target = xrealloc(fc->target, fc->cap, sizeof(uint64_t));
		fc->flow = xrealloc(fc->flow, fc->cap, 1);
	}
	fc->addr[fc->n] = insn->address;
	fc->flow[fc->n] = successors(h, insn, v, m, &next, &t) ? 0 : FLOW_UNKNOWN;
	fc->flow[fc->n] |= next ? FLOW_NEXT : 0;
	fc->target[fc->n++] = t;
	if (!jump && !cs_insn_group(h, insn, CS_GRP_CALL))
		return;
	if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM) {
		if (fc->nlandings == fc->landcap) {
			fc->landcap = fc->landcap ? 2 * fc->landcap : 256;
			fc->landings = xrealloc(fc->landings, fc->landcap, sizeof(uint64_t));
		}
		fc->landings[fc->nlandings++] = x->operands[0].imm;
	} else if (jump && !is_exit(insn, v, m)) {
		uint64_t lea;

		if (!jump_table__targets(h, v, fc->addr, fc->n - 1, insn, &fc->landings,
					 &fc->nlandings, &fc->landcap, &lea)) {
			fc->table = true;
			return;
		}
		fc->tables = xrealloc(fc->tables, fc->ntables + 1, sizeof(*fc->tables));
		fc->tables[fc->ntables][0] = lea;
		fc->tables[fc->ntables++][1] = insn->address;
	}
}

static void fn_code__free(struct fn_code *fc)
{
	free(fc->addr);
	free(fc->target);
	free(fc->flow);
	free(fc->landings);
	free(fc->tables);
	memset(fc, 0, sizeof(*fc));
}

void exit_site__find(csh h, cs_insn *insn, const struct code_view *v, struct site_move *m)
{
	/* TRACER_NO_EXIT_MOVE: every exit at its `ret`, as before: to compare */
	bool move = !getenv("TRACER_NO_EXIT_MOVE");
	size_t avail, left;
	const uint8_t *p = code_view__at(v, m->func, &avail);
	uint64_t addr = m->func;
	struct fn_code fc = { 0 };

	m->exits = NULL;
	m->nexits = m->exits_moved = 0;
	m->exits_why_not = !p ? "it is not in the object's code" :
			   !m->size ? "its size is unknown" : m->size > avail ? "it is cut short" : NULL;
	if (m->exits_why_not)
		return;
	left = m->size;
	while (left) {
		if (!cs_disasm_iter(h, &p, &left, &addr, insn)) {
			free(m->exits);
			m->exits = NULL;
			m->nexits = 0;
			m->exits_why_not = "it cannot be decoded whole";
			fn_code__free(&fc);
			return;
		}
		fn_code__add(&fc, h, insn, v, m);
		if (!is_exit(insn, v, m))
			continue;
		m->exits = xrealloc(m->exits, m->nexits + 1, sizeof(*m->exits));
		m->exits[m->nexits++] = (struct site_exit){
			.off = insn->address,
			.ret = insn->address,
			.cls = insn__classify(insn->bytes, insn->size),
			.cond = -1,
		};
	}
	if (!m->nexits)
		m->exits_why_not = "it has no return";
	if (fc.nlandings)
		qsort(fc.landings, fc.nlandings, sizeof(uint64_t), cmp_u64);
	/* a table read from a lea that a branch lands after, up to its jmp: a guess */
	for (size_t i = 0; i < fc.ntables; i++)
		if (landing_in(&fc, fc.tables[i][0] + 1, fc.tables[i][1]))
			fc.table = true;
	for (size_t i = 0; i < m->nexits && move; i++) {
		struct site_exit *e = &m->exits[i], moved = *e;
		long r = insn_at(&fc, e->ret);

		if (e->cls == INSN_STEPPED && r >= 0 && move_back(h, insn, v, m, &fc, r, &moved)) {
			size_t len;
			const uint8_t *b = code_view__at(v, moved.off, &len);

			moved.cls = insn__classify(b, len < 16 ? len : 16);
			*e = moved;
			m->exits_moved++;
		}
	}
	for (size_t i = 0; i < m->nexits; i++)
		if (!i || m->exits[i].cls > m->exits_cls)
			m->exits_cls = m->exits[i].cls;
	fn_code__free(&fc);
}
