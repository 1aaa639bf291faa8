// SPDX-License-Identifier: MIT
/* Prints the struct offsets tracer needs to read one CPython minor version's frames, as one
 * C initializer of struct py_offsets (bpf/events.h). Built and run at build time against that
 * version's -dev headers (internal ones included), so no offset is ever typed by hand:
 *
 *   cc -I/usr/include/python3.11 tools/py_offsets.c -o py_offsets && ./py_offsets
 *
 * A version whose structs moved gets its own #if branch here, never a table of numbers. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_runtime.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_code.h>
#include <internal/pycore_dict.h>
#include <internal/pycore_moduleobject.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#if PY_MAJOR_VERSION != 3 || PY_MINOR_VERSION != 11
#error "tools/py_offsets.c knows CPython 3.11's structs; add a branch for this version"
#endif

#define F(field, value) printf("\t\t." #field " = %lu,\n", (unsigned long)(value))

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
	F(interp_threads_head, offsetof(PyInterpreterState, threads.head));
	F(interp_modules, offsetof(PyInterpreterState, modules));
	F(tstate_next, offsetof(PyThreadState, next));
	F(tstate_native_thread_id, offsetof(PyThreadState, native_thread_id));
	F(tstate_thread_id, offsetof(PyThreadState, thread_id));
	F(tstate_cframe, offsetof(PyThreadState, cframe));
	F(cframe_current_frame, offsetof(_PyCFrame, current_frame));
	F(frame_code, offsetof(_PyInterpreterFrame, f_code));
	F(frame_previous, offsetof(_PyInterpreterFrame, previous));
	F(frame_prev_instr, offsetof(_PyInterpreterFrame, prev_instr));
	F(frame_owner, offsetof(_PyInterpreterFrame, owner));
	F(code_filename, offsetof(PyCodeObject, co_filename));
	F(code_name, offsetof(PyCodeObject, co_name));
	F(code_qualname, offsetof(PyCodeObject, co_qualname));
	F(code_firstlineno, offsetof(PyCodeObject, co_firstlineno));
	F(code_linetable, offsetof(PyCodeObject, co_linetable));
	F(code_adaptive, offsetof(PyCodeObject, co_code_adaptive));
	F(code_unit_size, sizeof(_Py_CODEUNIT));
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
	F(long_digits, offsetof(PyLongObject, ob_digit));
	F(long_digit_bits, PyLong_SHIFT);
	/* 3.11 keeps an instance's dict (or its inline values) before the object header */
	F(managed_dict_before, 3 * sizeof(PyObject *));
	F(managed_values_before, 4 * sizeof(PyObject *));
	F(type_flags, offsetof(PyTypeObject, tp_flags));
	F(type_managed_dict_flag, Py_TPFLAGS_MANAGED_DICT);
	F(type_ht_cached_keys, offsetof(PyHeapTypeObject, ht_cached_keys));
	printf("\t} },\n");
	return 0;
}
