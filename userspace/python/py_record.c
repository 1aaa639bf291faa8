// SPDX-License-Identifier: MIT
#include "python/py_record.h"
#include "util/util.h"
#include "tracer.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

void py_record__configure(struct py_record *p, struct tracer_bpf *skel, const char *off,
			  unsigned int hz)
{
	memset(p, 0, sizeof(*p));
	p->enabled = !off;
	p->off = off;
	p->hz = hz ? hz : PY_DEFAULT_HZ;
	p->skel = skel;
	if (p->enabled) {
		/* processes are added (and read by BPF) before the trace exists */
		p->session = py_session__new(NULL, NULL, NULL);
		/* attached with the tick, once there is a Python process to read */
		bpf_program__set_autoattach(skel->progs.py_on_switch, false);
		return;
	}
	bpf_program__set_autoload(skel->progs.py_on_switch, false);
	bpf_program__set_autoload(skel->progs.py_on_tick, false);
	bpf_program__set_autoload(skel->progs.py_on_fork, false);
	bpf_program__set_autoload(skel->progs.py_on_exec, false);
	bpf_program__set_autoload(skel->progs.py_on_exit, false);
}

/* The tick and the switch program run only once there is a Python process to read: other
 * targets pay nothing (a program on every context switch costs even when it returns at once). */
static void start_ticks(struct py_record *p)
{
	int err;

	if (!p->started || !p->nprocs)
		return;
	if (!p->switch_link && !p->switch_failed) {
		p->switch_link = bpf_program__attach(p->skel->progs.py_on_switch);
		if (!p->switch_link) {
			err = -errno;
			p->switch_failed = true;
			pr_warn("cannot read Python stacks when threads leave the CPU: %s",
				strerror(-err));
		}
	}
	if (p->ticks.nlinks || p->tick_failed)
		return;
	err = py_ticks__attach(&p->ticks, p->skel->progs.py_on_tick, p->hz);
	if (!err) /* each thread on a CPU is read at least this often */
		py_session__set_tick(p->session,
				     (uint64_t)(1e9 / p->hz * (1 + PY_TICK_DITHER)));
	if (err) {
		p->tick_failed = true;
		pr_warn("cannot start the %u Hz tick that reads Python stacks: %s; they are read "
			"only when threads leave the CPU and at probe hits",
			p->hz, strerror(-err));
	}
}

void py_record__dither(struct py_record *p)
{
	py_ticks__dither(&p->ticks);
}

static void add_now(struct py_record *p, int pid)
{
	struct py_proc_cfg cfg;
	__u32 key = pid;
	int ret;

	ret = py_session__add_pid(p->session, pid, &cfg);
	pr_debug("pid %d: Python frames: %d", pid, ret);
	if (ret == -ENOTSUP)
		p->any_unsupported = true;
	if (ret <= 0)
		return;
	if (bpf_map__update_elem(p->skel->maps.py_procs, &key, sizeof(key), &cfg, sizeof(cfg),
				 BPF_ANY)) {
		pr_warn("pid %d: cannot read its Python frames: %s", pid, strerror(errno));
		return;
	}
	p->nprocs++;
	p->skel->bss->py_active = 1;
	pr_debug("pid %d runs CPython: reading its frames", pid);
	start_ticks(p);
}

void py_record__add_pid(struct py_record *p, int pid)
{
	if (!p->enabled || pid <= 0)
		return;
	add_now(p, pid);
}

void py_record__add_child(struct py_record *p, int pid, int parent)
{
	if (p->session && py_session__is_python(p->session, parent)) {
		py_session__add_child(p->session, pid, parent);
		p->nprocs++;
		start_ticks(p);
	}
}

void py_record__open(struct py_record *p, struct trace_writer *w,
		     const struct py_session_ops *ops, void *ctx)
{
	if (p->session)
		py_session__open(p->session, w, ops, ctx);
}

int py_record__start(struct py_record *p)
{
	if (!p->enabled)
		return 0;
	p->started = true;
	start_ticks(p);
	return 0;
}

void py_record__stop(struct py_record *p)
{
	p->started = false;
	py_ticks__detach(&p->ticks);
	bpf_link__destroy(p->switch_link); /* no read may come after the recording's end */
	p->switch_link = NULL;
}

void py_record__finish(struct py_record *p, uint64_t end_ns)
{
	if (p->session)
		py_session__finish(p->session, end_ns);
}

void py_record__print(const struct py_record *p, FILE *f, const uint64_t *c, uint64_t cpu_ns)
{
	uint64_t spans, reads, partial;
	size_t procs;
	char took[32];

	if (!p->enabled) {
		fprintf(f, "python: frames off (%s)\n", p->off);
		return;
	}
	if (!p->session || !p->nprocs) {
		if (p->any_unsupported)
			fprintf(f, "python: no frames (the interpreter's version is not supported)\n");
		return;
	}
	py_session__stats(p->session, &procs, &spans, &reads, &partial);
	fmt_duration(c[CNT_PY_NS], took, sizeof(took));
	fprintf(f, "python: %" PRIu64 " function spans from %" PRIu64 " stack reads (%" PRIu64
		   " changed, %u Hz tick) in %zu process%s; reading took %s",
		spans, c[CNT_PY_CHECKS], c[CNT_PY_READS], p->hz, procs, procs == 1 ? "" : "es",
		took);
	if (cpu_ns)
		fprintf(f, " (%.2f%% of the targets' CPU time)", 100.0 * c[CNT_PY_NS] / cpu_ns);
	fprintf(f, "\n");
	py_session__describe(p->session, f);
	if (partial || c[CNT_LOST_PY])
		fprintf(f, "python: %" PRIu64 " reads too deep or unreadable, %" PRIu64
			   " lost (ring buffer full)\n",
			partial, c[CNT_LOST_PY]);
	/* Any thread of a Python process that runs has a thread state with a stack: reads that
	 * never found one are a reader that does not work here (as on 6.1 once), not a quiet 0. */
	if (c[CNT_PY_CHECKS] && !c[CNT_PY_READS]) {
		struct utsname u;

		if (uname(&u))
			snprintf(u.release, sizeof(u.release), "?");
		fprintf(f, "tracer: error: python: none of %" PRIu64 " stack reads found a Python "
			   "thread; the trace has no Python frames (kernel %s: run make check-kernels, "
			   "or report it)\n",
			c[CNT_PY_CHECKS], u.release);
	}
}

void py_record__add_json(const struct py_record *p, struct cJSON *meta, const uint64_t *c)
{
	uint64_t spans = 0, reads = 0, partial = 0;
	size_t procs = 0;
	cJSON *o = cJSON_AddObjectToObject(meta, "python"), *interps;

	cJSON_AddBoolToObject(o, "enabled", p->enabled);
	if (p->off)
		cJSON_AddStringToObject(o, "off", p->off);
	cJSON_AddNumberToObject(o, "tick_hz", p->hz);
	if (p->session)
		py_session__stats(p->session, &procs, &spans, &reads, &partial);
	cJSON_AddNumberToObject(o, "processes", procs);
	cJSON_AddNumberToObject(o, "spans", spans);
	cJSON_AddNumberToObject(o, "reads", c[CNT_PY_CHECKS]);
	cJSON_AddNumberToObject(o, "reads_changed", c[CNT_PY_READS]);
	cJSON_AddNumberToObject(o, "reads_partial", partial);
	cJSON_AddNumberToObject(o, "read_ns", c[CNT_PY_NS]);
	interps = cJSON_AddArrayToObject(o, "interpreters");
	if (p->session)
		py_session__add_json(p->session, interps);
}

void py_record__free(struct py_record *p)
{
	py_ticks__detach(&p->ticks);
	bpf_link__destroy(p->switch_link);
	p->switch_link = NULL;
	py_session__free(p->session);
	p->session = NULL;
}
