/* SPDX-License-Identifier: MIT */
/* The processes being traced and their probes: the ones asked for, children (followed), every
 * process mapping a probed object (-a); libraries they load later (dlopen) are found by
 * rescanning their maps and probed too. */
#ifndef TRACER_TRACKED_H
#define TRACER_TRACKED_H

#include "record/attach.h"
#include "probe/resolve.h"
#include "record/target.h"
#include "record/exception_hooks.h"

struct bpf_map;

/* A probe pack whose library no target maps yet (no -u/-P given): it is picked, and its probes
 * attached, when a target maps it (an `import cv2`, a dlopen). */
struct late_pack {
	struct probe_pack pack;
	struct probe_specs *specs; /* allocated once: the probe table points into it */
	bool picked;
};

struct tracked {
	struct target *targets; /* opened processes; objs[0..resolved[i]) are probed */
	size_t *resolved;
	size_t ntargets;
	struct probe_table probes;
	struct attachment attachment;
	const struct probe_specs *specs;
	struct late_pack *late; /* see tracked__add_late_pack */
	size_t nlate;
	unsigned int resolve_flags; /* RESOLVE_ENTRY_ONLY, RESOLVE_SHARED */
	/* with shared links (pid 0): the objects already probed, by (dev, inode) */
	struct {
		dev_t dev;
		ino_t ino;
	} *linked;
	size_t nlinked;
	struct bpf_program *enter, *exit;
	struct bpf_map *targets_map, *cfg_map;
	struct bpf_map *usdt_map; /* how USDT probes fetch their arguments */
	struct exception_hooks exceptions; /* where C++ exceptions end calls */
	struct sym_cache syms; /* the objects' symbols, read once for every process mapping them */
	bool no_args;
};

/* Opens pid (and its objects) and marks it traced in the BPF targets map if that is set. */
int tracked__add(struct tracked *t, int pid, char *err, size_t errlen);
/* Closes the target tracked__add added last (not probed yet). */
void tracked__drop_last(struct tracked *t);
/* Resolves the specs against the objects not probed yet and attaches them. strict: a spec that
 * matches nothing is an error (the first attach); later ones are lenient. */
int tracked__attach_new(struct tracked *t, bool strict, char *err, size_t errlen);
/* Keeps a pack (loaded with its specs) to pick when a target maps one of its "when" objects. */
void tracked__add_late_pack(struct tracked *t, struct probe_pack *pack,
			    struct probe_specs *specs);
/* Re-reads the maps of every target and picks the late packs that now apply; returns how many
 * new objects were probed, or -errno. */
int tracked__rescan(struct tracked *t, char *err, size_t errlen);
/* Closes the links that probe process pid alone (it exited, or exec'd another program); the
 * links shared by every process (--follow, -a) stay. */
void tracked__release(struct tracked *t, int pid);
/* The index of pid among the targets, or -1. */
int tracked__find(const struct tracked *t, int pid);
/* -a: every executable object any process maps now, as one pseudo-target (pid 0), plus files
 * in the library folders matching the specs' object globs. */
int tracked__add_system(struct tracked *t, char *err, size_t errlen);
void tracked__free(struct tracked *t);

#endif
