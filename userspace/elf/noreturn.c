// SPDX-License-Identifier: MIT
#include "elf/noreturn.h"
#include "elf/elf_syms.h"
#include "util/util.h"

#include <ctype.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int noreturn__name(const char *name)
{
	static const char *const names[] = {
		"__stack_chk_fail", "__stack_chk_fail_local", "__fortify_fail", "__chk_fail",
		"abort", "exit", "_exit", "_Exit", "quick_exit", "__assert_fail",
		"__assert_perror_fail", "pthread_exit", "longjmp", "siglongjmp", "__longjmp_chk",
		"__cxa_throw", "__cxa_rethrow", "__cxa_bad_cast", "__cxa_bad_typeid",
		"__cxa_throw_bad_array_new_length", "__cxa_pure_virtual", "_Unwind_Resume",
		"_ZSt9terminatev",
	};
	const char *p;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return 1;
	/* std::__throw_logic_error and the like: _ZSt<len>__throw_... */
	if (strncmp(name, "_ZSt", 4))
		return 0;
	for (p = name + 4; isdigit((unsigned char)*p); p++)
		;
	return p > name + 4 && !strncmp(p, "__throw_", 8);
}

struct u64s {
	uint64_t *v;
	size_t n;
};

static void add(struct u64s *s, uint64_t x)
{
	s->v = xrealloc(s->v, s->n + 1, sizeof(uint64_t));
	s->v[s->n++] = x;
}

/* The GOT slots (virtual addresses) .rela.plt binds to noreturn functions. */
static void noreturn_slots(Elf *elf, Elf_Scn *rela, const GElf_Shdr *sh, struct u64s *slots)
{
	Elf_Scn *symscn = elf_getscn(elf, sh->sh_link);
	GElf_Shdr symsh;
	Elf_Data *d = elf_getdata(rela, NULL), *syms;

	if (!d || !symscn || !gelf_getshdr(symscn, &symsh) || !(syms = elf_getdata(symscn, NULL)) ||
	    !sh->sh_entsize)
		return;
	for (size_t i = 0; i < sh->sh_size / sh->sh_entsize; i++) {
		GElf_Rela r;
		GElf_Sym sym;
		const char *name;

		if (!gelf_getrela(d, i, &r) || GELF_R_TYPE(r.r_info) != R_X86_64_JUMP_SLOT ||
		    !gelf_getsym(syms, GELF_R_SYM(r.r_info), &sym))
			continue;
		name = elf_strptr(elf, symsh.sh_link, sym.st_name);
		if (name && noreturn__name(name))
			add(slots, r.r_offset);
	}
}

/* Each 16-byte stub of a PLT section whose `jmp *slot(%rip)` goes through one of slots. */
static void noreturn_stubs(Elf_Scn *plt, const GElf_Shdr *sh, const struct u64s *slots,
			   struct u64s *out)
{
	Elf_Data *d = elf_getdata(plt, NULL);
	static const size_t at[] = { 0, 4, 5 }; /* plain; after endbr64; after endbr64 and bnd */

	if (!d || !d->d_buf || d->d_size < sh->sh_size)
		return;
	for (uint64_t k = 0; k + 16 <= sh->sh_size; k += 16) {
		const uint8_t *e = (const uint8_t *)d->d_buf + k;

		for (size_t j = 0; j < 3; j++) {
			int32_t disp;
			uint64_t slot;

			if (e[at[j]] != 0xff || e[at[j] + 1] != 0x25)
				continue;
			memcpy(&disp, e + at[j] + 2, 4);
			slot = sh->sh_addr + k + at[j] + 6 + (int64_t)disp;
			for (size_t s = 0; s < slots->n; s++)
				if (slots->v[s] == slot)
					add(out, sh->sh_offset + k);
			break;
		}
	}
}

void noreturn__find(int fd, const struct elf_syms *syms, uint64_t **out, size_t *n)
{
	struct u64s slots = { 0 }, found = { 0 };
	Elf *elf;
	size_t shstrndx;

	for (size_t i = 0; syms && i < syms->cnt; i++)
		if (noreturn__name(syms->syms[i].name))
			add(&found, syms->syms[i].offset);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && !elf_getshdrstrndx(elf, &shstrndx)) {
		Elf_Scn *scn = NULL;
		GElf_Shdr sh;

		while ((scn = elf_nextscn(elf, scn)))
			if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_RELA &&
			    !strcmp(elf_strptr(elf, shstrndx, sh.sh_name) ?: "", ".rela.plt"))
				noreturn_slots(elf, scn, &sh, &slots);
		while (slots.n && (scn = elf_nextscn(elf, scn))) {
			const char *name;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
				continue;
			name = elf_strptr(elf, shstrndx, sh.sh_name);
			if (name && (!strcmp(name, ".plt") || !strcmp(name, ".plt.sec")))
				noreturn_stubs(scn, &sh, &slots, &found);
		}
	}
	if (elf)
		elf_end(elf);
	free(slots.v);
	if (found.n)
		qsort(found.v, found.n, sizeof(uint64_t), cmp_u64);
	*out = found.v;
	*n = found.n;
}
