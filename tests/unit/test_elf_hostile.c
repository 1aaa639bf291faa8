// SPDX-License-Identifier: MIT
/* Unit test of userspace/elf/elf_syms.c (and elf/noreturn.c on what it parses) on hostile
 * input: not ELF, truncated at every length, corrupted headers, sections and segments, random
 * bit flips. None may crash it, hang it or make it return a table that breaks its invariants.
 * Usage: test_elf_hostile FIXTURE_DIR. */
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>

#include "elf/noreturn.h"
#include "elf_test.h"
#include "unit.h"

static void test_bad_inputs(void)
{
	static const char text[] = "this is not an ELF file\n";
	static const char short_elf[] = "\177ELF\2\1\1\0\0\0\0\0";
	static const char ar[] = "!<arch>\n";
	struct elf_syms *s = (struct elf_syms *)1;
	int fd, pfd[2];

	CHECK(elf_syms__open("/nonexistent/elf_syms_test", &s) == -ENOENT);
	CHECK(s == NULL);
	CHECK(elf_syms__open(fixdir, &s) == -EISDIR);
	CHECK(elf_syms__open("/dev/null", &s) == -ENOEXEC);

	fd = memfd_with(NULL, 0);
	CHECK(fd >= 0);
	CHECK(elf_syms__open_fd(fd, &s) == -ENOEXEC);
	/* the caller's fd stays open */
	CHECK(fcntl(fd, F_GETFD) >= 0);
	close(fd);

	fd = memfd_with(text, sizeof(text) - 1);
	CHECK(elf_syms__open_fd(fd, &s) == -ENOEXEC);
	close(fd);
	fd = memfd_with(short_elf, sizeof(short_elf) - 1);
	CHECK(elf_syms__open_fd(fd, &s) == -ENOEXEC);
	close(fd);
	fd = memfd_with(ar, sizeof(ar) - 1);
	CHECK(elf_syms__open_fd(fd, &s) == -ENOEXEC);
	close(fd);

	/* not a regular file: refused without reading (a read could block) */
	CHECK(pipe(pfd) == 0);
	CHECK(elf_syms__open_fd(pfd[0], &s) == -ENOEXEC);
	close(pfd[0]);
	close(pfd[1]);
	CHECK(elf_syms__open_fd(-1, &s) == -EBADF);
	CHECK(s == NULL);

	CHECK(elf_syms__find(NULL, "x") == NULL);
	elf_syms__free(NULL);
}

/* The calls that never return (elf/noreturn.h), read from the same file: sorted. */
static bool noreturn_valid(int fd, const struct elf_syms *s)
{
	uint64_t *v;
	size_t n;
	bool ok = true;

	noreturn__find(fd, s, &v, &n);
	ok = n == 0 || v != NULL;
	for (size_t i = 1; ok && i < n; i++)
		ok = v[i - 1] <= v[i];
	free(v);
	return ok;
}

/* Parses fd; an error must be -ENOEXEC, a result must be well formed. */
static int try_fd(const char *what, int fd, struct elf_syms **keep)
{
	struct elf_syms *s = NULL;
	int rc;

	rc = elf_syms__open_fd(fd, &s);
	if ((rc && (rc != -ENOEXEC || s)) || (!rc && (!s || !syms_valid(s)))) {
		fprintf(stderr, "  %s: rc %d\n", what, rc);
		CHECK(!"bad result on hostile input");
	}
	if (!rc && !noreturn_valid(fd, s)) {
		fprintf(stderr, "  %s: noreturn stubs out of order\n", what);
		CHECK(!"bad noreturn stubs on hostile input");
	}
	if (keep)
		*keep = s;
	else
		elf_syms__free(s);
	return rc;
}

static int try_buf(const char *what, int fd, const unsigned char *buf, size_t len,
		   struct elf_syms **keep)
{
	if (ftruncate(fd, 0) || (len && pwrite(fd, buf, len, 0) != (ssize_t)len)) {
		CHECK(!"memfd write");
		return -EIO;
	}
	return try_fd(what, fd, keep);
}

/* Every byte of the first 256, every step-th, and every tail_step-th in the last 8 KiB (where
 * the section header table is). Shrinks one memfd, so lengths go down. */
static void truncate_file(const char *path, size_t step, size_t tail_step, size_t *ok, size_t *err)
{
	char what[4200];
	struct blob f;
	size_t len;
	int fd, rc;

	CHECK(slurp(path, &f) == 0);
	fd = f.p ? memfd_with(f.p, f.len) : -1;
	CHECK(fd >= 0);
	if (fd < 0)
		goto out;
	for (len = f.len; len-- > 0;) {
		if (len >= 256 && len % step && (len + 8192 < f.len || len % tail_step))
			continue;
		if (ftruncate(fd, len)) {
			CHECK(!"ftruncate");
			break;
		}
		snprintf(what, sizeof(what), "%s truncated at %zu", path, len);
		rc = try_fd(what, fd, NULL);
		/* all these files end with the section header table: any cut is detectable */
		CHECK(rc == -ENOEXEC);
		*(rc ? err : ok) += 1;
	}
out:
	if (fd >= 0)
		close(fd);
	free(f.p);
}

static void test_truncated(void)
{
	size_t ok = 0, err = 0;

	truncate_file(fix("libfix.so"), 64, 1, &ok, &err);
	truncate_file(fix("libfix-stripped.so"), 64, 1, &ok, &err);
	truncate_file(fix("fix_exe_nopie"), 64, 1, &ok, &err);
	if (!access(LIBC_PATH, R_OK))
		truncate_file(LIBC_PATH, 65536 + 7, 61, &ok, &err);
	fprintf(stderr, "  truncated: %zu parsed, %zu refused\n", ok, err);
}

/* Section headers of a 64-bit little-endian fixture, edited in place. */
static Elf64_Shdr *shdr_at(unsigned char *buf, size_t i)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;

	return (Elf64_Shdr *)(buf + eh->e_shoff + i * sizeof(Elf64_Shdr));
}

static size_t find_shdr(unsigned char *buf, const char *name)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
	const char *names = (const char *)buf + shdr_at(buf, eh->e_shstrndx)->sh_offset;
	size_t i;

	for (i = 1; i < eh->e_shnum; i++)
		if (!strcmp(names + shdr_at(buf, i)->sh_name, name))
			return i;
	return 0;
}

/* A pristine copy of libfix.so, a scratch copy to break, and the sections of interest. */
struct corrupt {
	struct blob f;
	unsigned char *buf;
	Elf64_Ehdr *eh;
	int fd;
	size_t symtab, dynsym, strtab, dynstr, text, shstrtab;
};

static const uint64_t bad64[] = { 1, 0xfff, 0x7fffffff, 0xffffffff, 0xfffffffffff,
				  UINT64_MAX - 8, UINT64_MAX };

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static Elf64_Ehdr *reset(struct corrupt *c)
{
	memcpy(c->buf, c->f.p, c->f.len);
	return c->eh = (Elf64_Ehdr *)c->buf;
}

static Elf64_Shdr *sec(struct corrupt *c, size_t i)
{
	return shdr_at(c->buf, i);
}

static Elf64_Phdr *seg(struct corrupt *c, size_t i)
{
	return (Elf64_Phdr *)(c->buf + c->eh->e_phoff) + i;
}

static int attempt(struct corrupt *c, const char *what, struct elf_syms **keep)
{
	return try_buf(what, c->fd, c->buf, c->f.len, keep);
}

/* e_shstrndx names sections only: symbols are still read */
static void corrupt_shstrndx(struct corrupt *c)
{
	const uint16_t idx[] = { 0, (uint16_t)c->symtab, (uint16_t)c->text, c->eh->e_shnum,
				 SHN_LORESERVE, SHN_XINDEX };
	struct elf_syms *s;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(idx); i++) {
		reset(c)->e_shstrndx = idx[i];
		CHECK(attempt(c, "e_shstrndx", &s) == 0 && s && count_name(s, "foo", NULL) == 2);
		elf_syms__free(s);
	}
	for (i = 0; i < ARRAY_SIZE(bad64); i++) {
		reset(c)->e_shstrndx = SHN_XINDEX;
		sec(c, 0)->sh_link = (uint32_t)bad64[i];
		CHECK(attempt(c, "extended e_shstrndx", &s) == 0 && s &&
		      count_name(s, "foo", NULL) == 2);
		elf_syms__free(s);
	}
}

/* a symbol table whose sh_link is not a string table is malformed */
static void corrupt_sh_link(struct corrupt *c)
{
	const size_t tabs[] = { c->symtab, c->dynsym };
	const uint32_t links[] = { 0, (uint32_t)c->text, (uint32_t)c->symtab, (uint32_t)c->dynsym,
				   c->eh->e_shnum, 0xffff, 0x10000, UINT32_MAX };
	size_t i, j;

	for (i = 0; i < ARRAY_SIZE(tabs); i++) {
		for (j = 0; j < ARRAY_SIZE(links); j++) {
			reset(c);
			sec(c, tabs[i])->sh_link = links[j];
			CHECK(attempt(c, "sh_link", NULL) == -ENOEXEC);
		}
		/* a string table, the wrong one: names are garbage but in bounds */
		reset(c);
		sec(c, tabs[i])->sh_link = c->shstrtab;
		attempt(c, "sh_link to .shstrtab", NULL);
	}
}

/* sizes, offsets, entry sizes and types of the tables read */
static void corrupt_sections(struct corrupt *c)
{
	const size_t secs[] = { c->symtab, c->dynsym, c->strtab, c->dynstr, c->shstrtab, 0 };
	const uint32_t types[] = { SHT_NOBITS, SHT_SYMTAB, SHT_DYNSYM, SHT_STRTAB, SHT_NULL };
	size_t i, j;

	for (i = 0; i < ARRAY_SIZE(secs); i++) {
		for (j = 0; j < ARRAY_SIZE(bad64); j++) {
			reset(c);
			sec(c, secs[i])->sh_size = bad64[j];
			attempt(c, "sh_size", NULL);
			reset(c);
			sec(c, secs[i])->sh_offset = bad64[j];
			attempt(c, "sh_offset", NULL);
			reset(c);
			sec(c, secs[i])->sh_entsize = bad64[j];
			attempt(c, "sh_entsize", NULL);
			reset(c);
			sec(c, secs[i])->sh_offset = c->f.len - (bad64[j] & 0xff);
			attempt(c, "sh_offset near the end", NULL);
		}
		reset(c);
		sec(c, secs[i])->sh_size = 0;
		attempt(c, "sh_size 0", NULL);
		reset(c);
		sec(c, secs[i])->sh_entsize = 0;
		attempt(c, "sh_entsize 0", NULL);
		for (j = 0; j < ARRAY_SIZE(types); j++) {
			reset(c);
			sec(c, secs[i])->sh_type = types[j];
			attempt(c, "sh_type", NULL);
		}
	}
	/* string tables whose last string is not terminated */
	for (i = 0; i < 2; i++) {
		Elf64_Shdr *sh;

		reset(c);
		sh = sec(c, i ? c->dynstr : c->strtab);
		memset(c->buf + sh->sh_offset, 'A', sh->sh_size);
		attempt(c, "unterminated strings", NULL);
	}
}

static void corrupt_ehdr(struct corrupt *c)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad64); i++) {
		reset(c)->e_phoff = bad64[i];
		attempt(c, "e_phoff", NULL);
		reset(c)->e_shoff = bad64[i];
		attempt(c, "e_shoff", NULL);
		reset(c)->e_phnum = (uint16_t)bad64[i];
		attempt(c, "e_phnum", NULL);
		reset(c)->e_shnum = (uint16_t)bad64[i];
		attempt(c, "e_shnum", NULL);
		reset(c)->e_phentsize = (uint16_t)bad64[i];
		attempt(c, "e_phentsize", NULL);
		reset(c)->e_shentsize = (uint16_t)bad64[i];
		attempt(c, "e_shentsize", NULL);
		/* extended numbering, through section 0 */
		reset(c)->e_shnum = 0;
		sec(c, 0)->sh_size = bad64[i];
		attempt(c, "extended e_shnum", NULL);
		reset(c)->e_phnum = PN_XNUM;
		sec(c, 0)->sh_info = (uint32_t)bad64[i];
		attempt(c, "extended e_phnum", NULL);
	}
	for (i = EI_CLASS; i <= EI_VERSION; i++) {
		reset(c);
		c->buf[i] = 0x7f;
		attempt(c, "e_ident", NULL);
	}
}

/* no executable segment: no symbols; absurd segments: no crash */
static void corrupt_phdrs(struct corrupt *c)
{
	struct elf_syms *s;
	size_t i, j;

	reset(c);
	for (i = 0; i < c->eh->e_phnum; i++)
		seg(c, i)->p_flags &= ~PF_X;
	CHECK(attempt(c, "no PF_X", &s) == 0 && s && s->cnt == 0);
	elf_syms__free(s);
	for (i = 0; i < reset(c)->e_phnum; i++) {
		for (j = 0; j < ARRAY_SIZE(bad64); j++) {
			reset(c);
			seg(c, i)->p_vaddr = bad64[j];
			attempt(c, "p_vaddr", NULL);
			reset(c);
			seg(c, i)->p_filesz = seg(c, i)->p_memsz = bad64[j];
			attempt(c, "p_filesz", NULL);
			reset(c);
			seg(c, i)->p_offset = bad64[j];
			attempt(c, "p_offset", NULL);
		}
	}
}

static void test_corrupt(void)
{
	struct corrupt c = { .fd = -1 };

	CHECK(slurp(fix("libfix.so"), &c.f) == 0);
	c.fd = memfd_with(NULL, 0);
	c.buf = c.f.p ? malloc(c.f.len) : NULL;
	CHECK(c.fd >= 0 && c.buf);
	if (c.fd < 0 || !c.buf)
		goto out;
	reset(&c);
	/* the edits below assume a well-formed 64-bit fixture */
	CHECK(c.eh->e_ident[EI_CLASS] == ELFCLASS64 && c.eh->e_ident[EI_DATA] == ELFDATA2LSB &&
	      c.eh->e_shoff + c.eh->e_shnum * sizeof(Elf64_Shdr) <= c.f.len);
	c.symtab = find_shdr(c.buf, ".symtab");
	c.dynsym = find_shdr(c.buf, ".dynsym");
	c.strtab = find_shdr(c.buf, ".strtab");
	c.dynstr = find_shdr(c.buf, ".dynstr");
	c.text = find_shdr(c.buf, ".text");
	c.shstrtab = c.eh->e_shstrndx;
	CHECK(c.symtab && c.dynsym && c.strtab && c.dynstr && c.text);
	if (!c.symtab || !c.dynsym || !c.strtab || !c.dynstr || !c.text)
		goto out;

	corrupt_shstrndx(&c);
	corrupt_sh_link(&c);
	corrupt_sections(&c);
	corrupt_ehdr(&c);
	corrupt_phdrs(&c);
out:
	if (c.fd >= 0)
		close(c.fd);
	free(c.buf);
	free(c.f.p);
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* Random byte changes, mostly in the headers, where a parser goes wrong. Fixed seed. */
static void fuzz_file(const char *path, int iters, size_t *ok, size_t *err)
{
	unsigned char *buf = NULL;
	const Elf64_Ehdr *eh;
	struct blob f;
	int fd, i, j;

	CHECK(slurp(path, &f) == 0);
	fd = memfd_with(NULL, 0);
	CHECK(fd >= 0);
	buf = f.p ? malloc(f.len) : NULL;
	if (!buf || fd < 0)
		goto out;
	eh = (const Elf64_Ehdr *)f.p;
	for (i = 0; i < iters; i++) {
		int flips = 1 + rnd() % 8;

		memcpy(buf, f.p, f.len);
		for (j = 0; j < flips; j++) {
			uint64_t lo = 0, hi = f.len, pos;

			switch (rnd() % 4) {
			case 0:
				hi = sizeof(*eh);
				break;
			case 1:
				lo = eh->e_phoff;
				hi = lo + eh->e_phnum * sizeof(Elf64_Phdr);
				break;
			case 2:
				lo = eh->e_shoff;
				hi = lo + eh->e_shnum * sizeof(Elf64_Shdr);
				break;
			}
			if (hi > f.len || lo >= hi)
				lo = 0, hi = f.len;
			pos = lo + rnd() % (hi - lo);
			buf[pos] = rnd() % 3 ? (unsigned char)rnd() : (rnd() & 1 ? 0xff : 0);
		}
		*(try_buf(path, fd, buf, f.len, NULL) ? err : ok) += 1;
	}
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	free(f.p);
}

static void test_fuzz(void)
{
	size_t ok = 0, err = 0;

	fuzz_file(fix("libfix.so"), 3000, &ok, &err);
	fuzz_file(fix("libfix-stripped.so"), 1000, &ok, &err);
	fuzz_file(fix("fix_exe_nopie"), 1000, &ok, &err);
	fprintf(stderr, "  fuzzed: %zu parsed, %zu refused\n", ok, err);
}

int main(int argc, char **argv)
{
	if (elf_test__init(argc, argv) || elf_version(EV_CURRENT) == EV_NONE)
		return 2;
	RUN(test_bad_inputs);
	RUN(test_truncated);
	RUN(test_corrupt);
	RUN(test_fuzz);
	UNIT_EXIT();
}
