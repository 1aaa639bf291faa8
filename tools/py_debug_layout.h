/* SPDX-License-Identifier: MIT */
/* Where _Py_DebugOffsets keeps each offset tracer reads from it (struct py_offsets' dbg_*
 * fields), for tools/py_offsets.c (3.13, whose full table carries them) and
 * tools/py_debug_layout.c (3.14 on: the layout alone). Needs F() and _Py_DebugOffsets. */
#ifndef TRACER_TOOLS_PY_DEBUG_LAYOUT_H
#define TRACER_TOOLS_PY_DEBUG_LAYOUT_H

#define D(field, member) F(field, offsetof(_Py_DebugOffsets, member))

static void print_debug_layout(void)
{
	F(dbg_size, sizeof(_Py_DebugOffsets));
	D(dbg_version, version);
	D(dbg_free_threaded, free_threaded);
	D(dbg_runtime_size, runtime_state.size);
	D(dbg_runtime_interp_head, runtime_state.interpreters_head);
	D(dbg_interp_size, interpreter_state.size);
	D(dbg_interp_next, interpreter_state.next);
	D(dbg_interp_threads_head, interpreter_state.threads_head);
	D(dbg_interp_modules, interpreter_state.imports_modules);
	D(dbg_tstate_size, thread_state.size);
	D(dbg_tstate_next, thread_state.next);
	D(dbg_tstate_frame, thread_state.current_frame);
	D(dbg_tstate_thread_id, thread_state.thread_id);
	D(dbg_tstate_native_thread_id, thread_state.native_thread_id);
	D(dbg_frame_size, interpreter_frame.size);
	D(dbg_frame_previous, interpreter_frame.previous);
	D(dbg_frame_code, interpreter_frame.executable);
	D(dbg_frame_prev_instr, interpreter_frame.instr_ptr);
	D(dbg_frame_owner, interpreter_frame.owner);
	D(dbg_frame_localsplus, interpreter_frame.localsplus);
	D(dbg_code_size, code_object.size);
	D(dbg_code_filename, code_object.filename);
	D(dbg_code_name, code_object.name);
	D(dbg_code_qualname, code_object.qualname);
	D(dbg_code_linetable, code_object.linetable);
	D(dbg_code_firstlineno, code_object.firstlineno);
	D(dbg_code_adaptive, code_object.co_code_adaptive);
	D(dbg_str_size, unicode_object.size);
	D(dbg_str_state, unicode_object.state);
	D(dbg_str_length, unicode_object.length);
	D(dbg_str_ascii_data, unicode_object.asciiobject_size);
	D(dbg_bytes_size, bytes_object.size);
	D(dbg_var_size, bytes_object.ob_size);
	D(dbg_bytes_data, bytes_object.ob_sval);
	D(dbg_object_size, pyobject.size);
	D(dbg_object_type, pyobject.ob_type);
	D(dbg_type_size, type_object.size);
	D(dbg_type_name, type_object.tp_name);
	D(dbg_type_flags, type_object.tp_flags);
	D(dbg_dict_size, dict_object.size);
	D(dbg_dict_keys, dict_object.ma_keys);
	D(dbg_dict_values, dict_object.ma_values);
	D(dbg_pylong_size, long_object.size);
	D(dbg_long_size, long_object.lv_tag);
	D(dbg_long_digits, long_object.ob_digit);
#if PY_MINOR_VERSION >= 14
	D(dbg_gil_at, interpreter_state.ceval_gil);
#endif
}

#endif
