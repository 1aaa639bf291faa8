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

#include "elf_test.h"
#include "unit.h"

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

int main(int argc, char **argv)
{
	if (elf_test__init(argc, argv) || elf_version(EV_CURRENT) == EV_NONE)
		return 2;
	RUN(test_lib);
	RUN(test_lib_based);
	RUN(test_lib_stripped);
	RUN(test_lib_loaded);
	RUN(test_exe_pie);
	RUN(test_exe_nopie);
	RUN(test_go);
	RUN(test_libc);
	UNIT_EXIT();
}
