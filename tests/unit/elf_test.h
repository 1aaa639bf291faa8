/* SPDX-License-Identifier: MIT */
/* What the ELF symbol tests share: the fixtures folder, reading a file, a file in memory, and
 * the invariants of a symbol table. */
#ifndef TRACER_TEST_ELF_H
#define TRACER_TEST_ELF_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf/elf_syms.h"
#include "unit.h"

#define LIBC_PATH "/usr/lib/x86_64-linux-gnu/libc.so.6"

static const char *fixdir; /* the fixtures folder, from argv[1] */

/* movabs $0x1122334455667788, %rax; ret (tests/unit/fixtures/magic.h) */
static const unsigned char magic_bytes[] = { 0x48, 0xb8, 0x88, 0x77, 0x66, 0x55,
					     0x44, 0x33, 0x22, 0x11, 0xc3 };

struct blob {
	unsigned char *p;
	size_t len;
};

static inline const char *fix(const char *name)
{
	static char buf[4][4096];
	static int i;
	char *p = buf[i++ % 4];

	snprintf(p, sizeof(buf[0]), "%s/%s", fixdir, name);
	return p;
}

static inline int slurp(const char *path, struct blob *b)
{
	struct stat st;
	ssize_t n;
	int fd;

	b->p = NULL;
	b->len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !(b->p = malloc(st.st_size + 1))) {
		close(fd);
		return -EIO;
	}
	n = pread(fd, b->p, st.st_size, 0);
	close(fd);
	if (n != st.st_size) {
		free(b->p);
		b->p = NULL;
		return -EIO;
	}
	b->len = n;
	return 0;
}

static inline int memfd_with(const void *p, size_t len)
{
	int fd = memfd_create("elf_syms_test", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	if (len && pwrite(fd, p, len, 0) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Sorted by (name, addr), one entry per pair, names without a version suffix. */
static inline bool syms_valid(const struct elf_syms *s)
{
	size_t i;

	if (s->cnt && !s->syms)
		return false;
	for (i = 0; i < s->cnt; i++) {
		const struct elf_sym *e = &s->syms[i];

		if (!e->name || !e->name[0] || strchr(e->name, '@'))
			return false;
		if (i) {
			const struct elf_sym *p = &s->syms[i - 1];
			int r = strcmp(p->name, e->name);

			if (r > 0 || (!r && p->addr >= e->addr))
				return false;
		}
	}
	return true;
}


/* Entries named name: how many, and the first (which elf_syms__find must return). */
static inline size_t count_name(const struct elf_syms *s, const char *name, const struct elf_sym **first)
{
	const struct elf_sym *e = elf_syms__find(s, name);
	size_t n = 0;

	if (first)
		*first = e;
	if (!e)
		return 0;
	CHECK(e == s->syms || strcmp(e[-1].name, name));
	while (e + n < s->syms + s->cnt && !strcmp(e[n].name, name))
		n++;
	return n;
}/* argv[1] must be the fixtures folder: 0, or 2 after a usage line. */
static inline int elf_test__init(int argc, char **argv)
{
	struct stat st;

	if (argc != 2 || stat(argv[1], &st) || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "usage: %s FIXTURE_DIR (built by tests/unit/fixtures.mk)\n",
			argv[0]);
		return 2;
	}
	fixdir = argv[1];
	return 0;
}

#endif
