// SPDX-License-Identifier: MIT
#include "python/py_code.h"
#include "python/py_proc.h"
#include "util/util.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#define MAX_STR 512	   /* characters of a name or path kept */
#define MAX_LINETABLE 65536 /* bytes of a location table read */

struct code_entry {
	struct {
		uint64_t addr;
		uint64_t qualname; /* tells a new code object at a freed one's address apart */
		uint64_t name_fp;  /* ... and a new name at a freed one's */
		int pid;
	} key;
	struct py_code code;
	UT_hash_handle hh;
};

struct py_codes {
	struct code_entry *map;
};

struct py_codes *py_codes__new(void)
{
	return xcalloc(1, sizeof(struct py_codes));
}

static void entry_free(struct code_entry *e)
{
	free(e->code.qualname);
	free(e->code.filename);
	free(e->code.linetable);
	free(e);
}

void py_codes__forget(struct py_codes *c, int pid)
{
	struct code_entry *e, *tmp;

	HASH_ITER(hh, c->map, e, tmp) {
		if (pid && e->key.pid != pid)
			continue;
		HASH_DEL(c->map, e);
		entry_free(e);
	}
}

void py_codes__free(struct py_codes *c)
{
	if (!c)
		return;
	py_codes__forget(c, 0);
	free(c);
}

static size_t put_utf8(char *out, size_t room, uint32_t cp)
{
	if (cp < 0x80 && room > 1) {
		out[0] = cp;
		return 1;
	}
	if (cp < 0x800 && room > 2) {
		out[0] = 0xc0 | cp >> 6;
		out[1] = 0x80 | (cp & 0x3f);
		return 2;
	}
	if (cp < 0x10000 && room > 3) {
		out[0] = 0xe0 | cp >> 12;
		out[1] = 0x80 | ((cp >> 6) & 0x3f);
		out[2] = 0x80 | (cp & 0x3f);
		return 3;
	}
	if (cp < 0x110000 && room > 4) {
		out[0] = 0xf0 | cp >> 18;
		out[1] = 0x80 | ((cp >> 12) & 0x3f);
		out[2] = 0x80 | ((cp >> 6) & 0x3f);
		out[3] = 0x80 | (cp & 0x3f);
		return 4;
	}
	return 0;
}

int py_str__read(int pid, const struct py_offsets *off, uint64_t addr, char *buf, size_t len)
{
	uint8_t raw[MAX_STR * 4];
	uint32_t state, kind;
	int64_t n;
	size_t w = 0, data;

	buf[0] = 0;
	if (!addr || py_mem__read(pid, addr + off->str_length, &n, sizeof(n)) ||
	    py_mem__read(pid, addr + off->str_state, &state, sizeof(state)))
		return -EFAULT;
	if (!(state & off->str_compact_mask) || n < 0)
		return -ENOTSUP; /* a legacy (non-compact) string: code names never are */
	kind = (state & off->str_kind_mask) / (off->str_kind_mask & -off->str_kind_mask);
	if (kind != 1 && kind != 2 && kind != 4)
		return -EINVAL;
	data = state & off->str_ascii_mask ? off->str_ascii_data : off->str_compact_data;
	if (n > MAX_STR)
		n = MAX_STR;
	if (py_mem__read(pid, addr + data, raw, n * kind))
		return -EFAULT;
	for (int64_t i = 0; i < n; i++) {
		uint32_t cp = kind == 1 ? raw[i]
			      : kind == 2 ? ((uint16_t *)raw)[i]
					  : ((uint32_t *)raw)[i];
		size_t k = put_utf8(buf + w, len - w, cp);

		if (!k)
			break;
		w += k;
	}
	buf[w] = 0;
	return 0;
}

static void read_code(struct py_code *code, const struct py_offsets *off)
{
	char buf[MAX_STR * 4 + 1];
	uint64_t p;
	int64_t n;
	int32_t line;

	if (!py_mem__read(code->pid, code->addr + off->code_qualname, &p, sizeof(p)) &&
	    !py_str__read(code->pid, off, p, buf, sizeof(buf)) && buf[0])
		code->qualname = xstrdup(buf);
	else
		code->qualname = xstrdup("?");
	if (!py_mem__read(code->pid, code->addr + off->code_filename, &p, sizeof(p)) &&
	    !py_str__read(code->pid, off, p, buf, sizeof(buf)))
		code->filename = xstrdup(buf);
	else
		code->filename = xstrdup("?");
	if (!py_mem__read(code->pid, code->addr + off->code_firstlineno, &line, sizeof(line)))
		code->firstlineno = line;
	code->line_format = off->line_format;
	code->code_start = off->line_format == 3 ? code->addr + off->code_adaptive : 0;
	code->unit_size = off->code_unit_size ? off->code_unit_size : 2;
	if (py_mem__read(code->pid, code->addr + off->code_linetable, &p, sizeof(p)) ||
	    py_mem__read(code->pid, p + off->var_size, &n, sizeof(n)) || n <= 0 ||
	    n > MAX_LINETABLE)
		return;
	code->linetable = xcalloc(n, 1);
	if (py_mem__read(code->pid, p + off->bytes_data, code->linetable, n)) {
		free(code->linetable);
		code->linetable = NULL;
		return;
	}
	code->linetable_len = n;
}

/* The code object is gone: its name, if the string still lives, and nothing else. */
static void read_gone(struct py_code *code, const struct py_offsets *off, uint64_t qualname)
{
	char buf[MAX_STR * 4 + 1];

	code->qualname = xstrdup(qualname && !py_str__read(code->pid, off, qualname, buf,
							   sizeof(buf)) && buf[0] ? buf : "?");
	code->filename = xstrdup("?");
}

/* The fingerprint BPF takes of a name (bpf/python.bpf.c, name_fp), taken again now. */
static int str_fp(int pid, const struct py_offsets *off, uint64_t addr, uint64_t *fp)
{
	uint64_t length, head;

	if (py_mem__read(pid, addr + off->str_length, &length, sizeof(length)) ||
	    py_mem__read(pid, addr + off->str_ascii_data, &head, sizeof(head)))
		return -EFAULT;
	*fp = py_name_fp(length, head);
	return 0;
}

const struct py_code *py_codes__get(struct py_codes *c, int pid, const struct py_offsets *off,
				    uint64_t addr, uint64_t qualname, uint64_t name_fp)
{
	struct code_entry *e, key;
	uint64_t now, fp;

	memset(&key, 0, sizeof(key));
	key.key.addr = addr;
	key.key.qualname = qualname;
	key.key.name_fp = name_fp;
	key.key.pid = pid;
	HASH_FIND(hh, c->map, &key.key, sizeof(key.key), e);
	if (e)
		return &e->code;
	e = xcalloc(1, sizeof(*e));
	e->key = key.key;
	e->code.pid = pid;
	e->code.addr = addr;
	/* BPF could not read the name (fingerprint 0): it is trusted as before */
	if (name_fp && (str_fp(pid, off, qualname, &fp) || fp != name_fp))
		read_gone(&e->code, off, 0);
	else if (!py_mem__read(pid, addr + off->code_qualname, &now, sizeof(now)) &&
		 now == qualname)
		read_code(&e->code, off);
	else
		read_gone(&e->code, off, qualname);
	HASH_ADD(hh, c->map, key, sizeof(e->key), e);
	return &e->code;
}

static uint64_t varint(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;
	int shift = 0;
	uint8_t b;

	do {
		if (*p >= end || shift > 60)
			return v;
		b = *(*p)++;
		v |= (uint64_t)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return v;
}

/* A signed line delta; a hostile table's huge ones are cut to what no real file has, so that
 * the sum stays far from overflowing (tables are at most MAX_LINETABLE bytes). */
static int64_t svarint(const uint8_t **p, const uint8_t *end)
{
	uint64_t raw = varint(p, end), v = raw >> 1;

	if (v > INT_MAX)
		v = INT_MAX;
	return raw & 1 ? -(int64_t)v : (int64_t)v;
}

/* The format is CPython's Objects/locations.md: entries of one start byte (bit 7 set, a 4-bit
 * code, the length in code units minus one) and a code-dependent tail. */
int py_linetable__line(const uint8_t *tab, size_t len, int firstlineno, uint64_t unit)
{
	const uint8_t *p = tab, *end = tab + len;
	int64_t line = firstlineno;
	uint64_t at = 0;

	while (p < end) {
		uint8_t b = *p++;
		int code = (b >> 3) & 15, n = (b & 7) + 1;

		switch (code) {
		case 15: /* no location */
			break;
		case 14: /* long form: line delta, end line delta, column, end column */
			line += svarint(&p, end);
			varint(&p, end);
			varint(&p, end);
			varint(&p, end);
			break;
		case 13: /* no columns */
			line += svarint(&p, end);
			break;
		case 10:
		case 11:
		case 12: /* one line, delta 0..2, two column bytes */
			line += code - 10;
			p += end - p < 2 ? end - p : 2;
			break;
		default: /* short form: same line, one column byte */
			p += p < end;
			break;
		}
		if (unit < at + n)
			return code == 15 || line < 0 || line > INT_MAX ? -1 : (int)line;
		at += n;
	}
	return -1;
}

/* CPython 3.8's PyCode_Addr2Line: (address delta, signed line delta) byte pairs; a line
 * delta counts from the first address past the pair's. */
int py_lnotab__line(const uint8_t *tab, size_t len, int firstlineno, uint64_t offset)
{
	int64_t line = firstlineno;
	uint64_t addr = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		addr += tab[i];
		if (addr > offset)
			break;
		line += (int8_t)tab[i + 1];
	}
	return line < 0 || line > INT_MAX ? -1 : (int)line;
}

/* CPython 3.10's co_linetable (Objects/lnotab_notes.txt): (range length, signed line delta)
 * byte pairs, the delta giving the range's own line; -128: the range has none. */
int py_linetable310__line(const uint8_t *tab, size_t len, int firstlineno, uint64_t offset)
{
	int64_t line = firstlineno;
	uint64_t start = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		uint64_t end = start + tab[i];
		int8_t delta = (int8_t)tab[i + 1];

		if (delta != -128)
			line += delta;
		if (offset >= start && offset < end)
			return delta == -128 || line < 0 || line > INT_MAX ? -1 : (int)line;
		start = end;
	}
	return -1;
}

int py_code__line(const struct py_code *code, uint64_t instr)
{
	int32_t lasti = (int32_t)instr; /* before 3.11: f_lasti, an int (f_lineno beside it) */

	if (!code->linetable)
		return -1;
	if (code->line_format == 1)
		return lasti < 0 ? -1 : py_lnotab__line(code->linetable, code->linetable_len,
							 code->firstlineno, lasti);
	if (code->line_format == 2)
		return lasti < 0 ? -1 : py_linetable310__line(code->linetable, code->linetable_len,
							       code->firstlineno,
							       (uint64_t)lasti * code->unit_size);
	if (instr < code->code_start)
		return -1;
	return py_linetable__line(code->linetable, code->linetable_len, code->firstlineno,
				  (instr - code->code_start) / code->unit_size);
}
