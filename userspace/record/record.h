/* SPDX-License-Identifier: MIT */
/* `tracer record`: resolve, load, attach, run the event loop, finish the trace. */
#ifndef TRACER_RECORD_H
#define TRACER_RECORD_H

#include "probe/probe_spec.h"

#include <stdbool.h>
#include <stdint.h>

struct record_opts {
	int *pids;
	size_t npids;
	char **cmd; /* launch mode: the command and its arguments (NULL-terminated) */
	struct probe_specs specs; /* from -u, in order */
	char **packs;		  /* -P names or paths */
	size_t npacks;
	char **no_packs; /* --no-pack: names left out of the automatic choice ("all": every one) */
	size_t nno_packs;
	uint64_t duration_ns; /* 0: until stopped */
	uint64_t min_dur_ns;
	const char *output; /* NULL: tracer-COMM-PID-TIME.json */
	char *to;	    /* --to: a ClickHouse URL the file is pushed to when it is written */
	bool no_sched;
	bool entry_only; /* no return probes: every call an instant */
	bool no_args;	 /* read nothing from the target's memory: no args, name_from, queues */
	bool start_paused;
	bool follow;	  /* children and exec'd programs of the targets too (the default) */
	bool no_follow;	  /* --no-follow: the targets only */
	/* --follow, the default said: a spec may match only programs they exec later, so one
	 * that matches nothing in the targets now is not an error */
	bool follow_given;
	bool system_wide; /* -a: every process that maps a probed object */
	uint32_t buffer_mb;
	uint64_t max_size; /* bytes; 0: no limit */
	double max_overhead; /* --max-overhead, percent of the targets' CPU time; 0: none */
	bool no_python;	   /* no Python frames, even in a CPython target */
	unsigned int py_hz; /* the on-CPU tick that reads Python stacks */
	bool top;	    /* tracer top: a live view; a file only with -o */
	int top_sort;	    /* top --sort: an enum report_sort (analyze/report.h) */
};

/* Returns the process exit status: 0 recorded, 1 failed; in launch mode, the command's. */
int record__run(struct record_opts *opts);

#endif
