// SPDX-License-Identifier: MIT
#include "python/py_session.h"
#include "python/py_code.h"
#include "python/py_proc.h"
#include "python/py_spans.h"
#include "python/py_threads.h"
#include "trace/json_text.h"
#include "trace/trace_writer.h"
#include "util/util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct py_session {
	struct trace_writer *writer;
	const struct py_session_ops *ops;
	void *ctx;
	struct py_spans *spans;
	struct py_codes *codes;
	struct py_proc *procs;
	size_t nprocs;
	uint64_t nspans;
	uint64_t named_at; /* threads seen when names were last read */
	bool name_again;   /* read them once more at the next tick */
	bool warned;
};

static const struct py_proc *proc_of(const struct py_session *s, int pid)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

bool py_session__is_python(const struct py_session *s, int pid)
{
	return proc_of(s, pid) != NULL;
}

/* Named when first seen, while a frame still holds the code object. */
static uint64_t on_opened(void *ctx, int pid, const struct py_frame *f)
{
	struct py_session *s = ctx;
	const struct py_proc *p = proc_of(s, pid);

	return p ? (uintptr_t)py_codes__get(s->codes, pid, &p->off, f->code, f->name,
						    f->name_fp)
		 : 0;
}

static void on_span(void *ctx, int pid, int tid, const struct py_open *o, uint64_t end,
		    bool incomplete)
{
	struct py_session *s = ctx;
	struct span_rec r = { .type = REC_SPAN, .pid = pid, .tid = tid, .start_ns = o->start,
			      .end_ns = end, .flags = incomplete ? SPAN_INCOMPLETE : 0 };
	const struct py_code *code = (const struct py_code *)(uintptr_t)o->tag;
	char args[1200], file[1024];

	if (!code || !s->writer)
		return;
	json_escape(file, sizeof(file), code->filename, strlen(code->filename));
	snprintf(args, sizeof(args), "\"file\":\"%s\",\"line\":%d", file, code->firstlineno);
	trace_writer__span(s->writer, &r, code->qualname, "python", args);
	s->nspans++;
	if (s->ops && s->ops->span)
		s->ops->span(s->ctx, code->qualname, &r);
}

/* A wait for the GIL the scheduler saw: as the python-gil pack's spans, under its function. */
static void on_gil(void *ctx, int pid, int tid, uint64_t start, uint64_t end, bool incomplete,
		   const struct py_open *in)
{
	struct py_session *s = ctx;
	struct span_rec r = { .type = REC_SPAN, .pid = pid, .tid = tid, .start_ns = start,
			      .end_ns = end, .flags = incomplete ? SPAN_INCOMPLETE : 0 };
	const struct py_code *code = in ? (const struct py_code *)(uintptr_t)in->tag : NULL;
	char args[700], name[600];

	if (!s->writer || !s->ops || !s->ops->gil || !s->ops->gil(s->ctx, &r))
		return;
	args[0] = 0;
	if (code) {
		json_escape(name, sizeof(name), code->qualname, strlen(code->qualname));
		snprintf(args, sizeof(args), "\"py\":\"%s\"", name);
	}
	trace_writer__span(s->writer, &r, PY_GIL_SPAN, "gil", args);
}

static const struct py_spans_ops spans_ops = { .opened = on_opened, .span = on_span,
					       .gil = on_gil };

struct py_session *py_session__new(struct trace_writer *w, const struct py_session_ops *ops,
				   void *ctx)
{
	struct py_session *s = xcalloc(1, sizeof(*s));

	s->writer = w;
	s->ops = ops;
	s->ctx = ctx;
	s->spans = py_spans__new(&spans_ops, s);
	s->codes = py_codes__new();
	return s;
}

void py_session__open(struct py_session *s, struct trace_writer *w,
		      const struct py_session_ops *ops, void *ctx)
{
	s->writer = w;
	s->ops = ops;
	s->ctx = ctx;
	s->named_at = (uint64_t)-1; /* read the names at the first chance */
}

void py_session__free(struct py_session *s)
{
	if (!s)
		return;
	py_spans__free(s->spans);
	py_codes__free(s->codes);
	free(s->procs);
	free(s);
}

static void add_proc(struct py_session *s, const struct py_proc *p)
{
	s->procs = xrealloc(s->procs, s->nprocs + 1, sizeof(*s->procs));
	s->procs[s->nprocs++] = *p;
}

int py_session__add_pid(struct py_session *s, int pid, struct py_proc_cfg *cfg)
{
	struct py_proc p;
	int ret;

	if (proc_of(s, pid))
		return 0;
	ret = py_proc__detect(pid, &p);
	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	if (p.from == PY_OFF_NONE || py_version__bpf_cfg(&p.off, p.runtime, cfg)) {
		if (!s->warned)
			pr_warn("pid %d runs CPython %d.%d (%s): no Python frames, this build reads "
				"CPython %s only%s%s",
				pid, p.major, p.minor, p.object, py_version__supported(),
				p.dbg_why[0] ? "; " : "", p.dbg_why);
		s->warned = true;
		return -ENOTSUP;
	}
	add_proc(s, &p);
	py_threads__names(&p, s->ops ? s->ops->thread_name : NULL, s->ctx);
	return 1;
}

void py_session__add_child(struct py_session *s, int pid, int parent)
{
	const struct py_proc *pp = proc_of(s, parent);
	struct py_proc p;

	if (!pp || proc_of(s, pid))
		return;
	p = *pp;
	p.pid = pid;
	add_proc(s, &p);
}

void py_session__exec(struct py_session *s, int pid, uint64_t ts)
{
	for (size_t i = 0; i < s->nprocs; i++) {
		if (s->procs[i].pid != pid)
			continue;
		py_spans__close_all(s->spans, pid, ts);
		py_codes__forget(s->codes, pid);
		s->procs[i] = s->procs[--s->nprocs];
		return;
	}
}

void py_session__on_read(struct py_session *s, const void *rec, size_t size)
{
	py_spans__on_read(s->spans, rec, size);
}

size_t py_session__native(struct py_session *s, const struct span_rec *r, bool wait, char *args,
			  size_t len)
{
	const struct py_proc *p = proc_of(s, r->pid);
	char name[600], file[1100];
	const struct py_code *code;
	struct py_open caller;
	int n;

	if (!p || (r->flags & SPAN_INSTANT) ||
	    !py_spans__on_native(s->spans, r->pid, r->tid, r->start_ns, r->end_ns, wait, &caller))
		return 0;
	code = (const struct py_code *)(uintptr_t)caller.tag;
	if (!code)
		return 0;
	json_escape(name, sizeof(name), code->qualname, strlen(code->qualname));
	json_escape(file, sizeof(file), code->filename, strlen(code->filename));
	n = snprintf(args, len, "\"py\":\"%s\",\"py_line\":\"%s:%d\"", name, file,
		     py_code__line(code, caller.instr));
	if (n < 0 || (size_t)n >= len) {
		if (len)
			args[0] = 0; /* never half a JSON member */
		return 0;
	}
	return n;
}

void py_session__set_tick(struct py_session *s, uint64_t period_ns)
{
	py_spans__set_tick(s->spans, period_ns);
}

void py_session__switch_in(struct py_session *s, int pid, int tid, uint64_t ts)
{
	py_spans__switch_in(s->spans, pid, tid, ts);
}

void py_session__woken(struct py_session *s, int pid, int tid, uint64_t ts)
{
	py_spans__woken(s->spans, pid, tid, ts);
}

void py_session__thread_exit(struct py_session *s, int pid, int tid, uint64_t ts)
{
	py_spans__thread_exit(s->spans, pid, tid, ts);
}

void py_session__refresh_names(struct py_session *s, bool tick)
{
	uint64_t seen = py_spans__threads_seen(s->spans);

	/* walking the interpreter's dicts costs ~1 ms: at once when threads were first seen (a
	 * thread may be gone before the next tick), and once more at the next tick, for a thread
	 * first read before threading registered it (Thread._bootstrap_inner names it after the
	 * thread has run Python code) */
	if (seen != s->named_at)
		s->name_again = true;
	else if (tick && s->name_again)
		s->name_again = false;
	else
		return;
	s->named_at = seen;
	for (size_t i = 0; i < s->nprocs; i++)
		py_threads__names(&s->procs[i], s->ops ? s->ops->thread_name : NULL, s->ctx);
}

void py_session__finish(struct py_session *s, uint64_t ts)
{
	py_spans__close_all(s->spans, 0, ts);
}

static bool same_interp(const struct py_proc *a, const struct py_proc *b)
{
	return a->major == b->major && a->minor == b->minor && a->from == b->from &&
	       a->layout_minor == b->layout_minor &&
	       a->dbg_changed == b->dbg_changed && !strcmp(a->object, b->object);
}

void py_session__describe(const struct py_session *s, FILE *f)
{
	char from[400];

	for (size_t i = 0; i < s->nprocs; i++) {
		const struct py_proc *p = &s->procs[i];
		size_t n = 0, j;

		for (j = 0; j < i && !same_interp(&s->procs[j], p); j++)
			;
		if (j < i)
			continue; /* told with the first process that runs it */
		for (j = i; j < s->nprocs; j++)
			n += same_interp(&s->procs[j], p);
		if (n == 1)
			fprintf(f, "python: pid %d runs", p->pid);
		else
			fprintf(f, "python: %zu processes (pid %d, ...) run", n, p->pid);
		fprintf(f, " CPython %d.%d (%s); frames read with %s%s\n", p->major, p->minor,
			p->object, py_proc__offsets_from(p, from, sizeof(from)),
			p->off.has_qualname ? "" : "; functions named by co_name (no co_qualname "
						   "before 3.11)");
	}
}

void py_session__add_json(const struct py_session *s, struct cJSON *array)
{
	char version[16];

	for (size_t i = 0; i < s->nprocs; i++) {
		const struct py_proc *p = &s->procs[i];
		cJSON *o = cJSON_CreateObject();

		snprintf(version, sizeof(version), "%d.%d", p->major, p->minor);
		cJSON_AddNumberToObject(o, "pid", p->pid);
		cJSON_AddStringToObject(o, "version", version);
		cJSON_AddStringToObject(o, "object", p->object);
		cJSON_AddStringToObject(o, "offsets", p->from == PY_OFF_DEBUG ? "debug" : "table");
		cJSON_AddItemToArray(array, o);
	}
}

void py_session__stats(const struct py_session *s, size_t *procs, uint64_t *spans,
		       uint64_t *reads, uint64_t *partial)
{
	*procs = s->nprocs;
	*spans = s->nspans;
	*reads = py_spans__reads(s->spans);
	*partial = py_spans__partial_reads(s->spans);
}
