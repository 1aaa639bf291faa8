// SPDX-License-Identifier: MIT
#include "python/py_debug_offsets.h"
#include "python/py_proc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define MAX_DEBUG 4096	   /* bytes of _Py_DebugOffsets read at most */
#define MAX_FIELD (1 << 20) /* no field tracer reads lies this far: beyond, the value is bad */

/* A field of struct py_offsets, where the debug offsets keep it, and the size of its section
 * (an offset past it is not one). */
struct field {
	size_t off, dbg, dbg_size;
};

#define FLD(name, section) \
	{ offsetof(struct py_offsets, name), offsetof(struct py_offsets, dbg_##name), \
	  offsetof(struct py_offsets, dbg_##section##_size) }

static const struct field fields[] = {
	FLD(runtime_interp_head, runtime),
	FLD(interp_next, interp),
	FLD(interp_threads_head, interp),
	FLD(interp_modules, interp),
	FLD(tstate_next, tstate),
	FLD(tstate_frame, tstate),
	FLD(tstate_thread_id, tstate),
	FLD(tstate_native_thread_id, tstate),
	FLD(frame_previous, frame),
	FLD(frame_code, frame),
	FLD(frame_prev_instr, frame),
	FLD(frame_owner, frame),
	FLD(frame_localsplus, frame),
	FLD(code_filename, code),
	FLD(code_name, code),
	FLD(code_qualname, code),
	FLD(code_linetable, code),
	FLD(code_firstlineno, code),
	FLD(code_adaptive, code),
	FLD(str_state, str),
	FLD(str_length, str),
	FLD(str_ascii_data, str),
	FLD(var_size, bytes),
	FLD(bytes_data, bytes),
	FLD(object_type, object),
	FLD(type_name, type),
	FLD(type_flags, type),
	FLD(dict_keys, dict),
	FLD(dict_values, dict),
	FLD(long_size, pylong),
	FLD(long_digits, pylong),
	FLD(gil_at, interp), /* 3.14 on */
};

static uint32_t u32_at(const void *base, size_t off)
{
	uint32_t v;

	memcpy(&v, (const char *)base + off, sizeof(v));
	return v;
}

static uint64_t u64_at(const uint8_t *buf, uint32_t off)
{
	uint64_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

int py_debug_offsets__read(int pid, uint64_t runtime, int major, int minor,
			   const struct py_offsets *table, struct py_offsets *out, int *changed,
			   char *why, size_t len)
{
	uint8_t buf[MAX_DEBUG];
	uint64_t version;

	*changed = 0;
	if (!table->dbg_size || table->dbg_size > sizeof(buf)) {
		snprintf(why, len, "this build knows no debug offsets of %d.%d", major, minor);
		return -ENOTSUP;
	}
	if (py_mem__read(pid, runtime, buf, table->dbg_size)) {
		snprintf(why, len, "_PyRuntime unreadable");
		return -EFAULT;
	}
	if (memcmp(buf, "xdebugpy", 8)) {
		snprintf(why, len, "no \"xdebugpy\" cookie at _PyRuntime");
		return -ENOENT;
	}
	version = u64_at(buf, table->dbg_version);
	if ((int)(version >> 24 & 0xff) != major || (int)(version >> 16 & 0xff) != minor) {
		snprintf(why, len, "debug offsets of version %#llx, not %d.%d",
			 (unsigned long long)version, major, minor);
		return -EINVAL;
	}
	if (u64_at(buf, table->dbg_free_threaded)) {
		snprintf(why, len, "a free-threaded build, whose objects the table does not describe");
		return -ENOEXEC;
	}
	*out = *table;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const struct field *f = &fields[i];
		uint64_t v = u64_at(buf, u32_at(table, f->dbg));
		uint64_t size = u64_at(buf, u32_at(table, f->dbg_size));

		if (!u32_at(table, f->dbg))
			continue; /* not kept in this version's: the table's stands */

		if (v >= size || v >= MAX_FIELD) {
			snprintf(why, len, "a debug offset past its struct (%llu of %llu)",
				 (unsigned long long)v, (unsigned long long)size);
			*out = *table;
			*changed = 0;
			return -EINVAL;
		}
		if (v != u32_at(table, f->off))
			++*changed;
		memcpy((char *)out + f->off, &(uint32_t){ (uint32_t)v }, sizeof(uint32_t));
	}
	return 0;
}
