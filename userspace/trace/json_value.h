/* SPDX-License-Identifier: MIT */
/* JSON values inside one event, in memory (the trace reader hands out events as raw text). */
#ifndef TRACER_JSON_VALUE_H
#define TRACER_JSON_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A JSON number of microseconds as exact nanoseconds (rounded half away from zero at 1 ns).
 * 0 or -EINVAL. */
int json_us_to_ns(const char *s, size_t len, int64_t *ns);
/* Decodes the JSON string literal at s (starting at its quote) into out (at most outlen-1
 * bytes, NUL-terminated; *written, if not NULL, is their number: "\u0000" decodes to a NUL
 * inside). Returns the bytes of s consumed, or 0 if it is not a string. */
size_t json_unescape(const char *s, size_t len, char *out, size_t outlen, size_t *written);
/* The length of the JSON value at s (after leading white space is skipped by the caller), or
 * 0 if it is malformed or cut short. */
size_t json_value_len(const char *s, size_t len);
/* The len bytes at s are exactly one JSON value (RFC 8259, white space around it allowed):
 * strings of valid UTF-8 without raw control characters, no NaN, nested at most
 * JSON_MAX_DEPTH deep. What a strict reader (Python's json, a browser) accepts. */
#define JSON_MAX_DEPTH 512
bool json_valid(const char *s, size_t len);
/* Looks up key in the JSON object at s and returns where its value starts (length in *vlen),
 * or NULL. Only the object's own keys are searched. */
const char *json_object_get(const char *s, size_t len, const char *key, size_t *vlen);

/* Where a JSON string, object or array ends, a byte at a time from its first: the in-memory
 * json_value_len and the streaming trace reader both use it. */
struct json_scan {
	int depth;
	bool in_str, esc;
};

/* 1 when ch ends the value, else 0. */
static inline int json_scan__byte(struct json_scan *s, char ch)
{
	if (s->in_str) {
		if (s->esc)
			s->esc = false;
		else if (ch == '\\')
			s->esc = true;
		else if (ch == '"')
			s->in_str = false;
		return !s->in_str && !s->depth;
	}
	if (ch == '"')
		s->in_str = true;
	else if (ch == '{' || ch == '[')
		s->depth++;
	else if (ch == '}' || ch == ']')
		return --s->depth == 0;
	return 0;
}

/* p past JSON white space (at most end). */
const char *json_skip_ws(const char *p, const char *end);
/* Decodes the escape at p (just after the backslash) into out; returns bytes of input used
 * (0 if malformed) and sets *n to the bytes written (at most 4). */
size_t json_unescape_one(const char *p, const char *end, char *out, size_t *n);
/* json_unescape_one failed on the escape at p: true when the input's end cut a valid one short
 * (nothing after the backslash, or "u" and fewer than four hex digits), false for an escape
 * that is wrong whatever follows (a NUL, "\:", "\u01M"). */
bool json_escape_cut(const char *p, const char *end);

#endif
