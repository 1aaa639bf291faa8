// SPDX-License-Identifier: MIT
#include "python/py_offsets.h"

#include "py_offsets_table.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

const struct py_version *py_version__find(int major, int minor)
{
	for (const struct py_version *v = py_versions; v->major; v++)
		if (v->major == major && v->minor == minor)
			return v;
	return NULL;
}

const char *py_version__supported(void)
{
	static char buf[128];
	size_t n = 0;

	buf[0] = 0;
	for (const struct py_version *v = py_versions; v->major && n < sizeof(buf); v++)
		n += snprintf(buf + n, sizeof(buf) - n, "%s%d.%d", n ? ", " : "", v->major,
			      v->minor);
	return buf[0] ? buf : "none (built without python3.N-dev headers)";
}

/* The BPF side reads a frame's fields, and a name's length and first bytes, each in one read
 * of a few words (bpf/python.bpf.c): they must lie that close, word-aligned. */
static bool in_window(uint32_t base, uint32_t off, uint32_t words)
{
	return off >= base && off - base < 8 * words && (off - base) % 8 == 0;
}

int py_version__bpf_cfg(const struct py_version *v, uint64_t runtime, struct py_proc_cfg *cfg)
{
	const struct py_offsets *o = &v->off;

	if (!in_window(o->frame_code, o->frame_previous, 4) ||
	    !in_window(o->frame_code, o->frame_prev_instr, 4) ||
	    !in_window(o->str_length, o->str_ascii_data, 5))
		return -ENOTSUP;
	memset(cfg, 0, sizeof(*cfg));
	cfg->runtime = runtime;
	cfg->runtime_interp_head = o->runtime_interp_head;
	cfg->interp_next = o->interp_next;
	cfg->interp_threads_head = o->interp_threads_head;
	cfg->tstate_next = o->tstate_next;
	cfg->tstate_native_thread_id = o->tstate_native_thread_id;
	cfg->tstate_cframe = o->tstate_cframe;
	cfg->cframe_current_frame = o->cframe_current_frame;
	cfg->frame_code = o->frame_code;
	cfg->frame_previous = o->frame_previous;
	cfg->frame_prev_instr = o->frame_prev_instr;
	cfg->code_qualname = o->code_qualname;
	cfg->str_length = o->str_length;
	cfg->str_ascii_data = o->str_ascii_data;
	return 0;
}
