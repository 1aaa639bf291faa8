// SPDX-License-Identifier: MIT
/* Unit test of userspace/elf/elf_syms.c. Usage: test_elf_syms FIXTURE_DIR, the directory that
 * tests/unit/fixtures.mk builds. Offsets are checked three independent ways: against the bytes
 * of the loaded object (dlopen, or the fixture executable printing its own code), against the
 * section headers, and against a known instruction sequence (fix_magic). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf/elf_syms.h"
#include "unit.h"

#define LIBC_PATH "/usr/lib/x86_64-linux-gnu/libc.so.6"

static const char *fixdir;

/* movabs $0x1122334455667788, %rax; ret (tests/unit/fixtures/magic.h) */
static const unsigned char magic_bytes[] = { 0x48, 0xb8, 0x88, 0x77, 0x66, 0x55,
					     0x44, 0x33, 0x22, 0x11, 0xc3 };

struct blob {
	unsigned char *p;
	size_t len;
};

static const char *fix(const char *name)
{
	static char buf[4][4096];
	static int i;
	char *p = buf[i++ % 4];

	snprintf(p, sizeof(buf[0]), "%s/%s", fixdir, name);
	return p;
}

static int slurp(const char *path, struct blob *b)
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

static int memfd_with(const void *p, size_t len)
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
static bool syms_valid(const struct elf_syms *s)
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
static size_t count_name(const struct elf_syms *s, const char *name, const struct elf_sym **first)
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
}

static bool file_has(const struct blob *f, uint64_t off, const void *bytes, size_t n)
{
	return off <= f->len && f->len - off >= n && !memcmp(f->p + off, bytes, n);
}

/* The offset of addr computed from the section headers: independent of the PT_LOADs. */
static bool offset_by_sections(Elf *elf, uint64_t addr, uint64_t *off)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		if (addr >= sh.sh_addr && addr < sh.sh_addr + sh.sh_size) {
			*off = addr - sh.sh_addr + sh.sh_offset;
			return true;
		}
	}
	return false;
}

static bool offset_by_phdrs(Elf *elf, uint64_t addr, uint64_t *off)
{
	size_t i, n;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &n))
		return false;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (addr >= ph.p_vaddr && addr < ph.p_vaddr + ph.p_memsz) {
			*off = addr - ph.p_vaddr + ph.p_offset;
			return true;
		}
	}
	return false;
}

/* Every entry's offset, recomputed from the program headers and from the section headers. */
static void check_offsets(const char *path, const struct elf_syms *s)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t i, bad = 0;
	Elf *elf;

	CHECK(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	CHECK(elf);
	for (i = 0; elf && i < s->cnt; i++) {
		uint64_t a = 0, b = 0;

		if (!offset_by_phdrs(elf, s->syms[i].addr, &a) ||
		    !offset_by_sections(elf, s->syms[i].addr, &b) || a != s->syms[i].offset ||
		    b != s->syms[i].offset) {
			fprintf(stderr, "  %s: %s: offset %#llx, phdrs %#llx, sections %#llx\n",
				path, s->syms[i].name, (unsigned long long)s->syms[i].offset,
				(unsigned long long)a, (unsigned long long)b);
			bad++;
		}
	}
	CHECK(bad == 0);
	elf_end(elf);
	if (fd >= 0)
		close(fd);
}

/* The file bytes at each offset equal the bytes at base + addr in this process. */
static size_t check_loaded_bytes(const struct elf_syms *s, const struct blob *f, uintptr_t base)
{
	size_t i, bad = 0;

	for (i = 0; i < s->cnt; i++) {
		const struct elf_sym *e = &s->syms[i];
		size_t n = e->size ? (e->size < 16 ? e->size : 16) : 1;

		if (!file_has(f, e->offset, (const void *)(base + (uintptr_t)e->addr), n)) {
			fprintf(stderr, "  %s: file bytes at %#llx differ from memory\n", e->name,
				(unsigned long long)e->offset);
			bad++;
		}
	}
	return bad;
}

static void check_magic(const struct elf_syms *s, const struct blob *f)
{
	const struct elf_sym *e = elf_syms__find(s, "fix_magic");

	CHECK(e);
	if (!e)
		return;
	CHECK(e->global && !e->ifunc);
	CHECK(e->size == sizeof(magic_bytes));
	CHECK(file_has(f, e->offset, magic_bytes, sizeof(magic_bytes)));
}

/* libfix.so and its variants; symtab: whether .symtab is still there. */
static void check_lib(const char *name, bool symtab)
{
	const struct elf_sym *foo, *target, *alias, *e;
	const char *path = fix(name);
	struct elf_syms *s = NULL;
	struct blob f;
	size_t i;
	int rc;

	rc = elf_syms__open(path, &s);
	CHECK(rc == 0);
	CHECK(slurp(path, &f) == 0);
	if (rc || !f.p)
		goto out;
	CHECK(s->pie);
	CHECK(!s->is_go);
	CHECK(syms_valid(s));
	for (i = 0; i < s->cnt; i++)
		CHECK(s->syms[i].offset + s->syms[i].size <= f.len);

	/* foo@V1 and foo@@V2: two entries named foo, by address */
	CHECK(count_name(s, "foo", &foo) == 2);
	if (foo) {
		CHECK(foo[0].addr < foo[1].addr);
		CHECK(foo[0].global && foo[1].global);
		CHECK(foo[0].offset != foo[1].offset);
	}
	CHECK(!elf_syms__find(s, "foo@V1"));
	CHECK(!elf_syms__find(s, "foo@@V2"));
	CHECK(!elf_syms__find(s, "no_such_function"));
	CHECK(!elf_syms__find(s, ""));

	/* the alias: its own entry, same place; each in .symtab and .dynsym but listed once */
	CHECK(count_name(s, "fix_target", &target) == 1);
	CHECK(count_name(s, "fix_alias", &alias) == 1);
	if (target && alias) {
		CHECK(target->addr == alias->addr);
		CHECK(target->offset == alias->offset);
		CHECK(target->size == alias->size);
		CHECK(target->global && alias->global);
	}

	e = elf_syms__find(s, "fix_ifunc");
	CHECK(e && e->ifunc && e->global);
	e = elf_syms__find(s, "fix_weak");
	CHECK(e && e->global && !e->ifunc);
	e = elf_syms__find(s, "fix_calls_local");
	CHECK(e && e->global && !e->ifunc && e->size > 0);
	check_magic(s, &f);

	if (symtab) {
		e = elf_syms__find(s, "fix_local");
		CHECK(e && !e->global);
		e = elf_syms__find(s, "fix_ifunc_impl");
		CHECK(e && !e->global && !e->ifunc);
		e = elf_syms__find(s, "fix_ifunc_resolver");
		CHECK(e && elf_syms__find(s, "fix_ifunc") &&
		      e->addr == elf_syms__find(s, "fix_ifunc")->addr);
		e = elf_syms__find(s, "foo_v1");
		CHECK(e && !e->global && foo && e->addr == foo[0].addr);
		e = elf_syms__find(s, "foo_v2");
		CHECK(e && !e->global && foo && e->addr == foo[1].addr);
	} else {
		CHECK(!elf_syms__find(s, "fix_local"));
		CHECK(!elf_syms__find(s, "fix_ifunc_impl"));
		CHECK(!elf_syms__find(s, "foo_v1"));
	}
	check_offsets(path, s);
out:
	free(f.p);
	elf_syms__free(s);
}

static void test_lib(void)
{
	check_lib("libfix.so", true);
}

static void test_lib_based(void)
{
	const struct elf_sym *e;
	struct elf_syms *s = NULL;

	check_lib("libfix-based.so", true);
	/* offsets must not equal addresses here, or the test could not tell them apart */
	CHECK(elf_syms__open(fix("libfix-based.so"), &s) == 0);
	e = s ? elf_syms__find(s, "fix_calls_local") : NULL;
	CHECK(e && e->addr >= 0x10000000 && e->offset < 0x10000000);
	elf_syms__free(s);
}

static void test_lib_stripped(void)
{
	struct elf_syms *full = NULL, *s = NULL;
	size_t i;

	check_lib("libfix-stripped.so", false);
	/* stripping moves no code: every entry left is one of the unstripped file's */
	CHECK(elf_syms__open(fix("libfix.so"), &full) == 0);
	CHECK(elf_syms__open(fix("libfix-stripped.so"), &s) == 0);
	if (!full || !s)
		goto out;
	CHECK(s->cnt > 0 && s->cnt < full->cnt);
	for (i = 0; i < s->cnt; i++) {
		const struct elf_sym *e = &s->syms[i], *f;
		size_t n = count_name(full, e->name, &f), j;
		bool found = false;

		for (j = 0; j < n; j++)
			found |= f[j].addr == e->addr && f[j].offset == e->offset &&
				 f[j].ifunc == e->ifunc && f[j].global == e->global;
		CHECK(found);
	}
out:
	elf_syms__free(full);
	elf_syms__free(s);
}

/* dlopen the library: the bytes at every entry's offset are the code at l_addr + addr. */
static void check_lib_loaded(const char *name)
{
	const struct elf_sym *foo = NULL, *e;
	const char *path = fix(name);
	struct elf_syms *s = NULL;
	struct link_map *lm = NULL;
	void *h, *v1, *v2;
	struct blob f;

	CHECK(slurp(path, &f) == 0);
	CHECK(elf_syms__open(path, &s) == 0);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		fprintf(stderr, "  dlopen %s: %s\n", path, dlerror());
	CHECK(h);
	if (!h || !s || !f.p)
		goto out;
	CHECK(dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm);
	if (!lm)
		goto out;
	CHECK(check_loaded_bytes(s, &f, lm->l_addr) == 0);

	/* and the dynamic linker agrees on the addresses */
	CHECK(count_name(s, "foo", &foo) == 2);
	v1 = dlvsym(h, "foo", "V1");
	v2 = dlsym(h, "foo");
	CHECK(v1 && v2 && v1 != v2);
	if (foo) {
		CHECK(v1 == (void *)(lm->l_addr + foo[0].addr) ||
		      v1 == (void *)(lm->l_addr + foo[1].addr));
		CHECK(v2 == (void *)(lm->l_addr + foo[0].addr) ||
		      v2 == (void *)(lm->l_addr + foo[1].addr));
	}
	e = elf_syms__find(s, "fix_alias");
	CHECK(e && dlsym(h, "fix_alias") == (void *)(lm->l_addr + e->addr));
	e = elf_syms__find(s, "fix_weak");
	CHECK(e && dlsym(h, "fix_weak") == (void *)(lm->l_addr + e->addr));
out:
	if (h)
		dlclose(h);
	elf_syms__free(s);
	free(f.p);
}

static void test_lib_loaded(void)
{
	check_lib_loaded("libfix.so");
	check_lib_loaded("libfix-based.so");
	check_lib_loaded("libfix-stripped.so");
}

/* Runs the fixture, which prints its fix_exe_func's first 16 bytes as loaded. */
static bool exe_code_matches(const char *path, const struct blob *f, uint64_t off)
{
	unsigned char mem[16];
	char line[64], cmd[4200];
	unsigned int v;
	bool ok = true;
	FILE *p;
	int i;

	snprintf(cmd, sizeof(cmd), "'%s'", path);
	p = popen(cmd, "r");
	if (!p)
		return false;
	if (!fgets(line, sizeof(line), p) || strlen(line) < 32)
		ok = false;
	for (i = 0; ok && i < 16; i++) {
		if (sscanf(line + 2 * i, "%2x", &v) != 1)
			ok = false;
		mem[i] = v;
	}
	pclose(p);
	return ok && file_has(f, off, mem, sizeof(mem));
}

static void check_exe(const char *name, bool pie)
{
	const char *path = fix(name);
	struct elf_syms *s = NULL;
	const struct elf_sym *e;
	struct blob f;
	int rc;

	rc = elf_syms__open(path, &s);
	CHECK(rc == 0);
	CHECK(slurp(path, &f) == 0);
	if (rc || !f.p)
		goto out;
	CHECK(s->pie == pie);
	CHECK(!s->is_go);
	CHECK(syms_valid(s));
	CHECK(elf_syms__find(s, "main"));
	check_magic(s, &f);
	e = elf_syms__find(s, "fix_exe_func");
	CHECK(e && e->global && !e->ifunc && e->size > 0);
	if (e) {
		CHECK(exe_code_matches(path, &f, e->offset));
		if (!pie)
			CHECK(e->addr >= 0x400000 && e->offset < e->addr);
	}
	check_offsets(path, s);
out:
	free(f.p);
	elf_syms__free(s);
}

static void test_exe_pie(void)
{
	check_exe("fix_exe_pie", true);
}

static void test_exe_nopie(void)
{
	check_exe("fix_exe_nopie", false);
}

static void test_go(void)
{
	static const char *const names[] = { "fix_go_note", "fix_go_buildinfo" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct elf_syms *s = NULL;

		CHECK(elf_syms__open(fix(names[i]), &s) == 0);
		CHECK(s && s->is_go && s->pie && elf_syms__find(s, "main"));
		elf_syms__free(s);
	}
}

static void test_libc(void)
{
	const struct elf_sym *e;
	struct elf_syms *s = NULL;
	struct link_map *lm = NULL;
	struct stat a, b;
	struct blob f;
	size_t i, n;
	bool ifunc = false;
	void *h;

	if (access(LIBC_PATH, R_OK)) {
		fprintf(stderr, "  skipped: no %s\n", LIBC_PATH);
		return;
	}
	CHECK(elf_syms__open(LIBC_PATH, &s) == 0);
	CHECK(slurp(LIBC_PATH, &f) == 0);
	if (!s || !f.p)
		goto out;
	CHECK(s->pie && !s->is_go);
	CHECK(syms_valid(s));
	CHECK(s->cnt > 1000);
	e = elf_syms__find(s, "malloc");
	CHECK(e && e->global && !e->ifunc);
	/* memcpy@@GLIBC_2.14 is an IFUNC, memcpy@GLIBC_2.2.5 a plain function */
	n = count_name(s, "memcpy", &e);
	CHECK(n >= 1);
	for (i = 0; e && i < n; i++)
		ifunc |= e[i].ifunc;
	CHECK(ifunc);
	/* pthread_cond_wait@@GLIBC_2.3.2 and @GLIBC_2.2.5; syms_valid checked the order */
	CHECK(count_name(s, "pthread_cond_wait", &e) == 2);
	CHECK(e && e[0].addr < e[1].addr && e[0].offset != e[1].offset);
	check_offsets(LIBC_PATH, s);

	/* the libc this test runs on, if it is this file: compare every function's bytes */
	h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	CHECK(h);
	if (h && !dlinfo(h, RTLD_DI_LINKMAP, &lm) && lm && !stat(lm->l_name, &a) &&
	    !stat(LIBC_PATH, &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		CHECK(check_loaded_bytes(s, &f, lm->l_addr) == 0);
	else
		fprintf(stderr, "  loaded libc is not %s: bytes not compared\n", LIBC_PATH);
	if (h)
		dlclose(h);
out:
	free(f.p);
	elf_syms__free(s);
}

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
	struct stat st;

	if (argc != 2 || stat(argv[1], &st) || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "usage: %s FIXTURE_DIR (built by tests/unit/fixtures.mk)\n",
			argv[0]);
		return 2;
	}
	fixdir = argv[1];
	if (elf_version(EV_CURRENT) == EV_NONE)
		return 2;

	RUN(test_bad_inputs);
	RUN(test_lib);
	RUN(test_lib_based);
	RUN(test_lib_stripped);
	RUN(test_lib_loaded);
	RUN(test_exe_pie);
	RUN(test_exe_nopie);
	RUN(test_go);
	RUN(test_libc);
	RUN(test_truncated);
	RUN(test_corrupt);
	RUN(test_fuzz);
	UNIT_EXIT();
}
