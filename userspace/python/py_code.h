/* SPDX-License-Identifier: MIT */
/* Names of Python code objects (qualified name, file, first line) and the line an instruction
 * pointer is on, read from the target's memory once per code object and cached. */
#ifndef TRACER_PY_CODE_H
#define TRACER_PY_CODE_H

#include "python/py_offsets.h"

#include <stddef.h>
#include <stdint.h>

struct py_code {
	int pid;
	uint64_t addr;
	char *qualname; /* "?" when it could not be read */
	char *filename;
	int firstlineno;
	int line_format;    /* py_offsets.line_format */
	uint8_t *linetable; /* co_linetable (3.10 on) or co_lnotab */
	size_t linetable_len;
	uint64_t code_start; /* address of the first code unit (co_code_adaptive) */
	uint32_t unit_size;
};

struct py_codes;

struct py_codes *py_codes__new(void);
void py_codes__free(struct py_codes *c);
/* The code object at addr in pid's memory whose co_qualname was the str at qualname, with
 * fingerprint name_fp (py_name_fp), when BPF read the frame; named the first time. A code object
 * freed since (a module's body, once imported) may have left its memory to another one: then
 * only its name is known (from qualname, if that string still lives), not its file; and a name
 * whose str has been freed and taken by another string is unknown ("?"), never another
 * function's. Entries stay valid until py_codes__forget(pid). */
const struct py_code *py_codes__get(struct py_codes *c, int pid, const struct py_offsets *off,
				    uint64_t addr, uint64_t qualname, uint64_t name_fp);
/* Forgets pid's code objects (it exited or ran exec: the addresses mean something else now). */
void py_codes__forget(struct py_codes *c, int pid);

/* The source line of the instruction at instr (a frame's prev_instr, or before 3.11 its
 * f_lasti), or -1 if unknown. */
int py_code__line(const struct py_code *code, uint64_t instr);
/* The line of code unit index `unit` in a 3.11 location table starting at firstlineno; -1 for
 * none. Pure: unit-tested on tables CPython made. */
int py_linetable__line(const uint8_t *tab, size_t len, int firstlineno, uint64_t unit);

/* The line of byte offset `offset` in a 3.8-3.9 co_lnotab, or a 3.10 co_linetable. Pure. */
int py_lnotab__line(const uint8_t *tab, size_t len, int firstlineno, uint64_t offset);
int py_linetable310__line(const uint8_t *tab, size_t len, int firstlineno, uint64_t offset);

/* Reads a str object as UTF-8 into buf (at most len-1 bytes and a NUL). 0 or -errno. */
int py_str__read(int pid, const struct py_offsets *off, uint64_t addr, char *buf, size_t len);

#endif
