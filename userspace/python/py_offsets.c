// SPDX-License-Identifier: MIT
#include "python/py_offsets.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Committed, generated tables (mk/python.mk): every build reads every version. */
static const struct py_version py_versions[] = {
#include "python/offsets/3.8.inc"
#include "python/offsets/3.9.inc"
#include "python/offsets/3.10.inc"
#include "python/offsets/3.11.inc"
#include "python/offsets/3.12.inc"
#include "python/offsets/3.13.inc"
	{ 0 } /* end */
};

/* Newer versions have no table: only where their _Py_DebugOffsets keep what tracer reads. */
static const struct py_version py_layouts[] = {
#include "python/offsets/debug-3.14.inc"
	{ 0 } /* end */
};

const struct py_version *py_version__find(int major, int minor)
{
	for (const struct py_version *v = py_versions; v->major; v++)
		if (v->major == major && v->minor == minor)
			return v;
	return NULL;
}

const struct py_version *py_version__newest(void)
{
	const struct py_version *v = py_versions;

	while (v[1].major)
		v++;
	return v;
}

const struct py_version *py_version__layout(int major, int minor)
{
	const struct py_version *found = NULL;

	for (const struct py_version *v = py_layouts; v->major; v++)
		if (v->major == major && v->minor <= minor)
			found = v;
	return found;
}

const char *py_version__supported(void)
{
	static char buf[128];
	size_t n = 0;

	buf[0] = 0;
	for (const struct py_version *v = py_versions; v->major && n < sizeof(buf); v++)
		n += snprintf(buf + n, sizeof(buf) - n, "%s%d.%d", n ? ", " : "", v->major,
			      v->minor);
	return buf;
}

static uint32_t min4(uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
	uint32_t m = a < b ? a : b;

	m = m < c ? m : c;
	return m < d ? m : d;
}

/* The thread's id and its current frame: one read of the thread state, when the two are that
 * close and word-aligned to each other. */
static void tstate_once(struct py_proc_cfg *cfg)
{
	uint32_t lo = cfg->tstate_match < cfg->tstate_frame ? cfg->tstate_match : cfg->tstate_frame;
	uint32_t hi = cfg->tstate_match < cfg->tstate_frame ? cfg->tstate_frame : cfg->tstate_match;

	if ((hi - lo) % 8 == 0 && hi + 8 - lo <= PY_READ_MAX) {
		cfg->tstate_lo = lo;
		cfg->tstate_span = hi + 8 - lo;
	}
}

/* The BPF side reads a frame's fields in one read of PY_FRAME_READ bytes at most, and a name's
 * length and first bytes in one read of 5 words (bpf/python.bpf.c): they must lie that close,
 * the words word-aligned from the read's start. */
int py_version__bpf_cfg(const struct py_offsets *o, uint64_t runtime, struct py_proc_cfg *cfg)
{
	uint32_t base = min4(o->frame_code, o->frame_previous, o->frame_prev_instr, o->frame_owner);
	uint32_t end = o->frame_owner + 1;

	if (o->frame_code + 8 > end)
		end = o->frame_code + 8;
	if (o->frame_previous + 8 > end)
		end = o->frame_previous + 8;
	if (o->frame_prev_instr + 8 > end)
		end = o->frame_prev_instr + 8;
	end = (end + 7) & ~7u;
	if (end - base > PY_FRAME_READ || (o->frame_code - base) % 8 ||
	    (o->frame_previous - base) % 8 || (o->frame_prev_instr - base) % 8 ||
	    o->str_ascii_data < o->str_length || o->str_ascii_data - o->str_length >= 40 ||
	    (o->str_ascii_data - o->str_length) % 8)
		return -ENOTSUP;
	memset(cfg, 0, sizeof(*cfg));
	cfg->runtime = runtime;
	cfg->runtime_interp_head = o->runtime_interp_head;
	cfg->interp_next = o->interp_next;
	cfg->interp_threads_head = o->interp_threads_head;
	cfg->tstate_next = o->tstate_next;
	cfg->tstate_match = o->tstate_by_pthread ? o->tstate_thread_id : o->tstate_native_thread_id;
	cfg->tstate_frame = o->tstate_frame;
	cfg->cframe_current_frame = o->cframe_current_frame;
	cfg->frame_base = base;
	cfg->frame_read = end - base;
	cfg->frame_code = o->frame_code - base;
	cfg->frame_previous = o->frame_previous - base;
	cfg->frame_prev_instr = o->frame_prev_instr - base;
	cfg->frame_owner = o->frame_owner - base;
	cfg->owner_cstack = o->frame_owner_cstack;
	cfg->frame_localsplus = o->frame_localsplus;
	tstate_once(cfg);
	/* 3.11 on: the locals follow the frame's fields, one read takes both */
	if (o->frame_localsplus > base && (o->frame_localsplus - base) % 8 == 0 &&
	    o->frame_localsplus - base <= PY_FRAME_READ)
		cfg->frame_locals_at = o->frame_localsplus - base;
	cfg->code_nlocals = o->code_nlocals;
	cfg->code_qualname = o->code_qualname;
	cfg->str_length = o->str_length;
	cfg->str_ascii_data = o->str_ascii_data;
	cfg->flags = (o->tstate_by_pthread ? PY_CFG_PTHREAD : 0) |
		     (o->has_cframe ? PY_CFG_CFRAME : 0) |
		     (o->frame_owner_cstack < 256 ? PY_CFG_OWNER : 0) |
		     (o->gil_via_interp ? PY_CFG_GIL_INTERP : 0);
	cfg->gil_at = o->gil_at;
	cfg->gil_lo = o->gil_wait_lo;
	cfg->gil_hi = o->gil_wait_hi;
	return 0;
}
