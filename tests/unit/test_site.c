// SPDX-License-Identifier: MIT
/* Moved probe sites (elf/site.h) on hand-assembled functions: each rule that keeps the site
 * where it is, and the moves that are safe. */
#include "elf/site.h"
#include "unit.h"

#include <stdint.h>
#include <string.h>

#define BASE 0x1000 /* the file offset the code is at */

/* One function at BASE, the whole buffer; returns the move. */
static struct site_move choose(const uint8_t *code, size_t len, size_t size, bool keep_args,
			       const uint64_t *entries, size_t nentries)
{
	struct code_view v;
	struct site_move m = { .func = BASE, .size = size, .keep_args = keep_args };

	code_view__init_mem(&v, code, len, BASE);
	v.entries = entries;
	v.nentries = nentries;
	site__choose(&v, &m, 1);
	return m;
}

#define MOVE(code, ...) choose(code, sizeof(code), sizeof(code), __VA_ARGS__)

static void test_past_endbr64(void)
{
	/* endbr64; push %rbp; mov %rsp,%rbp; lea 1(%rdi),%eax; pop %rbp; ret */
	static const uint8_t f[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5,
				     0x8d, 0x47, 0x01, 0x5d, 0xc3 };
	struct site_move m = MOVE(f, false, NULL, 0);

	CHECK(m.first == INSN_STEPPED);
	CHECK(m.delta == 4 && m.cls == INSN_EMULATED);
	CHECK_STR(m.skipped, "endbr64");
	CHECK(m.why_not == NULL);
}

static void test_past_test_onto_jcc(void)
{
	/* test %edi,%edi; je 10; push %rbx; lea 2(%rdi),%eax; pop %rbx; ret; 10: xor; ret —
	 * the early return passes the jcc too */
	static const uint8_t f[] = { 0x85, 0xff, 0x74, 0x06, 0x53, 0x8d, 0x47,
				     0x02, 0x5b, 0xc3, 0x31, 0xc0, 0xc3 };
	struct site_move m = MOVE(f, false, NULL, 0);

	CHECK(m.delta == 2 && m.cls == INSN_EMULATED);
	CHECK_STR(m.skipped, "test");
}

static void test_already_cheap(void)
{
	static const uint8_t f[] = { 0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3 };
	struct site_move m = MOVE(f, false, NULL, 0);

	CHECK(m.first == INSN_EMULATED && m.delta == 0 && m.why_not == NULL);
}

static void test_rsp_changes(void)
{
	/* endbr64; sub $8,%rsp; ...: the return probe would read the wrong slot */
	static const uint8_t f[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x83, 0xec, 0x08,
				     0x53, 0x5b, 0x48, 0x83, 0xc4, 0x08, 0xc3 };
	struct site_move m = MOVE(f, false, NULL, 0);

	CHECK(m.delta == 0 && m.cls == INSN_STEPPED);
	CHECK_STR(m.why_not, "rsp changes first");
}

static void test_store_over_return_address(void)
{
	/* mov %rdi,(%rsp); push %rbx: a store into the return address's slot */
	static const uint8_t over[] = { 0x48, 0x89, 0x3c, 0x24, 0x53, 0x5b, 0xc3 };
	/* mov %rdi,-8(%rsp) (the red zone) is fine */
	static const uint8_t below[] = { 0x48, 0x89, 0x7c, 0x24, 0xf8, 0x53, 0x5b, 0xc3 };
	struct site_move m = MOVE(over, false, NULL, 0);

	CHECK(m.delta == 0);
	CHECK_STR(m.why_not, "a store to the return address's slot comes first");
	m = MOVE(below, false, NULL, 0);
	CHECK(m.delta == 5);
}

static void test_loop_back_to_the_site(void)
{
	/* endbr64; 4: push %rbx; pop %rbx; dec %edi; jg 4; ret: the loop would hit a moved
	 * site once per iteration */
	static const uint8_t f[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x53, 0x5b,
				     0xff, 0xcf, 0x7f, 0xfa, 0xc3 };
	struct site_move m = MOVE(f, false, NULL, 0);

	CHECK(m.delta == 0);
	CHECK_STR(m.why_not, "a branch in it lands in the skipped bytes");
}

static void test_argument_registers(void)
{
	/* endbr64; mov $7,%edi; push %rbx; lea 1(%rdi),%eax; pop %rbx; ret */
	static const uint8_t f[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0xbf, 0x07, 0x00, 0x00,
				     0x00, 0x53, 0x8d, 0x47, 0x01, 0x5b, 0xc3 };
	struct site_move m = MOVE(f, false, NULL, 0);

	CHECK(m.delta == 9);
	CHECK_STR(m.skipped, "endbr64; mov");
	m = MOVE(f, true, NULL, 0); /* the probe reads arguments: %edi is no longer one */
	CHECK(m.delta == 0);
	CHECK_STR(m.why_not, "an argument register it reads changes first");
}

static void test_branches_first(void)
{
	/* mov $0x27,%eax; syscall; ret */
	static const uint8_t sys[] = { 0xb8, 0x27, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xc3 };
	/* xor %eax,%eax; ret */
	static const uint8_t leaf[] = { 0x31, 0xc0, 0xc3 };
	struct site_move m = MOVE(sys, false, NULL, 0);

	CHECK(m.delta == 0);
	CHECK_STR(m.why_not, "a branch comes first");
	m = MOVE(leaf, false, NULL, 0);
	CHECK(m.delta == 0);
	CHECK_STR(m.why_not, "a branch comes first");
}

static void test_jump_tables(void)
{
	/* endbr64; push %rbx; pop %rbx; jmp *%rax: a table's targets are unknown */
	static const uint8_t table[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x53, 0x5b, 0xff, 0xe0 };
	/* ...; jmp *0x10(%rip): a tail call through the GOT */
	static const uint8_t got[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x53, 0x5b,
				       0xff, 0x25, 0x10, 0x00, 0x00, 0x00 };
	struct site_move m = MOVE(table, false, NULL, 0);

	CHECK(m.delta == 0);
	CHECK_STR(m.why_not, "it jumps through a table");
	m = MOVE(got, false, NULL, 0);
	CHECK(m.delta == 4);
}

static void test_jumps_from_elsewhere(void)
{
	/* the function (8 bytes), padding, then another function that jumps to its +4 */
	uint8_t code[32] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x53, 0x5b, 0xc3, 0x90 };
	struct site_move m;
	int32_t rel = 4 - 21;

	memset(code + 8, 0x90, sizeof(code) - 8);
	code[16] = 0xe9; /* jmp rel32 at 16, ending at 21 */
	memcpy(code + 17, &rel, 4);
	m = choose(code, sizeof(code), 8, false, NULL, 0);
	CHECK(m.delta == 0);
	CHECK_STR(m.why_not, "a jump from elsewhere may land in the skipped bytes");
	code[16] = 0xeb; /* jmp rel8 at 16, ending at 18 */
	code[17] = (uint8_t)(4 - 18);
	memset(code + 18, 0x90, 4);
	m = choose(code, sizeof(code), 8, false, NULL, 0);
	CHECK(m.delta == 0);
	code[17] = (uint8_t)(0 - 18); /* to the function's start: fine */
	m = choose(code, sizeof(code), 8, false, NULL, 0);
	CHECK(m.delta == 4);
}

static void test_other_entry_points(void)
{
	static const uint8_t f[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x53, 0x5b, 0xc3 };
	static const uint64_t at_site[] = { BASE, BASE + 4 }, after[] = { BASE, BASE + 5 };
	struct site_move m = MOVE(f, false, at_site, 2);

	CHECK(m.delta == 0);
	CHECK_STR(m.why_not, "another symbol starts in the skipped bytes");
	m = MOVE(f, false, after, 2);
	CHECK(m.delta == 4);
}

static void test_unknown_size_or_too_long(void)
{
	static const uint8_t f[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x53, 0x5b, 0xc3 };
	/* nine movs, then push: more than SITE_MAX_SKIP */
	uint8_t many[9 * 3 + 2];
	struct site_move m = choose(f, sizeof(f), 0, false, NULL, 0);

	CHECK(m.delta == 0);
	CHECK_STR(m.why_not, "its size is unknown");
	for (int i = 0; i < 9; i++) {
		many[3 * i] = 0x48; /* mov %rsi,%rax */
		many[3 * i + 1] = 0x89;
		many[3 * i + 2] = 0xf0;
	}
	many[27] = 0x53;
	many[28] = 0xc3;
	m = MOVE(many, false, NULL, 0);
	CHECK(m.delta == 0 && m.why_not && strstr(m.why_not, "more than"));
}

int main(void)
{
	RUN(test_past_endbr64);
	RUN(test_past_test_onto_jcc);
	RUN(test_already_cheap);
	RUN(test_rsp_changes);
	RUN(test_store_over_return_address);
	RUN(test_loop_back_to_the_site);
	RUN(test_argument_registers);
	RUN(test_branches_first);
	RUN(test_jump_tables);
	RUN(test_jumps_from_elsewhere);
	RUN(test_other_entry_points);
	RUN(test_unknown_size_or_too_long);
	UNIT_EXIT();
}
