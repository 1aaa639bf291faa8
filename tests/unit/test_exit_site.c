// SPDX-License-Identifier: MIT
/* Exits moved back from single-stepped `ret`s (elf/site.h: struct site_exit) on hand-assembled
 * functions: the shapes that move, with the stack pointer the exit program finds from the
 * site's registers, and each rule that keeps the exit at its `ret`. */
#include "elf/noreturn.h"
#include "elf/site.h"
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BASE 0x1000 /* the file offset the code is at */

/* One function at BASE, size bytes of the buffer; returns the move (the caller frees exits). */
static struct site_move exits_of(const uint8_t *code, size_t len, size_t size, bool keep_ret,
				 const uint64_t *noreturn, size_t nnoreturn)
{
	struct code_view v;
	struct site_move m = { .func = BASE, .size = size, .want_exits = true,
			       .keep_ret = keep_ret };

	code_view__init_mem(&v, code, len, BASE);
	v.noreturn = noreturn;
	v.nnoreturn = nnoreturn;
	site__choose(&v, &m, 1);
	return m;
}

#define EXITS(code, keep_ret) exits_of(code, sizeof(code), sizeof(code), keep_ret, NULL, 0)

/* push %rbx; sub $0x40,%rsp; mov 0x38(%rsp),%rax; sub %fs:0x28,%rax; jne 1b; add $0x40,%rsp;
 * pop %rbx; ret; 1b: call __stack_chk_fail (20, past the function: a PLT stub) */
static const uint8_t protector[] = {
	0x53, 0x48, 0x83, 0xec, 0x40, 0x48, 0x8b, 0x44, 0x24, 0x38, 0x64, 0x48, 0x2b,
	0x04, 0x25, 0x28, 0x00, 0x00, 0x00, 0x75, 0x06, 0x48, 0x83, 0xc4, 0x40, 0x5b,
	0xc3, 0xe8, 0x00, 0x00, 0x00, 0x00, 0xc3,
};

static void test_stack_protector(void)
{
	const uint64_t fail = BASE + 0x20;
	struct site_move m = exits_of(protector, sizeof(protector), 0x20, false, &fail, 1);

	CHECK(m.nexits == 1 && m.exits_moved == 1);
	if (m.nexits == 1) {
		CHECK(m.exits[0].ret == BASE + 0x1a && m.exits[0].off == BASE + 0x13);
		CHECK(m.exits[0].cls == INSN_EMULATED && m.exits_cls == INSN_EMULATED);
		CHECK(m.exits[0].cond == 5); /* jne: ends the call when not taken */
		CHECK(!m.exits[0].from_rbp && m.exits[0].sp_delta == 0x48); /* add, pop */
	}
	free(m.exits);
}

static void test_call_that_may_return(void)
{
	/* the same, the call not known never to return: its way falls off the end */
	struct site_move m = exits_of(protector, sizeof(protector), 0x20, false, NULL, 0);

	CHECK(m.nexits == 1 && m.exits_moved == 0);
	if (m.nexits == 1)
		CHECK(m.exits[0].off == m.exits[0].ret && m.exits[0].cls == INSN_STEPPED);
	free(m.exits);
}

static void test_jump_from_elsewhere(void)
{
	/* the function, its stub, then other code: jmp to its pop (BASE + 0x19) */
	uint8_t code[sizeof(protector) + 5];
	const uint64_t fail = BASE + 0x20;
	int32_t rel = 0x19 - (int32_t)(sizeof(protector) + 5);
	struct site_move m;

	memcpy(code, protector, sizeof(protector));
	code[sizeof(protector)] = 0xe9;
	memcpy(code + sizeof(protector) + 1, &rel, 4);
	m = exits_of(code, sizeof(code), 0x20, false, &fail, 1);
	CHECK(m.nexits == 1 && m.exits_moved == 0);
	if (m.nexits == 1)
		CHECK(m.exits[0].off == BASE + 0x1a && m.exits_cls == INSN_STEPPED);
	free(m.exits);
}

static void test_loop_back(void)
{
	/* push %rbx; mov %rdi,%rbx; 4: dec %rbx; test; jne 4; pop %rbx; ret: the jcc runs once an
	 * iteration, not once a call */
	static const uint8_t f[] = { 0x53, 0x48, 0x89, 0xfb, 0x48, 0xff, 0xcb, 0x48,
				     0x85, 0xdb, 0x75, 0xf8, 0x5b, 0xc3 };
	struct site_move m = EXITS(f, false);

	CHECK(m.nexits == 1 && m.exits_moved == 0);
	free(m.exits);
}

static void test_from_frame_pointer(void)
{
	/* push %rbp; mov %rsp,%rbp; push %rbx; sub $0x18,%rsp; test; js 23; lea -8(%rbp),%rsp;
	 * pop %rbx; pop %rbp; ret; 23: ud2 */
	static const uint8_t f[] = { 0x55, 0x48, 0x89, 0xe5, 0x53, 0x48, 0x83, 0xec, 0x18,
				     0x48, 0x85, 0xff, 0x78, 0x07, 0x48, 0x8d, 0x65, 0xf8,
				     0x5b, 0x5d, 0xc3, 0x0f, 0x0b };
	/* push %rbp; mov %rsp,%rbp; sub $0x10,%rsp; test; js 0f; leave; ret; 0f: ud2 */
	static const uint8_t g[] = { 0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10, 0x48,
				     0x85, 0xff, 0x78, 0x02, 0xc9, 0xc3, 0x0f, 0x0b };
	/* push %rbp; mov %rsp,%rbp; test; js 0e; mov %rbp,%rsp; pop %rbp; ret; 0e: ud2 */
	static const uint8_t k[] = { 0x55, 0x48, 0x89, 0xe5, 0x48, 0x85, 0xff, 0x78,
				     0x05, 0x48, 0x89, 0xec, 0x5d, 0xc3, 0x0f, 0x0b };
	struct site_move m = EXITS(f, false), n = EXITS(g, false), o = EXITS(k, false);

	CHECK(m.nexits == 1 && m.exits_moved == 1);
	if (m.exits_moved) {
		CHECK(m.exits[0].off == BASE + 0xc && m.exits[0].cond == 8); /* js */
		CHECK(m.exits[0].from_rbp && m.exits[0].sp_delta == 8);	     /* -8, pop, pop */
	}
	CHECK(n.nexits == 1 && n.exits_moved == 1);
	if (n.exits_moved)
		CHECK(n.exits[0].from_rbp && n.exits[0].sp_delta == 8 && n.exits[0].off == BASE + 0xb);
	CHECK(o.nexits == 1 && o.exits_moved == 1);
	if (o.exits_moved)
		CHECK(o.exits[0].from_rbp && o.exits[0].sp_delta == 8 && o.exits[0].off == BASE + 7);
	free(m.exits);
	free(n.exits);
	free(o.exits);
}

static void test_own_branch_lands_after_the_site(void)
{
	/* push %rbx; test; je 34; mov %rdi,%rax; cmp $3,%rax; jne 36; 34: pop %rbx; ret; ud2 */
	static const uint8_t f[] = { 0x53, 0x48, 0x85, 0xff, 0x74, 0x09, 0x48, 0x89, 0xf8, 0x48,
				     0x83, 0xf8, 0x03, 0x75, 0x02, 0x5b, 0xc3, 0x0f, 0x0b };
	struct site_move m = EXITS(f, false);

	CHECK(m.nexits == 1 && m.exits_moved == 0);
	free(m.exits);
}

static void test_return_value_written_after(void)
{
	/* push %rbx; test; js 42; mov %ebx,%eax; pop %rbx; ret; ud2: rax is set after the js */
	static const uint8_t f[] = { 0x53, 0x48, 0x85, 0xff, 0x78, 0x04, 0x89,
				     0xd8, 0x5b, 0xc3, 0x0f, 0x0b };
	struct site_move kept = EXITS(f, true), moved = EXITS(f, false);

	CHECK(kept.nexits == 1 && kept.exits_moved == 0);
	CHECK(moved.nexits == 1 && moved.exits_moved == 1);
	if (moved.exits_moved)
		CHECK(moved.exits[0].sp_delta == 8 && moved.exits[0].off == BASE + 4);
	free(kept.exits);
	free(moved.exits);
}

static void test_jump_table(void)
{
	/* push %rbx; test; js 5d; pop %rbx; ret; 5d: jmp *%rax */
	static const uint8_t f[] = { 0x53, 0x48, 0x85, 0xff, 0x78, 0x02, 0x5b, 0xc3, 0xff, 0xe0 };
	struct site_move m = EXITS(f, false);

	CHECK(m.nexits == 1 && m.exits_moved == 0);
	free(m.exits);
}

/* push %rbx; cmp $2,%edi; ja 2b; lea 34(%rip),%rdx; mov %edi,%eax; movslq (%rdx,%rax,4),%rax;
 * add %rdx,%rax; jmp *%rax; 18: mov $1,%ebx; jmp 2b; 1f: mov $2,%ebx; jmp 2b; 26: mov $3,%ebx;
 * 2b: test %rbx,%rbx; js 32; pop %rbx; ret; 32: ud2; 34: the table (18, 1f, 26, then a word
 * that points nowhere), past the function's 0x34 bytes */
static const uint8_t switched[] = {
	0x53, 0x83, 0xff, 0x02, 0x77, 0x25, 0x48, 0x8d, 0x15, 0x27, 0x00, 0x00, 0x00, 0x89,
	0xf8, 0x48, 0x63, 0x04, 0x82, 0x48, 0x01, 0xd0, 0xff, 0xe0, 0xbb, 0x01, 0x00, 0x00,
	0x00, 0xeb, 0x0c, 0xbb, 0x02, 0x00, 0x00, 0x00, 0xeb, 0x05, 0xbb, 0x03, 0x00, 0x00,
	0x00, 0x48, 0x85, 0xdb, 0x78, 0x02, 0x5b, 0xc3, 0x0f, 0x0b, 0xe4, 0xff, 0xff, 0xff,
	0xeb, 0xff, 0xff, 0xff, 0xf2, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x40,
};

static void test_jump_table_read(void)
{
	/* the table's cases land before the js: the exit moves */
	struct site_move m = exits_of(switched, sizeof(switched), 0x34, false, NULL, 0);
	uint8_t onto_pop[sizeof(switched)];
	struct site_move n;

	CHECK(m.nexits == 1 && m.exits_moved == 1);
	if (m.exits_moved)
		CHECK(m.exits[0].off == BASE + 0x2e && m.exits[0].sp_delta == 8);
	/* its third case lands on the pop after the js (0x30 - 0x34): the exit stays */
	memcpy(onto_pop, switched, sizeof(switched));
	memcpy(onto_pop + 0x3c, "\xfc\xff\xff\xff", 4);
	n = exits_of(onto_pop, sizeof(onto_pop), 0x34, false, NULL, 0);
	CHECK(n.nexits == 1 && n.exits_moved == 0);
	free(m.exits);
	free(n.exits);
}

static void test_not_onto_the_entry(void)
{
	/* push %rbx; pop %rbx; ret: the only emulated instruction is the entry's own site */
	static const uint8_t f[] = { 0x53, 0x5b, 0xc3 };
	struct site_move m = EXITS(f, false);

	CHECK(m.nexits == 1 && m.exits_moved == 0 && m.exits[0].off == BASE + 2);
	free(m.exits);
}

static void test_noreturn_names(void)
{
	CHECK(noreturn__name("__stack_chk_fail") && noreturn__name("abort"));
	CHECK(noreturn__name("_ZSt20__throw_length_errorPKc") && noreturn__name("__cxa_throw"));
	CHECK(!noreturn__name("malloc") && !noreturn__name("_ZSt4endlIcSt11char_traitsIcEE"));
	CHECK(!noreturn__name("_ZSt__throw_") && !noreturn__name("__stack_chk_fail2"));
}

int main(void)
{
	RUN(test_stack_protector);
	RUN(test_call_that_may_return);
	RUN(test_jump_from_elsewhere);
	RUN(test_loop_back);
	RUN(test_from_frame_pointer);
	RUN(test_own_branch_lands_after_the_site);
	RUN(test_return_value_written_after);
	RUN(test_jump_table);
	RUN(test_jump_table_read);
	RUN(test_not_onto_the_entry);
	RUN(test_noreturn_names);
	UNIT_EXIT();
}
