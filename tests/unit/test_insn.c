// SPDX-License-Identifier: MIT
/* The first-instruction classifier against the forms arch/x86/kernel/uprobes.c treats each way. */
#include "elf/insn.h"
#include "unit.h"

#include <stdint.h>

struct insn_case {
	const char *what;
	uint8_t code[16];
	size_t len;
	enum insn_class want;
};

static int check_cases(const struct insn_case *c, size_t n)
{
	int bad = 0;

	for (size_t i = 0; i < n; i++) {
		enum insn_class got = insn__classify(c[i].code, c[i].len);

		if (got != c[i].want) {
			fprintf(stderr, "  %s: got %s, want %s\n", c[i].what, insn_class__name(got),
				insn_class__name(c[i].want));
			bad++;
		}
	}
	return bad;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_push(void)
{
	static const struct insn_case c[] = {
		{ "push %rbp", { 0x55 }, 1, INSN_EMULATED },
		{ "push %rax", { 0x50 }, 1, INSN_EMULATED },
		{ "push %r15", { 0x41, 0x57 }, 2, INSN_EMULATED },
		{ "push %r12", { 0x41, 0x54 }, 2, INSN_EMULATED },
		/* only REX 41 is emulated; pushw has an operand-size prefix */
		{ "rex push %rbp", { 0x40, 0x55 }, 2, INSN_STEPPED },
		{ "rex.w push %r15", { 0x49, 0x57 }, 2, INSN_STEPPED },
		{ "pushw %bp", { 0x66, 0x55 }, 2, INSN_STEPPED },
		{ "pop %rbp", { 0x5d }, 1, INSN_STEPPED },
	};

	CHECK(check_cases(c, N(c)) == 0);
}

static void test_nops(void)
{
	static const struct insn_case c[] = {
		{ "nop", { 0x90 }, 1, INSN_EMULATED },
		{ "xchg %ax,%ax", { 0x66, 0x90 }, 2, INSN_EMULATED },
		{ "nopl (%rax)", { 0x0f, 0x1f, 0x00 }, 3, INSN_EMULATED },
		{ "nopl 0(%rax)", { 0x0f, 0x1f, 0x40, 0x00 }, 4, INSN_EMULATED },
		{ "nopl 0(%rax,%rax,1)", { 0x0f, 0x1f, 0x44, 0x00, 0x00 }, 5, INSN_OPTIMIZED },
		{ "5-byte 0x90", { 0x66, 0x66, 0x66, 0x66, 0x90 }, 5, INSN_OPTIMIZED },
		{ "nopw 0(%rax,%rax,1)", { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 }, 6, INSN_EMULATED },
		{ "nopl 0L(%rax)", { 0x0f, 0x1f, 0x80, 0, 0, 0, 0 }, 7, INSN_EMULATED },
		{ "nopl 0L(,%rax,1)", { 0x0f, 0x1f, 0x04, 0x25, 0, 0, 0, 0 }, 8, INSN_EMULATED },
		{ "nopl 0(%rip)", { 0x0f, 0x1f, 0x05, 0, 0, 0, 0 }, 7, INSN_EMULATED },
		/* a 5-byte nop followed by more code: only the first instruction counts */
		{ "nop5 then ret", { 0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3 }, 6, INSN_OPTIMIZED },
		{ "xchg %eax,%r8d", { 0x41, 0x90 }, 2, INSN_STEPPED },
		{ "pause", { 0xf3, 0x90 }, 2, INSN_STEPPED },
		{ "endbr64", { 0xf3, 0x0f, 0x1e, 0xfa }, 4, INSN_STEPPED },
		{ "0f 1f /1 is no nopl", { 0x0f, 0x1f, 0x48, 0x00 }, 4, INSN_STEPPED },
	};

	CHECK(check_cases(c, N(c)) == 0);
}

static void test_branches(void)
{
	static const struct insn_case c[] = {
		{ "call rel32", { 0xe8, 1, 2, 3, 4 }, 5, INSN_EMULATED },
		{ "jmp rel32", { 0xe9, 1, 2, 3, 4 }, 5, INSN_EMULATED },
		{ "jmp rel8", { 0xeb, 0x10 }, 2, INSN_EMULATED },
		{ "je rel8", { 0x74, 0x10 }, 2, INSN_EMULATED },
		{ "jg rel8", { 0x7f, 0x10 }, 2, INSN_EMULATED },
		{ "jne rel32", { 0x0f, 0x85, 1, 2, 3, 4 }, 6, INSN_EMULATED },
		{ "bnd jmp", { 0xf2, 0xe9, 1, 2, 3, 4 }, 6, INSN_EMULATED },
		/* refused or not relative */
		{ "callw", { 0x66, 0xe8, 1, 2 }, 4, INSN_STEPPED },
		{ "notrack jmp", { 0x3e, 0xe9, 1, 2, 3, 4 }, 6, INSN_STEPPED },
		{ "jmp *%rax", { 0xff, 0xe0 }, 2, INSN_STEPPED },
		{ "ret", { 0xc3 }, 1, INSN_STEPPED },
	};

	CHECK(check_cases(c, N(c)) == 0);
}

static void test_stepped(void)
{
	static const struct insn_case c[] = {
		{ "sub $8,%rsp", { 0x48, 0x83, 0xec, 0x08 }, 4, INSN_STEPPED },
		{ "mov %rsp,%rbp", { 0x48, 0x89, 0xe5 }, 3, INSN_STEPPED },
		{ "lea 1(%rdi),%eax", { 0x8d, 0x47, 0x01 }, 3, INSN_STEPPED },
		{ "test %edi,%edi", { 0x85, 0xff }, 2, INSN_STEPPED },
		{ "xor %eax,%eax", { 0x31, 0xc0 }, 2, INSN_STEPPED },
		{ "lock add", { 0xf0, 0x01, 0x07 }, 3, INSN_STEPPED },
	};

	CHECK(check_cases(c, N(c)) == 0);
}

/* Nothing is read past len; what cannot be decoded is the expensive class. */
static void test_truncated(void)
{
	static const struct insn_case c[] = {
		{ "empty", { 0x55 }, 0, INSN_STEPPED },
		{ "prefix only", { 0x66 }, 1, INSN_STEPPED },
		{ "rex only", { 0x41 }, 1, INSN_STEPPED },
		{ "0f only", { 0x0f }, 1, INSN_STEPPED },
		{ "nopl without modrm", { 0x0f, 0x1f }, 2, INSN_STEPPED },
		{ "nopl cut in its SIB", { 0x0f, 0x1f, 0x44 }, 3, INSN_STEPPED },
		{ "nopl cut in its disp", { 0x0f, 0x1f, 0x44, 0x00 }, 4, INSN_STEPPED },
		{ "15 prefixes", { 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
				   0x66, 0x66, 0x66, 0x66, 0x66, 0x90 }, 16, INSN_STEPPED },
	};

	CHECK(check_cases(c, N(c)) == 0);
}

static void test_names(void)
{
	CHECK_STR(insn_class__name(INSN_EMULATED), "emulated");
	CHECK_STR(insn_class__name(INSN_OPTIMIZED), "optimized");
	CHECK_STR(insn_class__name(INSN_STEPPED), "single-stepped");
}

int main(void)
{
	RUN(test_push);
	RUN(test_nops);
	RUN(test_branches);
	RUN(test_stepped);
	RUN(test_truncated);
	RUN(test_names);
	UNIT_EXIT();
}
