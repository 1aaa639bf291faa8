/* SPDX-License-Identifier: MIT */
/* CPython struct offsets, one table entry per supported minor version, generated at build time
 * from that version's -dev headers (tools/py_offsets.c, mk/python.mk). */
#ifndef TRACER_PY_OFFSETS_H
#define TRACER_PY_OFFSETS_H

#include "events.h"

#include <stdint.h>

struct py_offsets {
	uint32_t runtime_interp_head, interp_next, interp_threads_head, interp_modules;
	uint32_t tstate_next, tstate_native_thread_id, tstate_thread_id, tstate_cframe;
	uint32_t cframe_current_frame;
	uint32_t frame_code, frame_previous, frame_prev_instr, frame_owner;
	uint32_t code_filename, code_name, code_qualname, code_firstlineno, code_linetable;
	uint32_t code_adaptive, code_unit_size;
	uint32_t object_type, type_name, var_size, bytes_data;
	uint32_t str_length, str_state, str_kind_mask, str_compact_mask, str_ascii_mask;
	uint32_t str_ascii_data, str_compact_data;
	uint32_t dict_keys, dict_values, dict_used;
	uint32_t keys_log2_size, keys_log2_index_bytes, keys_kind, keys_nentries, keys_indices;
	uint32_t keys_general_kind, entry_size, entry_key, entry_value;
	uint32_t uentry_size, uentry_key, uentry_value;
	uint32_t module_dict, long_digits, long_digit_bits;
	uint32_t managed_dict_before, managed_values_before;
	uint32_t type_flags, type_managed_dict_flag, type_ht_cached_keys;
};

struct py_version {
	int major, minor; /* 0: the end of the table */
	struct py_offsets off;
};

/* The offsets of CPython major.minor, or NULL when this build has none for it. */
const struct py_version *py_version__find(int major, int minor);
/* "3.11" or "3.11, 3.12": the versions this build reads, for messages. */
const char *py_version__supported(void);
/* Fills the BPF side's part; -ENOTSUP if the frame fields do not fit the one read per frame
 * that bpf/python.bpf.c does (f_code, previous, prev_instr within 32 bytes, 8-aligned). */
int py_version__bpf_cfg(const struct py_version *v, uint64_t runtime, struct py_proc_cfg *cfg);

#endif
