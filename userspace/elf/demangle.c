// SPDX-License-Identifier: MIT
#include "elf/demangle.h"
#include "util/util.h"

#include <ctype.h>
#include <fnmatch.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

/* The Itanium C++ ABI demangler, in libstdc++ (and libc++abi). */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* Prefixes the demangler puts before special functions: they stay part of the base name. */
static const char *const special_prefixes[] = {
	"non-virtual thunk to ",  "virtual thunk to ",	      "covariant return thunk to ",
	"transaction clone for ", "TLS init function for ", "TLS wrapper function for ",
};

/* A hash table from mangled name to its demangled forms. Names that are not C++ are not
 * stored: they are told apart by their prefix, at no cost. */
struct entry {
	char *name;
	struct demangled d; /* d.full NULL: the demangler rejected the name */
	UT_hash_handle hh;
};

static struct entry *cache;

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '$';
}

/* Length of the "operator" keyword and the operator's own symbol at s[i]; 0 if there is none.
 * The symbol ("<<", "()", "->*") must not be taken for brackets. "operator new" and conversion
 * operators ("operator int") keep the word after the space, which the caller reads on. */
static size_t operator_len(const char *s, size_t i)
{
	size_t n = 8;

	if (strncmp(s + i, "operator", 8) || (i && ident_char(s[i - 1])) || ident_char(s[i + 8]))
		return 0;
	if (!strncmp(s + i + n, "()", 2) || !strncmp(s + i + n, "[]", 2))
		return n + 2;
	while (s[i + n] && strchr("<>=!+-*/%^&|~,", s[i + n]))
		n++;
	return n;
}

/* Over s[0..limit): where the last top-level '(' opens (the parameter list: the demangler
 * prints it last), where the first top-level "operator" starts, and the last top-level space
 * before that (after a function template's return type). SIZE_MAX for none. */
static void scan(const char *s, size_t limit, size_t *params, size_t *op, size_t *space)
{
	int depth = 0;

	*params = *op = *space = SIZE_MAX;
	for (size_t i = 0; i < limit; i++) {
		size_t n = operator_len(s, i);

		if (n) {
			if (!depth && *op == SIZE_MAX)
				*op = i;
			i += n - 1;
			continue;
		}
		switch (s[i]) {
		case '(':
			if (!depth)
				*params = i;
			depth++;
			break;
		case '<':
		case '[':
		case '{':
			depth++;
			break;
		case ')':
		case '>':
		case ']':
		case '}':
			depth -= depth > 0;
			break;
		case ' ':
			if (!depth && *op == SIZE_MAX)
				*space = i;
			break;
		}
	}
}

/* Appends s[0..len) to out, leaving out "[abi:cxx11]"-style tags. */
static size_t append_untagged(char *out, size_t n, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		const char *end;

		if (!strncmp(s + i, "[abi:", 5) && (end = memchr(s + i, ']', len - i))) {
			i = end - s;
			continue;
		}
		out[n++] = s[i];
	}
	return n;
}

char *demangle__base(const char *full)
{
	const char *prefix = "", *clone, *s = full;
	size_t len, params, op, space, start = 0, n;
	char *out;

	for (size_t i = 0; i < sizeof(special_prefixes) / sizeof(special_prefixes[0]); i++) {
		size_t l = strlen(special_prefixes[i]);

		if (!strncmp(s, special_prefixes[i], l)) {
			prefix = special_prefixes[i];
			s += l;
			break;
		}
	}
	clone = strstr(s, " [clone ");
	len = clone ? (size_t)(clone - s) : strlen(s);
	scan(s, len, &params, &op, &space);
	if (params != SIZE_MAX && params > 0)
		len = params;
	scan(s, len, &params, &op, &space);
	if (space != SIZE_MAX)
		start = space + 1;

	out = xcalloc(strlen(prefix) + strlen(full) + 1, 1);
	n = strlen(prefix);
	memcpy(out, prefix, n);
	n = append_untagged(out, n, s + start, len - start);
	if (clone)
		strcpy(out + n, clone);
	return out;
}

const struct demangled *demangle__get(const char *name)
{
	struct entry *e;
	int status = 0;

	/* Only "_Z" names are mangled C++ ones; the demangler would also turn "i" into "int". */
	if (!name || strncmp(name, "_Z", 2))
		return NULL;
	HASH_FIND_STR(cache, name, e);
	if (!e) {
		char *full = __cxa_demangle(name, NULL, NULL, &status);

		e = xcalloc(1, sizeof(*e));
		e->name = xstrdup(name);
		if (full && !status) {
			e->d.full = full;
			e->d.base = demangle__base(full);
		} else {
			free(full);
		}
		HASH_ADD_KEYPTR(hh, cache, e->name, strlen(e->name), e);
	}
	return e->d.full ? &e->d : NULL;
}

const char *demangle__display(const char *name)
{
	const struct demangled *d = demangle__get(name);

	return d ? d->full : name;
}

bool demangle__match(const char *glob, const char *name)
{
	const struct demangled *d;

	if (!fnmatch(glob, name, 0))
		return true;
	d = demangle__get(name);
	return d && (!fnmatch(glob, d->base, 0) || !fnmatch(glob, d->full, 0));
}

void demangle__reset(void)
{
	struct entry *e, *tmp;

	HASH_ITER(hh, cache, e, tmp) {
		HASH_DEL(cache, e);
		free(e->name);
		free(e->d.full);
		free(e->d.base);
		free(e);
	}
}
