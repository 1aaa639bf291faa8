// SPDX-License-Identifier: MIT
#include "record/exception_hooks.h"
#include "elf/elf_syms.h"
#include "probe/resolve.h"
#include "util/util.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

/* Where an exception starts unwinding, and where its handler starts. */
static const struct {
	const char *name;
	uint64_t hook; /* enum exception_hook: the link's cookie */
} hooks[] = {
	{ "_Unwind_RaiseException", EXC_THROW },    /* throw, std::rethrow_exception */
	{ "_Unwind_Resume_or_Rethrow", EXC_THROW }, /* throw; */
	{ "_Unwind_ForcedUnwind", EXC_THROW },	    /* pthread_exit, pthread_cancel */
	{ "__cxa_begin_catch", EXC_CATCH },
};

/* The C++ runtimes and unwinders that define them. */
static const char *const runtimes[] = { "libgcc_s.so*", "libstdc++.so*", "libc++abi.so*",
					"libc++.so*", "libunwind.so*" };

static bool has_exits(const struct attach_sites *sites, int pid, const struct mapped_object *o)
{
	for (size_t i = 0; i < sites->cnt; i++)
		if (sites->v[i].pid == pid && sites->v[i].at_exit &&
		    (!o || (sites->v[i].dev == o->dev && sites->v[i].ino == o->ino)))
			return true;
	return false;
}

static bool seen(struct exception_hooks *h, int pid, const struct mapped_object *o)
{
	for (size_t i = 0; i < h->nseen; i++)
		if (h->seen[i].pid == pid && h->seen[i].dev == o->dev && h->seen[i].ino == o->ino)
			return true;
	h->seen = xrealloc(h->seen, h->nseen + 1, sizeof(*h->seen));
	h->seen[h->nseen].pid = pid;
	h->seen[h->nseen].dev = o->dev;
	h->seen[h->nseen++].ino = o->ino;
	return false;
}

/* The runtimes, the program, and the probed objects (a runtime can be linked into them). */
static bool may_define(const struct mapped_object *o, int pid, const struct attach_sites *sites)
{
	for (size_t i = 0; i < sizeof(runtimes) / sizeof(runtimes[0]); i++)
		if (!fnmatch(runtimes[i], o->base, 0))
			return true;
	return o->is_exe || has_exits(sites, pid, o);
}

static void find_hooks(const struct mapped_object *o, int pid, struct sym_cache *cache,
		       struct attach_sites *sites)
{
	const struct elf_syms *syms = sym_cache__get(cache, o);

	if (!syms)
		return;
	for (size_t i = 0; i < sizeof(hooks) / sizeof(hooks[0]); i++) {
		const struct elf_sym *s = elf_syms__find(syms, hooks[i].name);

		/* defined here (an import has no code in this object) */
		if (s && s->global && !s->ifunc && s->offset)
			attach_sites__add(sites, pid, o, s->offset, hooks[i].hook, true, false);
	}
}

int exception_hooks__add(struct exception_hooks *h, const struct target *tg, int pid,
			 const struct attach_sites *sites, struct sym_cache *cache, char *err,
			 size_t errlen)
{
	struct attach_sites found = { 0 };
	int ret = 0;

	if (!h->prog || !has_exits(sites, pid, NULL))
		return 0;
	for (size_t k = 0; k < tg->nobjs; k++)
		if (may_define(&tg->objs[k], pid, sites) && !seen(h, pid, &tg->objs[k]))
			find_hooks(&tg->objs[k], pid, cache, &found);
	for (size_t i = 0; i < found.cnt; i++)
		pr_debug("pid %d: %zu exception hooks in %s", tg->pid, found.v[i].cnt,
			 found.v[i].object);
	if (found.cnt)
		ret = attach__sites(&h->links, &found, h->prog, h->prog, err, errlen);
	attach_sites__free(&found);
	return ret;
}

void exception_hooks__forget(struct exception_hooks *h, int pid)
{
	size_t k = 0;

	attach__release_pid(&h->links, pid);
	for (size_t i = 0; i < h->nseen; i++)
		if (h->seen[i].pid != pid)
			h->seen[k++] = h->seen[i];
	h->nseen = k;
}

void exception_hooks__free(struct exception_hooks *h)
{
	attach__detach(&h->links);
	free(h->seen);
	h->seen = NULL;
	h->nseen = 0;
}
