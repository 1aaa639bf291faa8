// SPDX-License-Identifier: MIT
/* Fuzzes json_escape (userspace/trace/json_text.c), which makes strings from the target (thread
 * names, process names) safe for the trace. Input: byte 0 picks the output size, byte 1 the
 * input bound max, the rest is the string. Checks against an independent reference: the output
 * is a JSON string body (no raw control characters, quotes or backslashes unescaped, valid UTF-8)
 * that decodes to the input with each byte of an invalid UTF-8 sequence replaced by U+FFFD, cut
 * only where the next unit would not fit, never beyond len - 1 bytes plus the NUL, never reading
 * more than max bytes of the input; and no character the text rule hides (DEL, C1, bidi
 * controls) is raw in it. */
#include "fuzz.h"
#include "trace/json_text.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define UNIT_MAX 6 /* the longest escape: \uXXXX */

/* The characters the text rule hides (util/util.h), listed again independently. */
static bool ref_hidden(unsigned cp)
{
	static const unsigned bidi[] = { 0x61c,	 0x200e, 0x200f, 0x202a, 0x202b, 0x202c,
					 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069 };

	if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
		return true;
	for (size_t i = 0; i < sizeof(bidi) / sizeof(bidi[0]); i++)
		if (cp == bidi[i])
			return true;
	return false;
}

/* The code point of a well-formed UTF-8 sequence of n bytes. */
static unsigned ref_decode(const unsigned char *s, size_t n)
{
	unsigned cp = n == 1 ? s[0] : s[0] & (0x7f >> n);

	for (size_t i = 1; i < n; i++)
		cp = cp << 6 | (s[i] & 0x3f);
	return cp;
}

/* cp (below U+10000) as UTF-8; returns the count. */
static size_t ref_encode(unsigned cp, unsigned char *out)
{
	if (cp < 0x80) {
		out[0] = cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = 0xc0 | cp >> 6;
		out[1] = 0x80 | (cp & 0x3f);
		return 2;
	}
	out[0] = 0xe0 | cp >> 12;
	out[1] = 0x80 | (cp >> 6 & 0x3f);
	out[2] = 0x80 | (cp & 0x3f);
	return 3;
}

/* Length of the well-formed UTF-8 sequence at s (Unicode table 3-7), or 0. */
static size_t ref_utf8(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return n >= 2 && (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		unsigned char lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;

		return n >= 3 && s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		unsigned char lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;

		return n >= 4 && s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 &&
				       (s[3] & 0xc0) == 0x80
			       ? 4
			       : 0;
	}
	return 0;
}

/* Decodes one unit of the escaped output at *o into bytes (UTF-8); returns their count, or 0 if
 * the output is not a valid JSON string body there. */
static size_t decode_unit(const char **o, unsigned char *bytes)
{
	const unsigned char *p = (const unsigned char *)*o;
	size_t n;

	if (p[0] == '\\') {
		static const char simple[] = "\"\\/bfnrt", value[] = "\"\\/\b\f\n\r\t";
		const char *k = p[1] ? strchr(simple, p[1]) : NULL;
		unsigned v = 0;

		if (k) {
			bytes[0] = value[k - simple];
			*o += 2;
			return 1;
		}
		if (p[1] != 'u')
			return 0;
		for (int i = 2; i < 6; i++) {
			unsigned char h = p[i];

			if (h >= '0' && h <= '9')
				v = v * 16 + h - '0';
			else if (h >= 'a' && h <= 'f')
				v = v * 16 + h - 'a' + 10;
			else if (h >= 'A' && h <= 'F')
				v = v * 16 + h - 'A' + 10;
			else
				return 0;
		}
		/* json_escape only needs \u for the characters the rule hides */
		if (!ref_hidden(v))
			return 0;
		*o += 6;
		return ref_encode(v, bytes);
	}
	if (p[0] == '"')
		return 0;
	n = ref_utf8(p, strnlen(*o, 4));
	if (!n || ref_hidden(ref_decode(p, n))) /* not JSON, or shown raw */
		return 0;
	memcpy(bytes, p, n);
	*o += n;
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned char fffd[] = { 0xef, 0xbf, 0xbd };
	size_t len, max, slen, ret, i = 0;
	char *in, *out;
	const char *o;
	bool terminated;

	if (size < 2)
		return 0;
	slen = size - 2;
	/* 255: room for anything; else a small buffer that cuts the output */
	len = data[0] == 255 ? UNIT_MAX * slen + 1 : data[0];
	/* 255: the whole string (NUL-terminated); else at most data[1] bytes */
	max = data[1] == 255 ? SIZE_MAX : data[1];
	/* Exactly the bytes json_escape may read, so that ASan sees any read beyond: the string
	 * and its NUL, or max bytes and no NUL. */
	terminated = max > slen;
	in = malloc(terminated ? slen + 1 : max ? max : 1);
	out = malloc(len + 1);
	if (!in || !out)
		goto done;
	memcpy(in, data + 2, terminated ? slen : max);
	if (terminated)
		in[slen] = 0;
	out[len] = 0x5a; /* must stay untouched */

	ret = json_escape(out, len, in, max);
	if (!len) {
		fuzz_check(ret == 0, "len 0 returned %zu", ret);
		goto done;
	}
	fuzz_check(ret < len, "returned %zu for len %zu", ret, len);
	fuzz_check(out[ret] == 0 && strlen(out) == ret, "output not NUL-terminated at %zu", ret);
	fuzz_check((unsigned char)out[len] == 0x5a, "wrote past len");

	/* Walk the input with the reference and the output with a decoder, side by side. */
	o = out;
	while (*o) {
		const unsigned char *s = (const unsigned char *)in + i;
		size_t avail = 0, want_n, got_n;
		unsigned char want[4], got[4];

		while (i + avail < max && s[avail] && avail < 4)
			avail++;
		fuzz_check(avail, "output goes on after the input ended at byte %zu", i);
		want_n = ref_utf8(s, avail);
		if (want_n) {
			memcpy(want, s, want_n);
			i += want_n;
		} else {
			memcpy(want, fffd, 3);
			want_n = 3;
			i++;
		}
		got_n = decode_unit(&o, got);
		fuzz_check(got_n, "not a JSON string body at output byte %zu: %s", (size_t)(o - out),
			   out);
		fuzz_check(got_n == want_n && !memcmp(got, want, got_n),
			   "input byte %zu decoded wrong", i);
	}
	/* Cut only when the next unit does not fit (it is at most UNIT_MAX bytes). */
	if (i < max && in[i])
		fuzz_check(ret + UNIT_MAX >= len - 1, "stopped at input byte %zu with %zu bytes free",
			   i, len - 1 - ret);
done:
	free(in);
	free(out);
	return 0;
}
