/* SPDX-License-Identifier: MIT */
/* C++ symbol names for display and matching: "_ZN4onnx4Conv7ComputeER7Context" is shown as
 * "onnx::Conv::Compute(Context&)" and matched by the globs "onnx::Conv*::Compute" and
 * "onnx::Conv::Compute(Context&)" as well as by its ELF name. Demangled with the C++ runtime's
 * __cxa_demangle; each name is demangled once and kept for the life of the process. */
#ifndef TRACER_DEMANGLE_H
#define TRACER_DEMANGLE_H

#include <stdbool.h>

struct demangled {
	char *full; /* "onnx::Conv::Compute(Context&) const" */
	char *base; /* "onnx::Conv::Compute": no parameter list, no qualifiers after it, no return
		     * type before it (function templates), no [abi:...] tags; clone suffixes
		     * (" [clone .cold]") and thunk prefixes are kept, so that a glob for the
		     * function does not also catch its cold part or a thunk */
};

/* The demangled forms of name, or NULL when it is not a mangled C++ name (C names, Go names,
 * a name the demangler rejects). Valid until demangle__reset(). */
const struct demangled *demangle__get(const char *name);

/* What to show for a symbol: its demangled name, or name itself. */
const char *demangle__display(const char *name);

/* Whether glob (fnmatch(3), no flags) matches the symbol name, or its demangled name with or
 * without the parameter list. */
bool demangle__match(const char *glob, const char *name);

/* Computes the base form of a demangled name into a new string (exposed for tests). */
char *demangle__base(const char *full);

/* Frees every name demangled so far. */
void demangle__reset(void);

#endif
