/* SPDX-License-Identifier: MIT */
/* Resolve: probe specs x the targets' mapped ELF objects -> the probe table (one entry per
 * probed function, indexed by the BPF cookie) and the sites to attach per process and object. */
#ifndef TRACER_RESOLVE_H
#define TRACER_RESOLVE_H

#include "events.h"
#include "elf/insn.h"
#include "elf/site.h"
#include "probe/probe_spec.h"
#include "probe/sym_index.h"
#include "record/target.h"

#include <stdint.h>
#include <uthash.h>

struct probe {
	enum category cat;
	char *name;	/* span name */
	char *function; /* symbol name */
	char *object;	/* basename of the object */
	dev_t dev;
	ino_t ino;
	uint64_t offset; /* file offset of the function */
	uint64_t size;	 /* the function's size (st_size; 0: unknown) */
	uint64_t site;	 /* file offset the probes go on: offset, or past single-stepped
			  * instructions (elf/site.h) */
	char *site_past; /* what the site moved past ("endbr64"), or NULL */
	struct site_exit *exits; /* where its calls end, probed instead of its return (elf/site.h) */
	size_t nexits;
	enum insn_class exits_cls; /* what a hit on them costs: the costliest */
	bool placed;	 /* site chosen */
	const struct probe_spec *spec;
	struct probe_cfg cfg; /* what the BPF programs capture: spec's arguments, in order */
	int queue_slot;	      /* index in the captured arguments of the queue's identity */
	struct usdt_cfg usdt; /* PROBE_USDT: how its arguments are fetched */
};

struct probe_site_key {
	dev_t dev;
	ino_t ino;
	uint64_t offset;
};

struct probe_table {
	struct probe *v;
	size_t cnt, cap;
	/* each probe by its object and offset: one probe per function, found in O(1) */
	struct probe_site {
		struct probe_site_key key;
		int id;
		UT_hash_handle hh;
	} *by_site;
};

/* Everything to attach in one process's mapping of one object: one uprobe_multi link each for
 * entries and returns. */
struct attach_site {
	int pid; /* 0: every process mapping the object (filtered by tgid in BPF) */
	dev_t dev;
	ino_t ino;
	const char *path; /* the object's open_path in that target */
	const char *object;
	uint64_t *offsets;
	uint64_t *cookies; /* probe ids */
	uint64_t *ref_ctr_offsets; /* USDT semaphores (file offsets, 0: none), or NULL */
	size_t cnt, cap;
	bool entry_only; /* no return probes for these */
	bool usdt_end;	 /* the ends of USDT start/end pairs (another program) */
	bool at_exit;	 /* a function's own returns and tail calls (another program) */
};

struct attach_sites {
	struct attach_site *v;
	size_t cnt;
};

/* Every spec must match at least one function in some target; otherwise err says which spec
 * matched nothing and suggests near names. 0 or -ENOENT / -errno. */
enum resolve_flags {
	RESOLVE_ENTRY_ONLY = 1, /* no return probes at all (--entry-only) */
	RESOLVE_LENIENT = 2,	/* a spec that matches nothing here is fine (objects found later) */
	RESOLVE_SHARED = 4,	/* sites for every process mapping the object (pid 0) */
};

/* Appends to table and sites. Objects built by Go never get return probes (moving stacks
 * crash with them). */
int resolve__probes(const struct probe_specs *specs, struct target *targets, size_t ntargets,
		    unsigned int flags, struct probe_table *table, struct attach_sites *sites,
		    char *err, size_t errlen);
/* The same with the symbols the caller keeps from one resolution to the next (each followed
 * child maps the objects its parent did: read once). */
int resolve__probes_cached(const struct probe_specs *specs, struct target *targets,
			   size_t ntargets, unsigned int flags, struct probe_table *table,
			   struct attach_sites *sites, struct sym_cache *cache, char *err,
			   size_t errlen);

/* Adds a function's site (offset in o, probe id cookie) to the sites of pid's mapping of o
 * of that kind (entry_only: no return probe; at_exit: one of its exits). */
/* The cookie of a probe's exit site: its id, and how the exit program finds the call there. */
uint64_t site_exit__cookie(const struct site_exit *e, uint32_t id);
void attach_sites__add(struct attach_sites *sites, int pid, const struct mapped_object *o,
		       uint64_t offset, uint64_t cookie, bool entry_only, bool at_exit);
/* Whether the spec's "exclude" leaves out the function of this symbol (its name, or its
 * demangled name with or without parameters, is like one of the globs). */
bool probe_spec__excludes(const struct probe_spec *s, const char *sym);

void probe_table__free(struct probe_table *table);
void attach_sites__free(struct attach_sites *sites);

#endif
