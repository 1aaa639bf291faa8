// SPDX-License-Identifier: MIT
/* JSON values inside one event, in memory: their length, unescaping strings, looking up a key,
 * numbers of microseconds as exact nanoseconds. */
#include "trace/json_value.h"
#include "util/util.h"
#include "trace/json_text.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

const char *json_skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	return p;
}

size_t json_value_len(const char *s, size_t len)
{
	const char *p = s, *end = s + len;
	struct json_scan sc = { 0 };

	if (!len)
		return 0;
	if (*p != '"' && *p != '{' && *p != '[') {
		while (p < end && !strchr(",}] \t\r\n", *p))
			p++;
		return p - s;
	}
	for (; p < end; p++)
		if (json_scan__byte(&sc, *p))
			return p + 1 - s;
	return 0;
}

/* ---- strict validation: each step returns where the value ends, or NULL ---------------- */

static const char *valid_value(const char *p, const char *end, int depth);

static const char *valid_string(const char *p, const char *end)
{
	for (p++; p < end && *p != '"';) {
		unsigned char c = *p;

		if (c < 0x20)
			return NULL;
		if (c == '\\' && p + 1 < end && p[1] == 'u') {
			for (int i = 2; i < 6; i++)
				if (p + i >= end || !isxdigit((unsigned char)p[i]))
					return NULL;
			p += 6;
		} else if (c == '\\') {
			if (p + 1 >= end || !p[1] || !strchr("\"\\/bfnrt", p[1]))
				return NULL;
			p += 2;
		} else {
			uint32_t cp;
			size_t n = utf8_next(p, end - p, &cp);

			if (!n)
				return NULL;
			p += n;
		}
	}
	return p < end ? p + 1 : NULL;
}

static const char *digits(const char *p, const char *end)
{
	const char *start = p;

	while (p < end && *p >= '0' && *p <= '9')
		p++;
	return p > start ? p : NULL;
}

static const char *valid_number(const char *p, const char *end)
{
	if (p < end && *p == '-')
		p++;
	if (p < end && *p == '0')
		p++;
	else if (!(p = digits(p, end)))
		return NULL;
	if (p < end && *p == '.' && !(p = digits(p + 1, end)))
		return NULL;
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		p = digits(p, end);
	}
	return p;
}

/* The members of an object (pairs) or the elements of an array, up to close. */
static const char *valid_members(const char *p, const char *end, int depth, bool pairs,
				 char close)
{
	p = json_skip_ws(p + 1, end);
	if (p < end && *p == close)
		return p + 1;
	for (;;) {
		if (pairs) {
			if (p >= end || *p != '"' || !(p = valid_string(p, end)))
				return NULL;
			p = json_skip_ws(p, end);
			if (p >= end || *p != ':')
				return NULL;
			p = json_skip_ws(p + 1, end);
		}
		if (!(p = valid_value(p, end, depth + 1)))
			return NULL;
		p = json_skip_ws(p, end);
		if (p < end && *p == close)
			return p + 1;
		if (p >= end || *p != ',')
			return NULL;
		p = json_skip_ws(p + 1, end);
	}
}

static const char *valid_word(const char *p, const char *end, const char *word)
{
	size_t n = strlen(word);

	return (size_t)(end - p) >= n && !memcmp(p, word, n) ? p + n : NULL;
}

static const char *valid_value(const char *p, const char *end, int depth)
{
	if (p >= end || depth > JSON_MAX_DEPTH)
		return NULL;
	switch (*p) {
	case '{':
		return valid_members(p, end, depth, true, '}');
	case '[':
		return valid_members(p, end, depth, false, ']');
	case '"':
		return valid_string(p, end);
	case 't':
		return valid_word(p, end, "true");
	case 'f':
		return valid_word(p, end, "false");
	case 'n':
		return valid_word(p, end, "null");
	default:
		return valid_number(p, end);
	}
}

bool json_valid(const char *s, size_t len)
{
	const char *end = s + len, *p = valid_value(json_skip_ws(s, end), end, 1);

	return p && json_skip_ws(p, end) == end;
}

bool json_escape_cut(const char *p, const char *end)
{
	if (p < end && *p++ != 'u')
		return false;
	for (; p < end; p++) {
		char lower = *p | 0x20;

		if (!(*p >= '0' && *p <= '9') && !(lower >= 'a' && lower <= 'f'))
			return false;
	}
	return true;
}

static int hex4(const char *p, const char *end, unsigned *v)
{
	*v = 0;
	if (end - p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		char c = p[i];

		*v <<= 4;
		if (c >= '0' && c <= '9')
			*v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			*v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			*v |= c - 'A' + 10;
		else
			return -1;
	}
	return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = 0xc0 | cp >> 6;
		o[1] = 0x80 | (cp & 0x3f);
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = 0xe0 | cp >> 12;
		o[1] = 0x80 | (cp >> 6 & 0x3f);
		o[2] = 0x80 | (cp & 0x3f);
		return 3;
	}
	o[0] = 0xf0 | cp >> 18;
	o[1] = 0x80 | (cp >> 12 & 0x3f);
	o[2] = 0x80 | (cp >> 6 & 0x3f);
	o[3] = 0x80 | (cp & 0x3f);
	return 4;
}

size_t json_unescape_one(const char *p, const char *end, char *out, size_t *n)
{
	unsigned cp, lo;

	*n = 1;
	if (p >= end)
		return 0;
	switch (*p) {
	case '"':
	case '\\':
	case '/':
		out[0] = *p;
		return 1;
	case 'b':
		out[0] = '\b';
		return 1;
	case 'f':
		out[0] = '\f';
		return 1;
	case 'n':
		out[0] = '\n';
		return 1;
	case 'r':
		out[0] = '\r';
		return 1;
	case 't':
		out[0] = '\t';
		return 1;
	case 'u':
		if (hex4(p + 1, end, &cp))
			return 0;
		if (cp >= 0xd800 && cp < 0xdc00 && end - p >= 11 && p[5] == '\\' && p[6] == 'u' &&
		    !hex4(p + 7, end, &lo) && lo >= 0xdc00 && lo < 0xe000) {
			*n = put_utf8(out, 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00));
			return 11;
		}
		if (cp >= 0xd800 && cp < 0xe000)
			cp = 0xfffd; /* a lone surrogate */
		*n = put_utf8(out, cp);
		return 5;
	}
	return 0;
}

size_t json_unescape(const char *s, size_t len, char *out, size_t outlen, size_t *written)
{
	const char *p = s + 1, *end = s + len;
	size_t o = 0;

	if (!len || *s != '"' || !outlen)
		return 0;
	while (p < end && *p != '"') {
		char tmp[4];
		size_t n = 1, used = 1;

		if (*p == '\\') {
			used = json_unescape_one(p + 1, end, tmp, &n);
			if (!used)
				return 0;
			used++;
		} else {
			tmp[0] = *p;
		}
		if (o + n < outlen) {
			memcpy(out + o, tmp, n);
			o += n;
		}
		p += used;
	}
	if (o >= outlen)
		o = outlen - 1;
	out[o] = 0;
	if (written)
		*written = o;
	return p < end ? p + 1 - s : 0;
}

const char *json_object_get(const char *s, size_t len, const char *key, size_t *vlen)
{
	const char *p = s, *end = s + len;
	size_t klen = strlen(key);

	p = json_skip_ws(p, end);
	if (p >= end || *p != '{')
		return NULL;
	p++;
	for (;;) {
		const char *k;
		size_t n;

		p = json_skip_ws(p, end);
		if (p >= end || *p != '"')
			return NULL;
		k = p;
		n = json_value_len(p, end - p);
		if (!n)
			return NULL;
		p = json_skip_ws(p + n, end);
		if (p >= end || *p != ':')
			return NULL;
		p = json_skip_ws(p + 1, end);
		n = json_value_len(p, end - p);
		if (!n)
			return NULL;
		if ((size_t)(p - k) >= klen + 2 && !memcmp(k + 1, key, klen) &&
		    k[klen + 1] == '"') {
			*vlen = n;
			return p;
		}
		p = json_skip_ws(p + n, end);
		if (p >= end || *p != ',')
			return NULL;
		p++;
	}
}

int json_us_to_ns(const char *s, size_t len, int64_t *ns)
{
	const char *p = s, *end = s + len;
	bool neg = false;
	int64_t whole = 0;
	int frac = 0, digits = 0, round = 0;
	char buf[64], *e;
	double v;

	if (p < end && *p == '-') {
		neg = true;
		p++;
	}
	if (p >= end || *p < '0' || *p > '9')
		return -EINVAL;
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		/* room for the digit, then for * 1000 + 999 + 1 below */
		if (whole > (INT64_MAX / 1000 - 10) / 10)
			goto slow;
		whole = whole * 10 + (*p - '0');
	}
	if (p < end && *p == '.') {
		p++;
		for (; p < end && *p >= '0' && *p <= '9'; p++, digits++) {
			if (digits < 3)
				frac = frac * 10 + (*p - '0');
			else if (digits == 3)
				round = *p >= '5';
		}
	}
	if (p != end)
		goto slow; /* an exponent */
	for (; digits < 3; digits++)
		frac *= 10;
	*ns = whole * 1000 + frac + round;
	if (neg)
		*ns = -*ns;
	return 0;
slow:
	if (len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = 0;
	errno = 0;
	v = strtod(buf, &e);
	if (errno || *e || !isfinite(v) || fabs(v) > 9e15)
		return -EINVAL;
	*ns = llround(v * 1000);
	return 0;
}
