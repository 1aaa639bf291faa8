// SPDX-License-Identifier: MIT
#include "elf/usdt.h"
#include "util/util.h"

#include <asm/ptrace.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NT_STAPSDT 3

/* x86-64 register names, as the assembler writes them in operands, to the user pt_regs slot
 * the kernel keeps (offsets from the uapi struct, so none is typed by hand). */
static const struct {
	const char *names[4]; /* 64, 32, 16, 8-bit */
	uint32_t off;
} regs[] = {
	{ { "rax", "eax", "ax", "al" }, offsetof(struct pt_regs, rax) },
	{ { "rbx", "ebx", "bx", "bl" }, offsetof(struct pt_regs, rbx) },
	{ { "rcx", "ecx", "cx", "cl" }, offsetof(struct pt_regs, rcx) },
	{ { "rdx", "edx", "dx", "dl" }, offsetof(struct pt_regs, rdx) },
	{ { "rsi", "esi", "si", "sil" }, offsetof(struct pt_regs, rsi) },
	{ { "rdi", "edi", "di", "dil" }, offsetof(struct pt_regs, rdi) },
	{ { "rbp", "ebp", "bp", "bpl" }, offsetof(struct pt_regs, rbp) },
	{ { "rsp", "esp", "sp", "spl" }, offsetof(struct pt_regs, rsp) },
	{ { "r8", "r8d", "r8w", "r8b" }, offsetof(struct pt_regs, r8) },
	{ { "r9", "r9d", "r9w", "r9b" }, offsetof(struct pt_regs, r9) },
	{ { "r10", "r10d", "r10w", "r10b" }, offsetof(struct pt_regs, r10) },
	{ { "r11", "r11d", "r11w", "r11b" }, offsetof(struct pt_regs, r11) },
	{ { "r12", "r12d", "r12w", "r12b" }, offsetof(struct pt_regs, r12) },
	{ { "r13", "r13d", "r13w", "r13b" }, offsetof(struct pt_regs, r13) },
	{ { "r14", "r14d", "r14w", "r14b" }, offsetof(struct pt_regs, r14) },
	{ { "r15", "r15d", "r15w", "r15b" }, offsetof(struct pt_regs, r15) },
	{ { "rip", "eip", "ip", NULL }, offsetof(struct pt_regs, rip) },
};

static int reg_offset(const char *name, size_t len, uint32_t *off)
{
	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		for (int w = 0; w < 4; w++)
			if (regs[i].names[w] && strlen(regs[i].names[w]) == len &&
			    !strncmp(regs[i].names[w], name, len)) {
				*off = regs[i].off;
				return 0;
			}
	return -EINVAL;
}

int usdt_arg__parse(const char *text, struct usdt_arg *a)
{
	const char *p = text, *at = strchr(text, '@');
	char *end;
	long size;

	memset(a, 0, sizeof(*a));
	if (!at)
		return -EINVAL;
	size = strtol(p, &end, 10);
	if (end != at || size == 0)
		return -EINVAL;
	a->is_signed = size < 0;
	a->size = labs(size);
	if (a->size != 1 && a->size != 2 && a->size != 4 && a->size != 8)
		return -EINVAL;
	p = at + 1;
	if (*p == '$') { /* $5, $-1 */
		errno = 0;
		a->kind = USDT_ARG_CONST;
		a->val = strtoll(p + 1, &end, 0);
		return errno || end == p + 1 || *end ? -EINVAL : 0;
	}
	if (*p == '%') { /* %edi */
		a->kind = USDT_ARG_REG;
		return reg_offset(p + 1, strlen(p + 1), &a->reg_off);
	}
	/* -16(%rbp), (%rax); a symbol before (%rip) is not supported */
	a->kind = USDT_ARG_MEM;
	a->val = 0;
	if (*p != '(') {
		errno = 0;
		a->val = strtoll(p, &end, 0);
		if (errno || end == p)
			return -EINVAL;
		p = end;
	}
	if (p[0] != '(' || p[1] != '%' || !(end = strchr(p, ')')) || end[1])
		return -EINVAL;
	if (memchr(p, ',', end - p)) /* base+index*scale */
		return -EINVAL;
	return reg_offset(p + 2, end - p - 2, &a->reg_off);
}

int usdt_args__parse(const char *text, struct usdt_arg *args, int max)
{
	char buf[64];
	int n = 0;

	while (*text) {
		size_t len;

		while (isspace((unsigned char)*text))
			text++;
		if (!*text)
			break;
		len = strcspn(text, " \t");
		if (n == max || len >= sizeof(buf))
			return -EINVAL;
		memcpy(buf, text, len);
		buf[len] = 0;
		if (usdt_arg__parse(buf, &args[n]))
			return -EINVAL;
		n++;
		text += len;
	}
	return n;
}

/* The file offset of a virtual address, from the PT_LOAD segment whose file part holds it. */
static bool vaddr_to_offset(Elf *elf, size_t nph, uint64_t fsize, uint64_t addr, uint64_t *off)
{
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (ph.p_offset > fsize || ph.p_filesz > fsize - ph.p_offset)
			continue; /* a segment beyond the file: a hostile or cut file */
		if (addr >= ph.p_vaddr && addr - ph.p_vaddr < ph.p_filesz) {
			*off = addr - ph.p_vaddr + ph.p_offset;
			return true;
		}
	}
	return false;
}

static void add_note(struct usdt_probes *out, Elf *elf, size_t nph, uint64_t fsize,
		     const uint8_t *desc, size_t len, uint64_t base_addr, bool have_base)
{
	uint64_t addr, note_base, sema;
	const char *provider, *name, *args, *end = (const char *)desc + len;
	struct usdt_probe *p;

	if (len < 3 * 8)
		return;
	memcpy(&addr, desc, 8);
	memcpy(&note_base, desc + 8, 8);
	memcpy(&sema, desc + 16, 8);
	provider = (const char *)desc + 24;
	name = memchr(provider, 0, end - provider);
	if (!name || ++name >= end)
		return;
	args = memchr(name, 0, end - name);
	if (!args || ++args > end)
		return;
	if (args == end || !memchr(args, 0, end - args))
		args = "";
	/* a prelinked object moved: the note says where .stapsdt.base was at link time */
	if (have_base && note_base)
		addr += base_addr - note_base;
	out->v = xrealloc(out->v, out->cnt + 1, sizeof(*out->v));
	p = &out->v[out->cnt];
	memset(p, 0, sizeof(*p));
	if (!vaddr_to_offset(elf, nph, fsize, addr, &p->offset))
		return;
	if (sema && !vaddr_to_offset(elf, nph, fsize, sema, &p->sema_offset))
		return;
	p->provider = xstrdup(provider);
	p->name = xstrdup(name);
	p->addr = addr;
	p->args_text = xstrdup(args);
	p->nargs = usdt_args__parse(args, p->args, USDT_MAX_ARGS);
	p->args_ok = p->nargs >= 0;
	if (p->nargs < 0)
		p->nargs = 0;
	out->cnt++;
}

int usdt__read_fd(int fd, struct usdt_probes *out)
{
	uint64_t base_addr = 0;
	bool have_base = false;
	Elf_Scn *scn = NULL;
	size_t shstrndx, nph;
	struct stat st;
	Elf *elf;

	memset(out, 0, sizeof(*out));
	if (fstat(fd, &st))
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx) ||
	    elf_getphdrnum(elf, &nph) || gelf_getclass(elf) != ELFCLASS64) {
		if (elf)
			elf_end(elf);
		return -ENOEXEC;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (gelf_getshdr(scn, &sh) && (n = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    !strcmp(n, ".stapsdt.base")) {
			base_addr = sh.sh_addr;
			have_base = true;
		}
	}
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		GElf_Shdr sh;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type != NT_STAPSDT || nh.n_namesz != 8 ||
			    memcmp((char *)data->d_buf + name_off, "stapsdt", 8) ||
			    desc_off + nh.n_descsz > data->d_size)
				continue;
			add_note(out, elf, nph, st.st_size,
				 (const uint8_t *)data->d_buf + desc_off, nh.n_descsz, base_addr,
				 have_base);
		}
	}
	elf_end(elf);
	return 0;
}

int usdt__read(const char *path, struct usdt_probes *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = usdt__read_fd(fd, out);
	close(fd);
	return ret;
}

void usdt_probes__free(struct usdt_probes *p)
{
	for (size_t i = 0; i < p->cnt; i++) {
		free(p->v[i].provider);
		free(p->v[i].name);
		free(p->v[i].args_text);
	}
	free(p->v);
	memset(p, 0, sizeof(*p));
}
