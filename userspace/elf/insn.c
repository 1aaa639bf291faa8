// SPDX-License-Identifier: MIT
#include "elf/insn.h"

#include <fcntl.h>
#include <stdbool.h>
#include <unistd.h>

static bool is_legacy_prefix(uint8_t b)
{
	switch (b) {
	case 0x26: case 0x2e: case 0x36: case 0x3e: /* segment */
	case 0x64: case 0x65:
	case 0x66: case 0x67: /* operand, address size */
	case 0xf0: case 0xf2: case 0xf3: /* lock, rep */
		return true;
	}
	return false;
}

/* Length of a ModRM operand (ModRM, SIB, displacement) at code[0..len); 0 if truncated. */
static size_t modrm_len(const uint8_t *code, size_t len)
{
	uint8_t mod, rm;
	size_t n = 1;

	if (len < 1)
		return 0;
	mod = code[0] >> 6;
	rm = code[0] & 7;
	if (mod != 3 && rm == 4) {
		if (len < 2)
			return 0;
		n++;
		if (mod == 0 && (code[1] & 7) == 5)
			n += 4; /* SIB with no base: disp32 */
	}
	if (mod == 0 && rm == 5)
		n += 4; /* rip-relative */
	else if (mod == 1)
		n += 1;
	else if (mod == 2)
		n += 4;
	return n <= len ? n : 0;
}

enum insn_class insn__classify(const uint8_t *code, size_t len)
{
	bool opsize = false, rep = false, bad_prefix = false;
	uint8_t rex = 0, op;
	size_t i = 0, nprefix, n;

	while (i < len && i < 14 && is_legacy_prefix(code[i])) {
		switch (code[i]) {
		case 0x66:
			opsize = true;
			break;
		case 0xf3:
			rep = true;
			break;
		case 0x26: case 0x2e: case 0x36: case 0x3e: case 0xf0:
			/* uprobes refuse these (is_prefix_bad): nothing cheap about them */
			bad_prefix = true;
			break;
		}
		i++;
	}
	nprefix = i;
	if (i < len && (code[i] & 0xf0) == 0x40)
		rex = code[i++];
	if (i >= len || bad_prefix)
		return INSN_STEPPED;
	op = code[i];

	/* push_setup_xol_ops: one byte, or REX.B (exactly 41) and one byte; nothing else. */
	if (op >= 0x50 && op <= 0x57 && !nprefix && (!rex || rex == 0x41))
		return INSN_EMULATED;

	/* nop: 90 with no REX.B (41 90 is xchg %eax,%r8d) and no f3 (pause) */
	if (op == 0x90 && !(rex & 1) && !rep)
		return i + 1 == 5 ? INSN_OPTIMIZED : INSN_EMULATED;

	/* branch_setup_xol_ops: 66-prefixed branches are refused, other prefixes are fine */
	if (op == 0xe8 || op == 0xe9 || op == 0xeb || (op >= 0x70 && op <= 0x7f))
		return opsize ? INSN_STEPPED : INSN_EMULATED;

	if (op != 0x0f || i + 1 >= len)
		return INSN_STEPPED;
	op = code[++i];
	if (op >= 0x80 && op <= 0x8f)
		return opsize ? INSN_STEPPED : INSN_EMULATED;
	/* nopl: 0f 1f /0 */
	if (op == 0x1f && i + 1 < len && ((code[i + 1] >> 3) & 7) == 0) {
		n = modrm_len(code + i + 1, len - i - 1);
		if (!n)
			return INSN_STEPPED;
		return i + 1 + n == 5 ? INSN_OPTIMIZED : INSN_EMULATED;
	}
	return INSN_STEPPED;
}

const char *insn_class__name(enum insn_class c)
{
	switch (c) {
	case INSN_EMULATED:
		return "emulated";
	case INSN_OPTIMIZED:
		return "optimized";
	case INSN_STEPPED:
		return "single-stepped";
	default:
		return "?";
	}
}

/* The class of the site at a file offset of an ELF file (INSN_STEPPED if it cannot be read). */
enum insn_class insn__classify_site(const char *path, uint64_t offset)
{
	uint8_t code[16];
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return INSN_STEPPED;
	n = pread(fd, code, sizeof(code), offset);
	close(fd);
	return n > 0 ? insn__classify(code, n) : INSN_STEPPED;
}
