/* SPDX-License-Identifier: MIT */
/* Exception hooks. Where C++ exceptions unwind through probed functions, their calls end at
 * their own exits (probe/resolve.h: no return probe, whose trampoline in the return slot would
 * make the unwinder abort the process), and a call an exception unwinds reaches none. So the
 * throw (the unwinder's entry points) and the catch (__cxa_begin_catch) are probed too, wherever
 * the process defines them (libgcc_s, libstdc++, or copies linked into the program or a probed
 * library): the unwound calls end when the thread is next seen above them, marked "exception". */
#ifndef TRACER_EXCEPTION_HOOKS_H
#define TRACER_EXCEPTION_HOOKS_H

#include "record/attach.h"
#include "probe/sym_index.h"
#include "record/target.h"

struct exception_hooks {
	struct bpf_program *prog; /* on_exception */
	struct attachment links;
	struct {
		int pid; /* 0: shared links, every process mapping the object */
		dev_t dev;
		ino_t ino;
	} *seen; /* objects already looked at, hooked or not */
	size_t nseen;
};

/* Hooks throws and catches in the objects of target tg (pid: its links' pid, 0 when shared)
 * not looked at yet, if sites has exits for it (at_exit sites of that pid); their symbols are
 * read through cache. 0, or -errno with err set. */
int exception_hooks__add(struct exception_hooks *h, const struct target *tg, int pid,
			 const struct attach_sites *sites, struct sym_cache *cache, char *err,
			 size_t errlen);
/* Releases the hooks of process pid (exited, or exec'd another program) and what was looked at
 * in it. */
void exception_hooks__forget(struct exception_hooks *h, int pid);
void exception_hooks__free(struct exception_hooks *h);

#endif
