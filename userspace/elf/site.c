// SPDX-License-Identifier: MIT
#include "elf/site.h"
#include "elf/exit_site.h"
#include "elf/noreturn.h"
#include "elf/elf_syms.h"
#include "util/util.h"

#include <capstone/capstone.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define STR_(x) #x
#define STR(x) STR_(x)

int code_view__open(struct code_view *v, int fd)
{
	struct stat st;
	Elf *elf;
	size_t n;
	int err = -ENOEXEC;

	memset(v, 0, sizeof(*v));
	if (fstat(fd, &st))
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -ENOEXEC;
	if (!elf_getphdrnum(elf, &n)) {
		for (size_t i = 0; i < n && v->nload < 8; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD ||
			    ph.p_offset > (uint64_t)st.st_size ||
			    ph.p_filesz > (uint64_t)st.st_size - ph.p_offset)
				continue;
			v->load[v->nload].off = ph.p_offset;
			v->load[v->nload].len = ph.p_filesz;
			v->load[v->nload++].vaddr = ph.p_vaddr;
			if ((ph.p_flags & PF_X) && v->nseg < 4)
				v->seg[v->nseg++] = v->load[v->nload - 1];
		}
		err = v->nseg ? 0 : -ENOEXEC;
	}
	elf_end(elf);
	if (err)
		return err;
	/* shared, never private: uprobes (another tool's, or another tracer's with -a) put their
	 * int3 into every private mapping of the file that could be executable, this one too, and
	 * the code read would not be the code on disk */
	v->map = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (v->map == MAP_FAILED) {
		v->map = NULL;
		return -errno;
	}
	v->map_len = st.st_size;
	for (size_t i = 0; i < v->nseg; i++)
		v->seg[i].bytes = v->map + v->seg[i].off;
	for (size_t i = 0; i < v->nload; i++)
		v->load[i].bytes = v->map + v->load[i].off;
	return 0;
}

void code_view__init_mem(struct code_view *v, const uint8_t *code, size_t len, uint64_t base)
{
	memset(v, 0, sizeof(*v));
	v->seg[0].bytes = code;
	v->seg[0].off = v->seg[0].vaddr = base;
	v->seg[0].len = len;
	v->nseg = 1;
	v->load[0] = v->seg[0];
	v->nload = 1;
}

void code_view__close(struct code_view *v)
{
	if (v->map_len)
		munmap(v->map, v->map_len);
	memset(v, 0, sizeof(*v));
}

const uint8_t *code_view__at(const struct code_view *v, uint64_t off, size_t *len)
{
	for (size_t i = 0; i < v->nseg; i++)
		if (off >= v->seg[i].off && off - v->seg[i].off < v->seg[i].len) {
			*len = v->seg[i].off + v->seg[i].len - off;
			return v->seg[i].bytes + (off - v->seg[i].off);
		}
	*len = 0;
	return NULL;
}

bool code_view__decode(const struct code_view *v, csh h, cs_insn *insn, uint64_t off)
{
	size_t len;
	const uint8_t *p = code_view__at(v, off, &len);

	return p && cs_disasm_iter(h, &p, &len, &off, insn);
}

/* The register families that must not change before the site. */
static bool is_sp(unsigned int r)
{
	return r == X86_REG_RSP || r == X86_REG_ESP || r == X86_REG_SP || r == X86_REG_SPL;
}

static bool is_arg_reg(unsigned int r)
{
	static const unsigned int args[] = {
		X86_REG_RDI, X86_REG_EDI, X86_REG_DI,  X86_REG_DIL, X86_REG_RSI, X86_REG_ESI,
		X86_REG_SI,  X86_REG_SIL, X86_REG_RDX, X86_REG_EDX, X86_REG_DX,	 X86_REG_DL,
		X86_REG_DH,  X86_REG_RCX, X86_REG_ECX, X86_REG_CX,  X86_REG_CL,	 X86_REG_CH,
		X86_REG_R8,  X86_REG_R8D, X86_REG_R8W, X86_REG_R8B, X86_REG_R9,	 X86_REG_R9D,
		X86_REG_R9W, X86_REG_R9B,
	};

	for (size_t i = 0; i < sizeof(args) / sizeof(args[0]); i++)
		if (r == args[i])
			return true;
	return false;
}

/* NULL when the probes may move past insn; else why not. */
static const char *cannot_skip(csh h, const cs_insn *insn, bool keep_args)
{
	static const int flow[] = { CS_GRP_JUMP, CS_GRP_CALL, CS_GRP_RET, CS_GRP_INT, CS_GRP_IRET,
				    CS_GRP_PRIVILEGE };
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0;
	const cs_x86 *x = &insn->detail->x86;

	for (size_t i = 0; i < sizeof(flow) / sizeof(flow[0]); i++)
		if (cs_insn_group(h, insn, flow[i]))
			return "a branch comes first";
	switch (insn->id) {
	case X86_INS_SYSCALL: case X86_INS_SYSENTER: case X86_INS_UD2: case X86_INS_HLT:
	case X86_INS_INT3: case X86_INS_INVALID:
		return "a branch comes first";
	}
	if (cs_regs_access(h, insn, rd, &nrd, wr, &nwr))
		return "an instruction it cannot decode comes first";
	for (uint8_t i = 0; i < nwr; i++) {
		if (is_sp(wr[i]) || wr[i] == X86_REG_RIP)
			return "rsp changes first";
		if (keep_args && is_arg_reg(wr[i]))
			return "an argument register it reads changes first";
	}
	/* a store at or above rsp would be over the return address the return probe takes */
	for (uint8_t i = 0; i < x->op_count; i++)
		if (x->operands[i].type == X86_OP_MEM && (x->operands[i].access & CS_AC_WRITE) &&
		    is_sp(x->operands[i].mem.base) && x->operands[i].mem.disp >= 0)
			return "a store to the return address's slot comes first";
	return NULL;
}

/* The function decoded whole: does a branch of its own land in (func, func+delta], or does it
 * jump through a table? */
static const char *own_branches(csh h, cs_insn *insn, const uint8_t *code, size_t len,
				uint64_t func, uint32_t delta)
{
	const uint8_t *p = code;
	uint64_t addr = func;
	size_t left = len;

	while (left) {
		const cs_x86 *x;

		if (!cs_disasm_iter(h, &p, &left, &addr, insn))
			return "it cannot be decoded whole";
		if (!cs_insn_group(h, insn, CS_GRP_JUMP) && !cs_insn_group(h, insn, CS_GRP_CALL))
			continue;
		x = &insn->detail->x86;
		if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM) {
			uint64_t t = x->operands[0].imm;

			if (t > func && t <= func + delta)
				return "a branch in it lands in the skipped bytes";
			continue;
		}
		/* an indirect jump: a tail call through the GOT (rip-relative, no index) is
		 * fine; anything else may be a jump table, whose targets are not known */
		if (cs_insn_group(h, insn, CS_GRP_JUMP) &&
		    !(x->op_count == 1 && x->operands[0].type == X86_OP_MEM &&
		      x->operands[0].mem.base == X86_REG_RIP &&
		      x->operands[0].mem.index == X86_REG_INVALID))
			return "it jumps through a table";
	}
	return NULL;
}

/* First pass, one function: the site past its leading single-stepped instructions, checked
 * against the function's own code. */
static void propose(csh h, cs_insn *insn, const struct code_view *v, struct site_move *m)
{
	size_t avail, lim;
	const uint8_t *code = code_view__at(v, m->func, &avail), *p;
	uint64_t addr = m->func;
	size_t left, used = 0;

	m->delta = 0;
	m->skipped[0] = '\0';
	m->why_not = NULL;
	m->first = m->cls = code ? insn__classify(code, avail < 16 ? avail : 16) : INSN_STEPPED;
	if (m->first != INSN_STEPPED)
		return;
	if (!code) {
		m->why_not = "it is not in the object's code";
		return;
	}
	if (!m->size) {
		m->why_not = "its size is unknown";
		return;
	}
	lim = m->size < avail ? m->size : avail;
	p = code;
	left = lim;
	for (int k = 0; k < SITE_MAX_SKIP; k++) {
		uint64_t off;
		enum insn_class c;

		if (!cs_disasm_iter(h, &p, &left, &addr, insn)) {
			m->why_not = "an instruction it cannot decode comes first";
			return;
		}
		m->why_not = cannot_skip(h, insn, m->keep_args);
		if (m->why_not)
			return;
		used += snprintf(m->skipped + used, sizeof(m->skipped) - used, "%s%s",
				 k ? "; " : "", insn->mnemonic);
		if (used >= sizeof(m->skipped))
			used = sizeof(m->skipped) - 1;
		off = addr - m->func;
		if (off >= lim) {
			m->why_not = "it ends first";
			return;
		}
		c = insn__classify(code + off, avail - off < 16 ? avail - off : 16);
		if (c != INSN_STEPPED) {
			m->why_not = own_branches(h, insn, code, lim, m->func, off);
			if (!m->why_not) {
				m->delta = off;
				m->cls = c;
			}
			return;
		}
	}
	m->why_not = "more than " STR(SITE_MAX_SKIP) " single-stepped instructions come first";
}

/* Bytes a jump from elsewhere must not land in: an entry site's skipped bytes (exit -1), or
 * the bytes after a moved exit up to its `ret`. */
struct window {
	uint64_t lo, hi; /* inclusive: (func, func + delta], or (exit's site, its ret] */
	struct site_move *m;
	long exit;
};

#define WINDOW_MAX 512 /* bytes: 16 instructions of at most 15 */

static int window_cmp(const void *a, const void *b)
{
	const struct window *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The index past the last window starting at or before t. */
static size_t windows_upto(const struct window *w, size_t n, uint64_t t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (w[mid].lo <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A jump from elsewhere may land in the window: its probe stays where it was. */
static void keep_site(struct window *w)
{
	struct site_move *m = w->m;

	if (w->exit < 0 && m->delta) {
		m->delta = 0;
		m->cls = m->first;
		m->why_not = "a jump from elsewhere may land in the skipped bytes";
	} else if (w->exit >= 0 && m->exits[w->exit].off != m->exits[w->exit].ret) {
		struct site_exit *e = &m->exits[w->exit];

		*e = (struct site_exit){ .off = e->ret, .ret = e->ret, .cls = INSN_STEPPED,
					 .cond = -1 };
		m->exits_cls = INSN_STEPPED;
		m->exits_moved--;
	}
}

/* Second pass: every byte of the object's code read as a rel8 or rel32 branch; one that lands
 * in a window from outside that window's function keeps the probe's original site. */
static void check_other_branches(const struct code_view *v, struct window *w, size_t n)
{
	qsort(w, n, sizeof(*w), window_cmp);
	for (size_t s = 0; s < v->nseg; s++) {
		const uint8_t *b = v->seg[s].bytes;
		uint64_t base = v->seg[s].off, len = v->seg[s].len;

		for (uint64_t i = 0; i + 2 <= len; i++) {
			uint64_t t;
			uint8_t op = b[i];

			if (op == 0xeb || (op >= 0x70 && op <= 0x7f)) {
				t = base + i + 2 + (int8_t)b[i + 1];
			} else if ((op == 0xe8 || op == 0xe9) && i + 5 <= len) {
				int32_t rel;

				memcpy(&rel, b + i + 1, 4);
				t = base + i + 5 + (int64_t)rel;
			} else if (op == 0x0f && (b[i + 1] & 0xf0) == 0x80 && i + 6 <= len) {
				int32_t rel;

				memcpy(&rel, b + i + 2, 4);
				t = base + i + 6 + (int64_t)rel;
			} else {
				continue;
			}
			/* windows are short (WINDOW_MAX); two may overlap (aliases of one function) */
			for (size_t k = windows_upto(w, n, t); k-- > 0 && t - w[k].lo < WINDOW_MAX;) {
				const struct site_move *m = w[k].m;

				if (t <= w[k].hi &&
				    !(base + i >= m->func && base + i < m->func + m->size))
					keep_site(&w[k]);
			}
		}
	}
}

/* Another symbol in the skipped bytes: calls through it (from other objects too) would start
 * at the moved site. */
static bool entry_inside(const struct code_view *v, const struct site_move *m)
{
	size_t lo = 0, hi = v->nentries;

	while (lo < hi) { /* the first entry past func */
		size_t mid = (lo + hi) / 2;

		if (v->entries[mid] <= m->func)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < v->nentries && v->entries[lo] <= m->func + m->delta;
}

void site__choose(const struct code_view *v, struct site_move *m, size_t n)
{
	struct window *w = NULL;
	size_t nw = 0;
	cs_insn *insn;
	csh h;

	if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK) {
		for (size_t i = 0; i < n; i++) {
			m[i].delta = 0;
			m[i].skipped[0] = '\0';
			m[i].first = m[i].cls = INSN_STEPPED;
			m[i].why_not = "no disassembler";
			m[i].exits_why_not = "no disassembler";
		}
		return;
	}
	cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
	insn = cs_malloc(h);
	for (size_t i = 0; i < n; i++) {
		propose(h, insn, v, &m[i]);
		if (m[i].delta && entry_inside(v, &m[i])) {
			m[i].delta = 0;
			m[i].cls = m[i].first;
			m[i].why_not = "another symbol starts in the skipped bytes";
		}
		if (m[i].want_exits)
			exit_site__find(h, insn, v, &m[i]);
		nw += (m[i].delta ? 1 : 0) + m[i].exits_moved;
	}
	w = xcalloc(nw + 1, sizeof(*w));
	nw = 0;
	for (size_t i = 0; i < n; i++) {
		if (m[i].delta)
			w[nw++] = (struct window){ m[i].func + 1, m[i].func + m[i].delta, &m[i], -1 };
		for (size_t k = 0; k < m[i].nexits; k++)
			if (m[i].exits[k].off != m[i].exits[k].ret)
				w[nw++] = (struct window){ m[i].exits[k].off + 1, m[i].exits[k].ret,
							   &m[i], (long)k };
	}
	if (nw)
		check_other_branches(v, w, nw);
	free(w);
	cs_free(insn, 1);
	cs_close(&h);
}

int site__choose_in(const char *path, const struct elf_syms *syms, struct site_move *m,
		    size_t n)
{
	struct code_view v;
	uint64_t *entries, *noreturn = NULL;
	size_t nnoreturn = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	err = fd < 0 ? -errno : code_view__open(&v, fd);
	if (!err)
		noreturn__find(fd, syms, &noreturn, &nnoreturn);
	if (fd >= 0)
		close(fd);
	if (err) {
		struct code_view none = { 0 };

		site__choose(&none, m, n); /* every site stays, classified as unreadable */
		return err;
	}
	entries = xcalloc(syms->cnt + 1, sizeof(*entries));
	for (size_t i = 0; i < syms->cnt; i++)
		entries[i] = syms->syms[i].offset;
	qsort(entries, syms->cnt, sizeof(*entries), cmp_u64);
	v.entries = entries;
	v.nentries = syms->cnt;
	v.noreturn = noreturn;
	v.nnoreturn = nnoreturn;
	site__choose(&v, m, n);
	free(entries);
	free(noreturn);
	code_view__close(&v);
	return 0;
}
