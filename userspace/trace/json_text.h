/* SPDX-License-Identifier: MIT */
/* JSON text for every file tracer writes (trace, report, export, merge): escaped strings,
 * numbers, timestamps in microseconds. */
#ifndef TRACER_JSON_TEXT_H
#define TRACER_JSON_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Escapes s (at most max bytes) as the inside of a JSON string: quotes, backslashes, and the
 * characters the text rule (util/util.h) hides (controls, DEL, C1, bidi controls) as \uXXXX;
 * bytes that are not valid UTF-8 become U+FFFD. Writes at most len-1 bytes plus NUL and
 * returns the length written. */
size_t json_escape(char *out, size_t len, const char *s, size_t max);

/* Copies the JSON text s (n bytes: an event, a value) so that it stays valid and shows as it
 * is whatever the input held: the characters the text rule (util/util.h) hides, raw inside
 * strings, become \uXXXX escapes; bytes that are not valid UTF-8 become U+FFFD. out must hold
 * 6 * n + 1 bytes; returns the length written. */
size_t json_clean(char *out, const char *s, size_t n);

/* Writes v in decimal at p (no NUL); returns the end. */
char *json_put_u64(char *p, uint64_t v);

/* Formats ns as microseconds with exactly three decimals ("1234.567"). Returns the length. */
size_t fmt_us(char *out, uint64_t ns);

#endif
