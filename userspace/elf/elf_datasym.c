// SPDX-License-Identifier: MIT
#include "elf/elf_datasym.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>

static int find_in(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, const char *name,
		   struct elf_datasym *out)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n;

	if (!data || !sh->sh_entsize)
		return -ENOENT;
	n = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < n; i++) {
		const char *s;
		GElf_Sym sym;

		if (!gelf_getsym(data, i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_OBJECT ||
		    sym.st_shndx == SHN_UNDEF)
			continue;
		s = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (s && !strcmp(s, name)) {
			out->value = sym.st_value;
			out->size = sym.st_size;
			return 0;
		}
	}
	return -ENOENT;
}

int elf_datasym__find(int fd, const char *name, struct elf_datasym *out)
{
	static const GElf_Word kinds[] = { SHT_DYNSYM, SHT_SYMTAB };
	int ret = -ENOENT;
	GElf_Ehdr eh;
	size_t nph;
	Elf *elf;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    elf_getphdrnum(elf, &nph)) {
		ret = -ENOEXEC;
		goto out;
	}
	memset(out, 0, sizeof(*out));
	out->pie = eh.e_type == ET_DYN;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD) {
			out->load_vaddr = ph.p_vaddr & ~(uint64_t)0xfff;
			break;
		}
	}
	for (size_t k = 0; k < 2 && ret == -ENOENT; k++) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(elf, scn)) && ret == -ENOENT) {
			GElf_Shdr sh;

			if (gelf_getshdr(scn, &sh) && sh.sh_type == kinds[k])
				ret = find_in(elf, scn, &sh, name, out);
		}
	}
out:
	if (elf)
		elf_end(elf);
	return ret;
}
