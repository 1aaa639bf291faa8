// SPDX-License-Identifier: MIT
#include "trace/json_text.h"

#include <stdbool.h>
#include <string.h>

size_t utf8_len(const unsigned char *s, size_t max)
{
	size_t n;
	unsigned c = s[0], min;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, min = 0x10000;
	else
		return 0;
	if (n > max)
		return 0;
	unsigned cp = c & (0x3f >> (n - 1));
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

size_t text_safe(char *out, size_t len, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0, i = 0;

	if (!len)
		return 0;
	while (i < n) {
		size_t take = p[i] < 0x80 ? 1 : utf8_len(p + i, n - i);
		/* C0 and DEL, C1 (U+0080..U+009F: 0xc2 0x80..0x9f), or not UTF-8 */
		bool bad = !take || p[i] < 0x20 || p[i] == 0x7f || (p[i] == 0xc2 && p[i + 1] < 0xa0);
		const char *w = bad ? "\xef\xbf\xbd" : s + i;
		size_t wn = bad ? 3 : take;

		if (o + wn >= len)
			break;
		memcpy(out + o, w, wn);
		o += wn;
		i += take ? take : 1;
	}
	out[o] = 0;
	return o;
}

size_t json_clean(char *out, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	bool in_str = false, esc = false;
	size_t o = 0;

	for (size_t i = 0; i < n;) {
		unsigned c = p[i];
		size_t take = c < 0x80 ? 1 : utf8_len(p + i, n - i);

		if (in_str && c < 0x20) { /* a raw control byte: never valid inside a string */
			memcpy(out + o, "\\u00", 4);
			out[o + 4] = hex[c >> 4];
			out[o + 5] = hex[c & 15];
			o += 6;
			esc = false;
		} else if (!take) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			esc = false;
			take = 1;
		} else {
			memcpy(out + o, s + i, take);
			o += take;
			if (in_str && esc)
				esc = false;
			else if (in_str && c == '\\')
				esc = true;
			else if (c == '"')
				in_str = !in_str;
		}
		i += take;
	}
	out[o] = 0;
	return o;
}

size_t json_escape(char *out, size_t len, const char *s, size_t max)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0, i = 0;

	if (!len)
		return 0;
	while (i < max && p[i]) {
		unsigned c = p[i];
		char esc[8];
		size_t n = 0, take = 1;

		if (c == '"' || c == '\\') {
			esc[n++] = '\\';
			esc[n++] = c;
		} else if (c == '\n' || c == '\t' || c == '\r') {
			esc[n++] = '\\';
			esc[n++] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
		} else if (c < 0x20 || c == 0x7f) {
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			n = 6;
		} else if (c < 0x80) {
			esc[n++] = c;
		} else {
			take = utf8_len(p + i, strnlen(s + i, max - i));
			if (take) {
				memcpy(esc, p + i, take);
				n = take;
			} else {
				memcpy(esc, "\xef\xbf\xbd", 3); /* U+FFFD */
				n = 3;
				take = 1;
			}
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
