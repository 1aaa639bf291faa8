// SPDX-License-Identifier: MIT
/* Fuzzes the USDT readers: the input as an ELF file (memfd) for usdt__read_fd, and as an operand
 * list for usdt_args__parse. Checks what usdt.h promises: probe sites and semaphores inside the
 * file, names present, operands of a valid size and kind, register offsets inside pt_regs. */
#include "elf/usdt.h"
#include "fuzz.h"

#include <asm/ptrace.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int memfd = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	memfd = memfd_create("fuzz-usdt", MFD_CLOEXEC);
	if (memfd < 0) {
		perror("memfd_create");
		exit(1);
	}
	return 0;
}

static void check_args(const struct usdt_arg *args, int n)
{
	for (int i = 0; i < n; i++) {
		const struct usdt_arg *a = &args[i];

		fuzz_check(a->size == 1 || a->size == 2 || a->size == 4 || a->size == 8,
			   "operand %d of size %d", i, a->size);
		fuzz_check(a->kind <= USDT_ARG_MEM, "operand %d of kind %d", i, a->kind);
		fuzz_check(a->kind == USDT_ARG_CONST ||
				   a->reg_off + 8 <= sizeof(struct pt_regs),
			   "operand %d: register offset %u outside pt_regs", i, a->reg_off);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct usdt_arg args[USDT_MAX_ARGS];
	struct usdt_probes p;
	char text[512];
	int n, err;

	if (size < sizeof(text)) {
		memcpy(text, data, size);
		text[size] = 0;
		n = usdt_args__parse(text, args, USDT_MAX_ARGS);
		fuzz_check(n == -EINVAL || (n >= 0 && n <= USDT_MAX_ARGS), "%d operands", n);
		if (n > 0)
			check_args(args, n);
	}
	if (ftruncate(memfd, 0) || pwrite(memfd, data, size, 0) != (ssize_t)size)
		fuzz_fail("cannot fill the memfd: %s", strerror(errno));
	err = usdt__read_fd(memfd, &p);
	if (err) {
		fuzz_check(err == -ENOEXEC, "error %d", err);
		return 0;
	}
	for (size_t i = 0; i < p.cnt; i++) {
		const struct usdt_probe *u = &p.v[i];

		fuzz_check(u->provider && u->name && u->args_text, "probe %zu without names", i);
		fuzz_check(u->offset < size, "probe %s at offset %#llx beyond the file", u->name,
			   (unsigned long long)u->offset);
		fuzz_check(u->nargs >= 0 && u->nargs <= USDT_MAX_ARGS, "%d operands", u->nargs);
		if (u->args_ok)
			check_args(u->args, u->nargs);
	}
	usdt_probes__free(&p);
	return 0;
}
