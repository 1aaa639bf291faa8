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

static bool in_window(uint32_t base, uint32_t off)
{
	return off >= base && off - base < 32 && (off - base) % 8 == 0;
}

int py_version__bpf_cfg(const struct py_version *v, uint64_t runtime, struct py_proc_cfg *cfg)
{
	const struct py_offsets *o = &v->off;

	if (!in_window(o->frame_code, o->frame_previous) ||
	    !in_window(o->frame_code, o->frame_prev_instr))
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
	return 0;
}
