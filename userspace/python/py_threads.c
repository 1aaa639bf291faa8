// SPDX-License-Identifier: MIT
#include "python/py_threads.h"
#include "python/py_code.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define MAX_ENTRIES 4096 /* of a dict walked */
#define MAX_THREADS 1024

struct reader {
	int pid;
	const struct py_offsets *o;
};

static uint64_t ptr(const struct reader *r, uint64_t addr)
{
	uint64_t v = 0;

	if (!addr || py_mem__read(r->pid, addr, &v, sizeof(v)))
		return 0;
	return v;
}

static uint8_t byte(const struct reader *r, uint64_t addr)
{
	uint8_t v = 0;

	if (py_mem__read(r->pid, addr, &v, 1))
		return 0;
	return v;
}

/* Whether the str object at addr is `want`. */
static bool str_is(const struct reader *r, uint64_t addr, const char *want)
{
	char buf[64];

	return !py_str__read(r->pid, r->o, addr, buf, sizeof(buf)) && !strcmp(buf, want);
}

/* Where a keys object's entries start, after its indices; 0 for a size that makes no sense (read
 * while the interpreter may be changing the dict). */
static uint64_t entries_of(const struct reader *r, uint64_t keys)
{
	const struct py_offsets *o = r->o;
	uint64_t size, width;
	uint8_t log2_index_bytes;

	if (o->keys_dk_size) { /* 3.8-3.10: dk_size indices, each as wide as dk_size needs */
		size = ptr(r, keys + o->keys_dk_size);
		if (!size || size >= (1ull << 32))
			return 0;
		width = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
		return keys + o->keys_indices + size * width;
	}
	log2_index_bytes = byte(r, keys + o->keys_log2_index_bytes);
	return log2_index_bytes < 32 ? keys + o->keys_indices + (1ull << log2_index_bytes) : 0;
}

/* Entry i of a keys object: its key and, unless values (a split table's) is given, its value. */
static void entry(const struct reader *r, uint64_t keys, uint64_t values, uint64_t i,
		  uint64_t *key, uint64_t *value)
{
	const struct py_offsets *o = r->o;
	uint64_t entries = entries_of(r, keys);

	*key = *value = 0;
	if (!entries)
		return;
	/* 3.11 on: a table of str keys has smaller entries (3.8-3.10 have one kind) */
	if (!o->keys_dk_size && byte(r, keys + o->keys_kind) != o->keys_general_kind) {
		*key = ptr(r, entries + i * o->uentry_size + o->uentry_key);
		*value = ptr(r, entries + i * o->uentry_size + o->uentry_value);
	} else {
		*key = ptr(r, entries + i * o->entry_size + o->entry_key);
		*value = ptr(r, entries + i * o->entry_size + o->entry_value);
	}
	if (values)
		*value = ptr(r, values + r->o->values_values + i * sizeof(uint64_t));
}

static int64_t nentries(const struct reader *r, uint64_t keys)
{
	int64_t n = 0;

	if (!keys || py_mem__read(r->pid, keys + r->o->keys_nentries, &n, sizeof(n)) || n < 0)
		return 0;
	return n > MAX_ENTRIES ? MAX_ENTRIES : n;
}

/* d[name] for a dict whose keys are str, or 0. */
static uint64_t dict_get(const struct reader *r, uint64_t dict, const char *name)
{
	uint64_t keys = ptr(r, dict + r->o->dict_keys), values = ptr(r, dict + r->o->dict_values);
	int64_t n = nentries(r, keys);

	for (int64_t i = 0; i < n; i++) {
		uint64_t k, v;

		entry(r, keys, values, i, &k, &v);
		if (k && v && str_is(r, k, name))
			return v;
	}
	return 0;
}

/* An instance's attributes: the values of its class's shared keys (values), or its own dict
 * (dict). 3.11 keeps a pointer to each before the object header; 3.12 one word there, the values
 * tagged with the low bit; 3.13 the values inline after the header while they are valid, else
 * a dict before it. */
static void managed(const struct reader *r, uint64_t obj, uint64_t flags, uint64_t *values,
		    uint64_t *dict)
{
	const struct py_offsets *o = r->o;
	uint64_t w;

	*values = *dict = 0;
	switch (o->managed_layout) {
	case 1:
		*values = ptr(r, obj - o->managed_values_before);
		if (!*values)
			*dict = ptr(r, obj - o->managed_dict_before);
		break;
	case 2:
		w = ptr(r, obj - o->managed_dict_before);
		if (w & 1)
			*values = w + 1; /* _PyDictOrValues_GetValues */
		else
			*dict = w;
		break;
	case 3:
		if ((flags & o->type_inline_values_flag) &&
		    byte(r, obj + o->inline_values + o->values_valid))
			*values = obj + o->inline_values;
		else
			*dict = ptr(r, obj - o->managed_dict_before);
		break;
	}
}

/* obj.name for an instance of a class with a managed dict. */
static uint64_t attr(const struct reader *r, uint64_t obj, const char *name)
{
	const struct py_offsets *o = r->o;
	uint64_t type = ptr(r, obj + o->object_type), flags = ptr(r, type + o->type_flags);
	uint64_t values, dict, keys;
	int64_t n;

	if (!o->managed_layout) { /* 3.8-3.10: the instance's dict at its type's tp_dictoffset */
		int64_t off = (int64_t)ptr(r, type + o->type_dictoffset);

		dict = off > 0 ? ptr(r, obj + (uint64_t)off) : 0;
		return dict ? dict_get(r, dict, name) : 0;
	}
	if (!(flags & o->type_managed_dict_flag))
		return 0;
	managed(r, obj, flags, &values, &dict);
	if (values) {
		keys = ptr(r, type + o->type_ht_cached_keys);
		n = nentries(r, keys);
		for (int64_t i = 0; i < n; i++) {
			uint64_t k, v;

			entry(r, keys, values, i, &k, &v);
			if (k && str_is(r, k, name))
				return v;
		}
		return 0;
	}
	return dict ? dict_get(r, dict, name) : 0;
}

/* An int object's value (a thread ident fits in 64 bits). */
static bool long_value(const struct reader *r, uint64_t obj, uint64_t *out)
{
	const struct py_offsets *o = r->o;
	uint32_t digits[3] = { 0 };
	int64_t size = 0;

	if (!obj || py_mem__read(r->pid, obj + o->long_size, &size, sizeof(size)) ||
	    (size >>= o->long_size_shift) < 0 || size > 3 ||
	    (size && py_mem__read(r->pid, obj + o->long_digits, digits, size * sizeof(uint32_t))))
		return false;
	*out = 0;
	for (int64_t i = size - 1; i >= 0; i--)
		*out = (*out << o->long_digit_bits) | digits[i];
	return true;
}

int py_threads__names(const struct py_proc *p, py_thread_name_fn fn, void *ctx)
{
	struct reader r = { .pid = p->pid, .o = &p->off };
	const struct py_offsets *o = r.o;
	uint64_t interp, threading, active, keys, ts, idents[MAX_THREADS], tids[MAX_THREADS];
	int nthreads = 0, named = 0;
	int64_t n;

	if (!fn || p->from == PY_OFF_NONE)
		return -EINVAL;
	if (!o->has_thread_names)
		return -ENOTSUP;
	interp = ptr(&r, p->runtime + o->runtime_interp_head);
	threading = dict_get(&r, ptr(&r, interp + o->interp_modules), "threading");
	if (!threading)
		return -ENOENT;
	active = dict_get(&r, ptr(&r, threading + o->module_dict), "_active");
	if (!active)
		return -ENOENT;
	for (ts = ptr(&r, interp + o->interp_threads_head); ts && nthreads < MAX_THREADS;
	     ts = ptr(&r, ts + o->tstate_next)) {
		idents[nthreads] = ptr(&r, ts + o->tstate_thread_id);
		tids[nthreads++] = ptr(&r, ts + o->tstate_native_thread_id);
	}
	keys = ptr(&r, active + o->dict_keys);
	n = nentries(&r, keys);
	for (int64_t i = 0; i < n; i++) {
		uint64_t k, v, ident, name_obj;
		char name[128];

		entry(&r, keys, ptr(&r, active + o->dict_values), i, &k, &v);
		if (!k || !v || !long_value(&r, k, &ident))
			continue;
		name_obj = attr(&r, v, "_name");
		if (!name_obj || py_str__read(r.pid, o, name_obj, name, sizeof(name)) || !name[0])
			continue;
		/* 3.8-3.10: no kernel tid in the thread state; the Thread keeps it (_native_id) */
		if (o->tstate_by_pthread) {
			uint64_t tid;

			if (long_value(&r, attr(&r, v, "_native_id"), &tid) && tid && tid < INT32_MAX) {
				fn(ctx, p->pid, (int)tid, name);
				named++;
			}
			continue;
		}
		for (int t = 0; t < nthreads; t++)
			if (idents[t] == ident && tids[t]) {
				fn(ctx, p->pid, tids[t], name);
				named++;
			}
	}
	return named;
}
