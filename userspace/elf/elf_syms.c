// SPDX-License-Identifier: MIT
/* Function symbols of one ELF object and their file offsets, read with libelf (see elf_syms.h).
 * The file may be hostile: every value taken from it is checked before it is used. */
#include "elf/elf_syms.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* An executable PT_LOAD: the bytes at [vaddr, vaddr + filesz) come from the file at offset. */
struct exec_seg {
	uint64_t vaddr;
	uint64_t filesz;
	uint64_t offset;
};

struct builder {
	struct elf_syms *res;
	size_t cap;
	struct exec_seg *segs;
	size_t nsegs;
};

static pthread_once_t libelf_once = PTHREAD_ONCE_INIT;
static bool libelf_ok;

static void libelf_init(void)
{
	libelf_ok = elf_version(EV_CURRENT) != EV_NONE;
}

/* libelf clamps phnum to the headers the file holds, and reports a section header table cut by
 * the end of the file as no sections: both mean a truncated file, which must not pass for one
 * without symbols. */
static int check_tables(Elf *elf, const GElf_Ehdr *eh)
{
	size_t phnum, shnum;

	if (elf_getphdrnum(elf, &phnum) || (eh->e_phnum != PN_XNUM && phnum < eh->e_phnum))
		return -ENOEXEC;
	if (elf_getshdrnum(elf, &shnum) || (eh->e_shoff && !shnum))
		return -ENOEXEC;
	return 0;
}

static int load_segs(Elf *elf, struct builder *b)
{
	size_t phnum, i;
	GElf_Phdr ph;
	size_t file_size;

	/* bounded by the file size (see check_tables) */
	if (elf_getphdrnum(elf, &phnum) || !elf_rawfile(elf, &file_size))
		return -ENOEXEC;
	if (!phnum)
		return 0;
	b->segs = calloc(phnum, sizeof(*b->segs));
	if (!b->segs)
		return -ENOMEM;
	for (i = 0; i < phnum; i++) {
		if (!gelf_getphdr(elf, i, &ph))
			return -ENOEXEC;
		/* a segment whose bytes are not all in the file (hostile or cut short) has no
		 * offsets a uprobe could use */
		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) || ph.p_offset > file_size ||
		    ph.p_filesz > file_size - ph.p_offset)
			continue;
		b->segs[b->nsegs].vaddr = ph.p_vaddr;
		b->segs[b->nsegs].filesz = ph.p_filesz;
		b->segs[b->nsegs].offset = ph.p_offset;
		b->nsegs++;
	}
	return 0;
}

/* Bounded by p_filesz, not p_memsz: a uprobe needs bytes that are in the file. */
static bool addr_to_offset(const struct builder *b, uint64_t addr, uint64_t *off)
{
	size_t i;

	for (i = 0; i < b->nsegs; i++) {
		const struct exec_seg *s = &b->segs[i];
		uint64_t delta = addr - s->vaddr;

		if (addr < s->vaddr || delta >= s->filesz || s->offset > UINT64_MAX - delta)
			continue;
		*off = s->offset + delta;
		return true;
	}
	return false;
}

static int add_sym(struct builder *b, const char *name, size_t len, const GElf_Sym *sym,
		   uint64_t off)
{
	struct elf_syms *res = b->res;
	struct elf_sym *e;

	if (res->cnt == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 256;
		struct elf_sym *n;

		if (cap > SIZE_MAX / sizeof(*n))
			return -ENOMEM;
		n = realloc(res->syms, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		res->syms = n;
		b->cap = cap;
	}
	e = &res->syms[res->cnt];
	e->name = strndup(name, len);
	if (!e->name)
		return -ENOMEM;
	e->addr = sym->st_value;
	e->size = sym->st_size;
	e->offset = off;
	e->ifunc = GELF_ST_TYPE(sym->st_info) == STT_GNU_IFUNC;
	e->global = GELF_ST_BIND(sym->st_info) == STB_GLOBAL ||
		    GELF_ST_BIND(sym->st_info) == STB_WEAK;
	res->cnt++;
	return 0;
}

/* ucontext's stack switches (green threads, coroutines): a return probe's saved return
 * address belongs to the stack that was left, so such programs get entry probes only. */
static bool stack_switch(const char *name)
{
	size_t n = strcspn(name, "@");

	return (n == 11 && !strncmp(name, "swapcontext", n)) ||
	       (n == 10 && !strncmp(name, "setcontext", n)) ||
	       (n == 11 && !strncmp(name, "makecontext", n));
}

static int read_symtab(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct builder *b)
{
	size_t symsz = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	Elf_Scn *strscn;
	GElf_Shdr strsh;
	Elf_Data *data;
	size_t i, n;
	int err;

	if (!sh->sh_size)
		return 0;
	/* sh_link comes from the file: it must name a string table */
	strscn = elf_getscn(elf, sh->sh_link);
	if (!sh->sh_link || !strscn || !gelf_getshdr(strscn, &strsh) ||
	    strsh.sh_type != SHT_STRTAB)
		return -ENOEXEC;
	data = elf_getdata(scn, NULL);
	if (!data || !symsz)
		return -ENOEXEC;
	/* d_size, not sh_size / sh_entsize: entsize may be 0 or lie */
	n = data->d_size / symsz;
	for (i = 0; i < n; i++) {
		const char *name;
		uint64_t off;
		GElf_Sym sym;
		int type;

		if (!gelf_getsym(data, i, &sym))
			return -ENOEXEC;
		name = sym.st_name ? elf_strptr(elf, sh->sh_link, sym.st_name) : NULL;
		if (sym.st_shndx == SHN_UNDEF && name && stack_switch(name))
			b->res->switches_stacks = true;
		/* imported, or defined here (libstdc++, a program linked with it statically) */
		if (name && !strcmp(name, "__gxx_personality_v0"))
			b->res->unwinds = true;
		type = GELF_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		if (!sym.st_value || sym.st_shndx == SHN_UNDEF)
			continue;
		if (!addr_to_offset(b, sym.st_value, &off))
			continue;
		/* NULL when st_name is 0, out of range or the string is not terminated */
		if (!name)
			continue;
		/* .symtab of an unstripped object spells versions out: foo@@V2, foo@V1 */
		if (!name[0] || name[0] == '@')
			continue;
		err = add_sym(b, name, strcspn(name, "@"), &sym, off);
		if (err)
			return err;
	}
	return 0;
}

static bool is_go_section(Elf *elf, size_t shstrndx, const GElf_Shdr *sh)
{
	const char *name = elf_strptr(elf, shstrndx, sh->sh_name);

	return name && (!strcmp(name, ".go.buildinfo") || !strcmp(name, ".note.go.buildid"));
}

static int scan_sections(Elf *elf, struct builder *b)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	bool names;
	int err;

	/* A broken e_shstrndx only costs the Go detection; symbol tables are found by type. */
	names = !elf_getshdrstrndx(elf, &shstrndx);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			return -ENOEXEC;
		if (names && is_go_section(elf, shstrndx, &sh))
			b->res->is_go = true;
		if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)
			continue;
		err = read_symtab(elf, scn, &sh, b);
		if (err)
			return err;
	}
	return 0;
}

static int cmp_sym(const void *pa, const void *pb)
{
	const struct elf_sym *a = pa, *b = pb;
	int r = strcmp(a->name, b->name);

	if (r)
		return r;
	return (a->addr > b->addr) - (a->addr < b->addr);
}

/* Sorts, and merges entries with the same name and address (found in .symtab and .dynsym). */
static void sort_dedup(struct elf_syms *res)
{
	size_t i, n = 0;

	if (!res->cnt)
		return;
	qsort(res->syms, res->cnt, sizeof(*res->syms), cmp_sym);
	for (i = 1; i < res->cnt; i++) {
		struct elf_sym *keep = &res->syms[n], *cur = &res->syms[i];

		if (keep->addr == cur->addr && !strcmp(keep->name, cur->name)) {
			keep->global |= cur->global;
			keep->ifunc |= cur->ifunc;
			if (!keep->size)
				keep->size = cur->size;
			free(cur->name);
			continue;
		}
		res->syms[++n] = *cur;
	}
	res->cnt = n + 1;
}

void elf_syms__free(struct elf_syms *syms)
{
	size_t i;

	if (!syms)
		return;
	for (i = 0; i < syms->cnt; i++)
		free(syms->syms[i].name);
	free(syms->syms);
	free(syms);
}

int elf_syms__open_fd(int fd, struct elf_syms **out)
{
	struct builder b = {};
	Elf *elf = NULL;
	struct stat st;
	GElf_Ehdr eh;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	pthread_once(&libelf_once, libelf_init);
	if (!libelf_ok)
		return -ENOTSUP;
	if (fstat(fd, &st))
		return -errno;
	/* A FIFO or a device could block or never end; ELF objects are regular files. */
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode))
		return -ENOEXEC;

	b.res = calloc(1, sizeof(*b.res));
	if (!b.res)
		return -ENOMEM;
	err = -ENOEXEC;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		goto out;
	b.res->pie = eh.e_type == ET_DYN;

	err = check_tables(elf, &eh);
	if (err)
		goto out;
	err = load_segs(elf, &b);
	if (err)
		goto out;
	err = scan_sections(elf, &b);
	if (err)
		goto out;
	sort_dedup(b.res);
	*out = b.res;
	b.res = NULL;
out:
	elf_syms__free(b.res);
	free(b.segs);
	elf_end(elf);
	return err;
}

int elf_syms__open(const char *path, struct elf_syms **out)
{
	int fd, err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = elf_syms__open_fd(fd, out);
	close(fd);
	return err;
}

const struct elf_sym *elf_syms__find(const struct elf_syms *syms, const char *name)
{
	size_t lo = 0, hi;

	if (!syms || !name)
		return NULL;
	/* lower bound: the first entry not less than name */
	hi = syms->cnt;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(syms->syms[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < syms->cnt && !strcmp(syms->syms[lo].name, name))
		return &syms->syms[lo];
	return NULL;
}
