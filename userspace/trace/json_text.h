/* SPDX-License-Identifier: MIT */
/* JSON text for every file tracer writes (trace, report, export, merge): escaped strings,
 * numbers, timestamps in microseconds. */
#ifndef TRACER_JSON_TEXT_H
#define TRACER_JSON_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Escapes s (at most max bytes) as the inside of a JSON string: quotes, backslashes, control
 * characters; bytes that are not valid UTF-8 become U+FFFD. Writes at most len-1 bytes plus NUL
 * and returns the length written. */
size_t json_escape(char *out, size_t len, const char *s, size_t max);

/* Copies n bytes of s as text safe for a terminal, a CSV cell and a C string: control
 * characters (C0, DEL, C1 — ESC, CR, NUL...) and bytes that are not valid UTF-8 become U+FFFD,
 * so a name from the target never moves the cursor or retitles a window. Writes at most len-1
 * bytes plus NUL (3 * n + 1 always fits) and returns the length written. */
size_t text_safe(char *out, size_t len, const char *s, size_t n);

/* Copies the JSON text s (n bytes: an event, a value) so that it stays valid whatever the
 * input held: raw control bytes inside strings become \u00XX escapes, bytes that are not valid
 * UTF-8 become U+FFFD. out must hold 6 * n + 1 bytes; returns the length written. */
size_t json_clean(char *out, const char *s, size_t n);

/* Length of the valid UTF-8 sequence at s (at most max bytes, max > 0), or 0. */
size_t utf8_len(const unsigned char *s, size_t max);

/* Writes v in decimal at p (no NUL); returns the end. */
char *json_put_u64(char *p, uint64_t v);

/* Formats ns as microseconds with exactly three decimals ("1234.567"). Returns the length. */
size_t fmt_us(char *out, uint64_t ns);

#endif
