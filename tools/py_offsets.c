// SPDX-License-Identifier: MIT
/* Prints the struct offsets tracer needs to read one CPython minor version's frames, as one
 * C initializer of struct py_version (userspace/python/py_offsets.h), when compiled against that
 * version's headers (internal ones included), so no offset is ever typed by hand:
 *
 *   cc -I/usr/include/python3.11 tools/py_offsets.c -o py_offsets && ./py_offsets
 *
 * scripts/py-offsets.sh does so for every supported version whose headers are installed and
 * writes (or with --check, compares) the committed tables, userspace/python/offsets/3.N.inc.
 * A version whose structs moved gets its own #if branch here, never a table of numbers. */
#define Py_BUILD_CORE 1
#include <Python.h>
#if PY_MAJOR_VERSION != 3 || PY_MINOR_VERSION < 8 || PY_MINOR_VERSION > 13
#error "tools/py_offsets.c knows CPython 3.8 to 3.13's structs; add a branch for this version"
#endif
#if PY_MINOR_VERSION == 8
#include <internal/pycore_pystate.h>
#else
#include <internal/pycore_runtime.h>
#include <internal/pycore_interp.h>
#endif
#if PY_MINOR_VERSION <= 10
#include <frameobject.h>
#include <longintrepr.h>
#else
#include <internal/pycore_frame.h>
#include <internal/pycore_code.h>
#include <internal/pycore_dict.h>
#endif
#if PY_MINOR_VERSION >= 10
#include <internal/pycore_moduleobject.h>
#endif
#if PY_MINOR_VERSION >= 12
#include <internal/pycore_long.h>
#include <internal/pycore_object.h>
#endif

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(field, value) printf("\t\t." #field " = %lu,\n", (unsigned long)(value))
#if PY_MINOR_VERSION >= 13
#include "py_debug_layout.h"
#endif

#if PY_MINOR_VERSION <= 10
/* A dict's keys object before 3.11 is private (Objects/dict-common.h, not installed): its layout
 * as 3.8 to 3.10 have it. The entries follow dk_size indices of 1, 2, 4 or 8 bytes (by dk_size). */
struct old_dict_keys {
	Py_ssize_t dk_refcnt;
	Py_ssize_t dk_size;
	void *dk_lookup;
	Py_ssize_t dk_usable;
	Py_ssize_t dk_nentries;
	char dk_indices[];
};

struct old_dict_entry {
	Py_hash_t me_hash;
	PyObject *me_key;
	PyObject *me_value;
};
#endif

/* A bit field has no offsetof: set all its bits in a zeroed state word and read the mask. */
static unsigned int state_mask(int which)
{
	PyASCIIObject o;
	unsigned int m;

	memset(&o, 0, sizeof(o));
	switch (which) {
	case 0: o.state.kind--; break; /* all ones */
	case 1: o.state.compact--; break;
	case 2: o.state.ascii--; break;
	}
	memcpy(&m, (char *)&o + offsetof(PyASCIIObject, state), sizeof(m));
	return m;
}

int main(void)
{
	printf("\t{ .major = %d, .minor = %d, .off = {\n", PY_MAJOR_VERSION, PY_MINOR_VERSION);
	F(runtime_interp_head, offsetof(_PyRuntimeState, interpreters.head));
	F(interp_next, offsetof(PyInterpreterState, next));
#if PY_MINOR_VERSION <= 10
	F(interp_threads_head, offsetof(PyInterpreterState, tstate_head));
#else
	F(interp_threads_head, offsetof(PyInterpreterState, threads.head));
#endif
#if PY_MINOR_VERSION >= 12
	F(interp_modules, offsetof(PyInterpreterState, imports.modules));
#else
	F(interp_modules, offsetof(PyInterpreterState, modules));
#endif
	F(tstate_next, offsetof(PyThreadState, next));
	F(tstate_thread_id, offsetof(PyThreadState, thread_id));
#if PY_MINOR_VERSION <= 10
	/* no kernel tid in the thread state: threads are told by thread_id (pthread_self()) */
	F(tstate_by_pthread, 1);
	F(tstate_native_thread_id, offsetof(PyThreadState, thread_id));
#else
	F(tstate_native_thread_id, offsetof(PyThreadState, native_thread_id));
#endif
	/* frame_kind: 1 PyFrameObject (f_back, f_lasti), 2 _PyInterpreterFrame */
#if PY_MINOR_VERSION <= 10
	F(frame_kind, 1);
	F(tstate_frame, offsetof(PyThreadState, frame));
	F(frame_code, offsetof(PyFrameObject, f_code));
	F(frame_previous, offsetof(PyFrameObject, f_back));
	F(frame_prev_instr, offsetof(PyFrameObject, f_lasti));
	F(frame_owner, offsetof(PyFrameObject, f_code)); /* no owner: never the C stack's */
	F(frame_owner_cstack, 256);
	/* the frame's locals (arguments first), and how many the code has */
	F(frame_localsplus, offsetof(PyFrameObject, f_localsplus));
	F(code_nlocals, offsetof(PyCodeObject, co_nlocals));
#else
	F(frame_kind, 2);
#if PY_MINOR_VERSION <= 12
	F(has_cframe, 1);
	F(tstate_frame, offsetof(PyThreadState, cframe));
	F(cframe_current_frame, offsetof(_PyCFrame, current_frame));
#else
	F(tstate_frame, offsetof(PyThreadState, current_frame));
#endif
#if PY_MINOR_VERSION >= 13
	F(frame_code, offsetof(_PyInterpreterFrame, f_executable));
	F(frame_prev_instr, offsetof(_PyInterpreterFrame, instr_ptr));
#else
	F(frame_code, offsetof(_PyInterpreterFrame, f_code));
	F(frame_prev_instr, offsetof(_PyInterpreterFrame, prev_instr));
#endif
	F(frame_previous, offsetof(_PyInterpreterFrame, previous));
	F(frame_owner, offsetof(_PyInterpreterFrame, owner));
	F(frame_localsplus, offsetof(_PyInterpreterFrame, localsplus));
	F(code_nlocals, offsetof(PyCodeObject, co_nlocalsplus));
#if PY_MINOR_VERSION >= 12
	/* an entry frame _PyEval_EvalFrameDefault keeps on the C stack: not a Python function */
	F(frame_owner_cstack, FRAME_OWNED_BY_CSTACK);
#else
	F(frame_owner_cstack, 256);
#endif
#endif
	F(code_filename, offsetof(PyCodeObject, co_filename));
	F(code_name, offsetof(PyCodeObject, co_name));
	F(code_firstlineno, offsetof(PyCodeObject, co_firstlineno));
	F(code_unit_size, sizeof(_Py_CODEUNIT));
	/* line_format: 1 co_lnotab (f_lasti in bytes), 2 3.10's co_linetable (f_lasti in code
	 * units), 3 the location table (3.11 on, an instruction pointer into co_code_adaptive) */
#if PY_MINOR_VERSION <= 9
	F(line_format, 1);
	F(code_linetable, offsetof(PyCodeObject, co_lnotab));
	F(code_qualname, offsetof(PyCodeObject, co_name)); /* no co_qualname before 3.11 */
#elif PY_MINOR_VERSION == 10
	F(line_format, 2);
	F(code_linetable, offsetof(PyCodeObject, co_linetable));
	F(code_qualname, offsetof(PyCodeObject, co_name));
#else
	F(line_format, 3);
	F(has_qualname, 1);
	F(code_qualname, offsetof(PyCodeObject, co_qualname));
	F(code_linetable, offsetof(PyCodeObject, co_linetable));
	F(code_adaptive, offsetof(PyCodeObject, co_code_adaptive));
#endif
	F(object_type, offsetof(PyObject, ob_type));
	F(type_name, offsetof(PyTypeObject, tp_name));
	F(var_size, offsetof(PyVarObject, ob_size));
	F(bytes_data, offsetof(PyBytesObject, ob_sval));
	F(str_length, offsetof(PyASCIIObject, length));
	F(str_state, offsetof(PyASCIIObject, state));
	F(str_kind_mask, state_mask(0));
	F(str_compact_mask, state_mask(1));
	F(str_ascii_mask, state_mask(2));
	F(str_ascii_data, sizeof(PyASCIIObject));
	F(str_compact_data, sizeof(PyCompactUnicodeObject));
#if PY_MINOR_VERSION >= 11
	/* thread names: the threading module's dicts and instances */
	F(has_thread_names, 1);
	F(dict_keys, offsetof(PyDictObject, ma_keys));
	F(dict_values, offsetof(PyDictObject, ma_values));
	F(dict_used, offsetof(PyDictObject, ma_used));
	F(keys_log2_size, offsetof(PyDictKeysObject, dk_log2_size));
	F(keys_log2_index_bytes, offsetof(PyDictKeysObject, dk_log2_index_bytes));
	F(keys_kind, offsetof(PyDictKeysObject, dk_kind));
	F(keys_nentries, offsetof(PyDictKeysObject, dk_nentries));
	F(keys_indices, offsetof(PyDictKeysObject, dk_indices));
	F(keys_general_kind, DICT_KEYS_GENERAL); /* the others (unicode, split) have str keys */
	F(entry_size, sizeof(PyDictKeyEntry));
	F(entry_key, offsetof(PyDictKeyEntry, me_key));
	F(entry_value, offsetof(PyDictKeyEntry, me_value));
	F(uentry_size, sizeof(PyDictUnicodeEntry));
	F(uentry_key, offsetof(PyDictUnicodeEntry, me_key));
	F(uentry_value, offsetof(PyDictUnicodeEntry, me_value));
	F(module_dict, offsetof(PyModuleObject, md_dict));
	F(long_digit_bits, PyLong_SHIFT);
#if PY_MINOR_VERSION == 11
	F(long_size, offsetof(PyVarObject, ob_size));
	F(long_digits, offsetof(PyLongObject, ob_digit));
	/* an instance's dict, or its values, in the words before the object header */
	F(managed_layout, 1);
	F(managed_dict_before, 3 * sizeof(PyObject *));
	F(managed_values_before, 4 * sizeof(PyObject *));
#else
	F(long_size, offsetof(PyLongObject, long_value.lv_tag));
	F(long_size_shift, _PyLong_NON_SIZE_BITS); /* the digit count above the sign bits */
	F(long_digits, offsetof(PyLongObject, long_value.ob_digit));
	F(values_values, offsetof(PyDictValues, values));
#if PY_MINOR_VERSION == 12
	/* one word before the object: the dict, or its values tagged with the low bit */
	F(managed_layout, 2);
	F(managed_dict_before, 3 * sizeof(PyDictOrValues)); /* _PyObject_DictOrValuesPointer */
#else
	/* the values inline after the object header (while valid), else a dict before it */
	F(managed_layout, 3);
	F(managed_dict_before, -MANAGED_DICT_OFFSET);
	F(inline_values, sizeof(PyObject));
	F(type_inline_values_flag, Py_TPFLAGS_INLINE_VALUES);
	F(values_valid, offsetof(PyDictValues, valid));
#endif
#endif
	F(type_flags, offsetof(PyTypeObject, tp_flags));
	F(type_managed_dict_flag, Py_TPFLAGS_MANAGED_DICT);
	F(type_ht_cached_keys, offsetof(PyHeapTypeObject, ht_cached_keys));
#else
	/* thread names: the threading module's dicts (struct old_dict_keys above) and instances,
	 * each with its dict at its type's tp_dictoffset; a thread's kernel tid is its Thread's
	 * _native_id (the thread state has none) */
	F(has_thread_names, 1);
	F(dict_keys, offsetof(PyDictObject, ma_keys));
	F(dict_values, offsetof(PyDictObject, ma_values));
	F(dict_used, offsetof(PyDictObject, ma_used));
	F(keys_dk_size, offsetof(struct old_dict_keys, dk_size));
	F(keys_nentries, offsetof(struct old_dict_keys, dk_nentries));
	F(keys_indices, offsetof(struct old_dict_keys, dk_indices));
	F(entry_size, sizeof(struct old_dict_entry));
	F(entry_key, offsetof(struct old_dict_entry, me_key));
	F(entry_value, offsetof(struct old_dict_entry, me_value));
#if PY_MINOR_VERSION == 10
	F(module_dict, offsetof(PyModuleObject, md_dict));
#else
	F(module_dict, sizeof(PyObject)); /* private in moduleobject.c: PyObject_HEAD, md_dict */
#endif
	F(long_digit_bits, PyLong_SHIFT);
	F(long_size, offsetof(PyVarObject, ob_size));
	F(long_digits, offsetof(PyLongObject, ob_digit));
	F(type_dictoffset, offsetof(PyTypeObject, tp_dictoffset));
#endif
	/* The GIL: a thread blocked in futex() on its cond or mutex, [gil_wait_lo, gil_wait_hi) of
	 * it, is waiting to take it (switch_cond, after them, is where its holder waits to hand it
	 * over). Where it is: in _PyRuntime before 3.12, then the interpreter's ceval.gil points to
	 * it. */
#if PY_MINOR_VERSION <= 11
	F(gil_at, offsetof(_PyRuntimeState, ceval.gil));
#else
	F(gil_via_interp, 1);
	F(gil_at, offsetof(PyInterpreterState, ceval.gil));
#endif
	F(gil_wait_lo, offsetof(struct _gil_runtime_state, cond));
	F(gil_wait_hi, offsetof(struct _gil_runtime_state, switch_cond));
#if PY_MINOR_VERSION >= 13
	/* where _PyRuntime's leading _Py_DebugOffsets keeps the offsets above, for reading them
	 * from the target itself (userspace/python/py_debug_offsets.c) */
	print_debug_layout();
#endif
	printf("\t} },\n");
	return 0;
}
