// SPDX-License-Identifier: MIT
/* Fuzzes the ELF symbol reader, elf_syms__open_fd, with hostile files: the input's bytes are
 * handed over as a file descriptor (a memfd, so no disk I/O). Checks what elf_syms.h promises of
 * a file it accepts: symbols sorted by name then address, each (name, address) once, names
 * without a version suffix, each offset inside the file, and elf_syms__find finding each name. */
#include "elf/elf_syms.h"
#include "fuzz.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int memfd = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	memfd = memfd_create("fuzz-elf", MFD_CLOEXEC);
	if (memfd < 0) {
		perror("memfd_create");
		exit(1);
	}
	return 0;
}

static void check_syms(const struct elf_syms *s, size_t size)
{
	for (size_t i = 0; i < s->cnt; i++) {
		const struct elf_sym *e = &s->syms[i];
		const struct elf_sym *f;

		fuzz_check(e->name && e->name[0], "symbol %zu without a name", i);
		fuzz_check(!strchr(e->name, '@'), "version suffix kept: %s", e->name);
		fuzz_check(e->addr, "symbol %s at address 0", e->name);
		fuzz_check(e->offset < size, "symbol %s at offset %#llx beyond the file (%zu bytes)",
			   e->name, (unsigned long long)e->offset, size);
		if (i) {
			const struct elf_sym *p = &s->syms[i - 1];
			int c = strcmp(p->name, e->name);

			fuzz_check(c < 0 || (c == 0 && p->addr < e->addr),
				   "not sorted or not unique: %s@%#llx then %s@%#llx", p->name,
				   (unsigned long long)p->addr, e->name,
				   (unsigned long long)e->addr);
		}
		f = elf_syms__find(s, e->name);
		fuzz_check(f && !strcmp(f->name, e->name) && f <= e,
			   "elf_syms__find(%s) did not find the first entry", e->name);
	}
	fuzz_check(!elf_syms__find(s, ""), "found a symbol with an empty name");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_syms *syms = NULL;
	int err;

	if (ftruncate(memfd, 0) || pwrite(memfd, data, size, 0) != (ssize_t)size)
		fuzz_fail("cannot fill the memfd: %s", strerror(errno));
	err = elf_syms__open_fd(memfd, &syms);
	if (err) {
		fuzz_check(err < 0 && !syms, "error %d with a result", err);
		fuzz_check(err != -ENOMEM, "ENOMEM from %zu bytes", size);
		return 0;
	}
	fuzz_check(syms && (syms->cnt == 0 || syms->syms), "success without symbols");
	check_syms(syms, size);
	elf_syms__free(syms);
	return 0;
}
