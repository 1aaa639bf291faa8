// SPDX-License-Identifier: MIT
#include "trace/json_text.h"
#include "util/util.h"

#include <stdbool.h>
#include <string.h>

static const char hex[] = "0123456789abcdef";

/* \uXXXX for a hidden character (all are in the Basic Multilingual Plane); returns the end. */
static char *put_u_escape(char *p, uint32_t cp)
{
	*p++ = '\\';
	*p++ = 'u';
	for (int shift = 12; shift >= 0; shift -= 4)
		*p++ = hex[cp >> shift & 15];
	return p;
}

size_t json_clean(char *out, const char *s, size_t n)
{
	bool in_str = false, esc = false;
	size_t o = 0;

	for (size_t i = 0; i < n;) {
		unsigned char c = s[i];
		uint32_t cp;
		size_t take;

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') { /* most of any text */
			out[o++] = c;
			esc = false;
			i++;
			continue;
		}
		take = utf8_next(s + i, n - i, &cp);
		if (!take) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			esc = false;
			take = 1;
		} else if (in_str && text_hidden(cp)) { /* never raw inside a string */
			o = put_u_escape(out + o, cp) - out;
			esc = false;
		} else {
			memcpy(out + o, s + i, take);
			o += take;
			if (in_str && esc)
				esc = false;
			else if (in_str && cp == '\\')
				esc = true;
			else if (cp == '"')
				in_str = !in_str;
		}
		i += take;
	}
	out[o] = 0;
	return o;
}

size_t json_escape(char *out, size_t len, const char *s, size_t max)
{
	size_t o = 0, i = 0;

	if (!len)
		return 0;
	while (i < max && s[i]) {
		unsigned char c = s[i];
		char esc[8];
		size_t n = 0, take;
		uint32_t cp;

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') { /* most of any text */
			if (o + 1 >= len)
				break;
			out[o++] = c;
			i++;
			continue;
		}
		if (c < 0x80)
			take = 1, cp = c;
		else /* a character is at most 4 bytes: never look further for the NUL */
			take = utf8_next(s + i, strnlen(s + i, max - i < 4 ? max - i : 4), &cp);
		if (!take) {
			memcpy(esc, "\xef\xbf\xbd", 3); /* U+FFFD */
			n = 3;
			take = 1;
		} else if (cp == '"' || cp == '\\') {
			esc[n++] = '\\';
			esc[n++] = cp;
		} else if (cp == '\n' || cp == '\t' || cp == '\r') {
			esc[n++] = '\\';
			esc[n++] = cp == '\n' ? 'n' : cp == '\t' ? 't' : 'r';
		} else if (text_hidden(cp)) {
			n = put_u_escape(esc, cp) - esc;
		} else {
			memcpy(esc, s + i, take);
			n = take;
		}
		if (o + n >= len)
			break;
		memcpy(out + o, esc, n);
		o += n;
		i += take;
	}
	out[o] = 0;
	return o;
}

char *json_put_u64(char *p, uint64_t v)
{
	char tmp[24];
	int n = 0;

	do {
		tmp[n++] = '0' + v % 10;
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

size_t fmt_us(char *out, uint64_t ns)
{
	char *p = json_put_u64(out, ns / 1000);
	unsigned frac = ns % 1000;

	*p++ = '.';
	*p++ = '0' + frac / 100;
	*p++ = '0' + frac / 10 % 10;
	*p++ = '0' + frac % 10;
	*p = 0;
	return p - out;
}
