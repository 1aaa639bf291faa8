/* SPDX-License-Identifier: MIT */
/* What to probe: `-u CATEGORY:OBJECT:FUNCTION` specs and probe packs (probes/NAME.json). */
#ifndef TRACER_PROBE_SPEC_H
#define TRACER_PROBE_SPEC_H

#include <stdbool.h>
#include <stddef.h>

enum category {
	CAT_DECODE,
	CAT_OPERATOR,
	CAT_QUEUE,
	CAT_IO,
	CAT_OTHER,
	CAT_GIL,    /* waiting to take Python's GIL back */
	CAT_PYTHON, /* Python function spans (python/), not a probe's category */
	CAT_ENCODE, /* after the others: the JSON's category lists keep their order */
	CAT_MAX,
};

const char *category__name(enum category cat);
int category__parse(const char *s, enum category *cat);

#define SPEC_MAX_ARGS 4 /* MAX_ARGS in bpf/events.h */
#define SPEC_MAX_NAME_DEREFS 4 /* MAX_NAME_DEREFS in bpf/events.h */
#define ARG_RET (-1)	/* the return value, in place of an argument index */

/* A value captured into the span's args: argument idx (0-5) or the return value. */
struct arg_spec {
	char *key;
	int idx;
	bool hex; /* a pointer or identity: written as a "0x..." string */
};

enum queue_role {
	QUEUE_NONE,
	QUEUE_PUSH,
	QUEUE_POP,
};

struct probe_spec {
	enum category cat;
	char *object;	/* glob over the basenames of mapped ELF files; "*" for all */
	char *function; /* glob over symbol names */
	char *name;	/* span name; NULL: the function's own name */
	char *origin;	/* where the spec came from, for messages: "-u 'x'", "pack.json:12" */
	int name_arg;	/* name each span from the string at this argument; -1: no */
	int name_nderef; /* ... or at the end of this many pointers followed from it */
	unsigned name_deref[SPEC_MAX_NAME_DEREFS]; /* offsets of those pointers (struct_fields.h) */
	struct arg_spec args[SPEC_MAX_ARGS + 1]; /* at most SPEC_MAX_ARGS arguments and ret */
	int nargs;
	bool entry_only; /* no return probe: each call is an instant */
	bool python_wait; /* a wait inside the interpreter (a lock, the GIL): PROBE_PY_WAIT */
	/* A span named from the target (name_from) like one of these globs takes its category
	 * (a GStreamer push into a queue element is a wait for room, into a decoder decoding). */
	struct name_category {
		char *glob;
		enum category cat;
	} *by_name;
	int nby_name;
	char **exclude; /* globs: functions the function glob matches that are left out */
	int nexclude;
	bool optional;	 /* a pack's probe: matching nothing in a target is not an error */
	enum queue_role queue_role; /* a push or pop of the queue identified by queue_arg */
	int queue_arg;
	/* A USDT probe (function "usdt:PROVIDER:NAME[..END]"; in packs "usdt" and "usdt_end")
	 * instead of a function: a span from NAME to END on the same thread, or an instant. */
	char *usdt_provider, *usdt_name, *usdt_end;
};

/* The category of a span of this spec named name (from name_from): the first glob of its
 * category_by_name that matches, else the spec's. */
enum category probe_spec__category_of(const struct probe_spec *s, const char *name);

/* Parses "PROVIDER:NAME[..END]" (globs; END a name of the same provider). 0 or -EINVAL. */
int usdt_spec__parse(struct probe_spec *s, const char *text);

/* Whether an object glob names the object with this file name. As in bpftrace, a name without
 * ".so" also matches its versioned library: "libavcodec" is libavcodec.so.59, "libgstvideo"
 * libgstvideo-1.0.so.0. */
bool probe_spec__object_matches(const char *glob, const char *base);

struct probe_pack {
	char *name;
	char *description;
	char *path;
	char **when_maps; /* globs: the pack applies to a process mapping one of these */
	size_t when_cnt;
};

struct probe_specs {
	struct probe_spec *v;
	size_t cnt;
};

/* Parses one `-u` spec and appends it. 0 or -EINVAL with a message in err. */
int probe_specs__add_spec(struct probe_specs *specs, const char *text, char *err, size_t errlen);

/* Parses a pack from JSON text; path is used for messages ("path:line: what"). Appends its
 * probes to specs when specs is not NULL. 0 or -EINVAL with the message in err. */
int probe_pack__parse(const char *text, const char *path, struct probe_pack *pack,
		      struct probe_specs *specs, char *err, size_t errlen);

/* Reads and parses a pack file. */
int probe_pack__load(const char *path, struct probe_pack *pack, struct probe_specs *specs,
		     char *err, size_t errlen);

/* The path of the pack called name (a path, or a name looked up in the packs folder). */
int probe_pack__find(const char *name, char *path, size_t len);

/* Every pack in the packs folder, sorted by name. Returns how many or -errno. */
int probe_pack__list(struct probe_pack **packs);

void probe_pack__free(struct probe_pack *pack);
void probe_specs__free(struct probe_specs *specs);

/* The folder probe packs are read from: $TRACER_PROBES, else probes/ beside the build, else
 * share/tracer/probes beside the installed binary. */
const char *probe_pack__dir(void);

#endif
