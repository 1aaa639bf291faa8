// SPDX-License-Identifier: MIT
/* Unit test of the one rule for text (userspace/util/util.c) in every output: terminal text,
 * CSV cells, JSON strings (trace/json_text.c). Hidden: C0, DEL, C1 (U+009B is a CSI), the
 * bidirectional controls; text shows them as U+FFFD, JSON escapes them. */
#include <stdlib.h>

#include "unit.h"
#include "trace/json_text.h"
#include "util/util.h"

#define FFFD "\xef\xbf\xbd"

/* Every bidirectional control, UTF-8 encoded. */
static const char *const bidi[] = {
	"\xd8\x9c",	/* U+061C ARABIC LETTER MARK */
	"\xe2\x80\x8e", /* U+200E LEFT-TO-RIGHT MARK */
	"\xe2\x80\x8f", /* U+200F RIGHT-TO-LEFT MARK */
	"\xe2\x80\xaa", /* U+202A LEFT-TO-RIGHT EMBEDDING */
	"\xe2\x80\xab", "\xe2\x80\xac", "\xe2\x80\xad",
	"\xe2\x80\xae", /* U+202E RIGHT-TO-LEFT OVERRIDE */
	"\xe2\x81\xa6", /* U+2066 LEFT-TO-RIGHT ISOLATE */
	"\xe2\x81\xa7", "\xe2\x81\xa8",
	"\xe2\x81\xa9", /* U+2069 POP DIRECTIONAL ISOLATE */
};
#define NBIDI (sizeof(bidi) / sizeof(bidi[0]))

static const char *safe(const char *s)
{
	static char out[256];

	text_safe(out, sizeof(out), s, strlen(s));
	return out;
}

static const char *esc(const char *s)
{
	static char out[256];

	json_escape(out, sizeof(out), s, strlen(s));
	return out;
}

static const char *clean(const char *s)
{
	static char out[256];

	json_clean(out, s, strlen(s));
	return out;
}

static const char *cell(const char *s)
{
	static char out[CSV_CELL_MAX(64)];

	csv_cell(out, s, strlen(s));
	return out;
}

static void test_hidden_set(void)
{
	for (uint32_t cp = 0; cp < 0x20; cp++)
		CHECK(text_hidden(cp));
	for (uint32_t cp = 0x7f; cp <= 0x9f; cp++)
		CHECK(text_hidden(cp));
	CHECK(!text_hidden(' ') && !text_hidden('~') && !text_hidden(0xa0) && !text_hidden(0xe9));
	CHECK(!text_hidden(0x200d) && !text_hidden(0x2010) && !text_hidden(0x2029));
	CHECK(!text_hidden(0x202f) && !text_hidden(0x2065) && !text_hidden(0x206a));
	CHECK(!text_hidden(0xfffd) && !text_hidden(0x1f600));
	for (size_t i = 0; i < NBIDI; i++) {
		uint32_t cp;

		CHECK(utf8_next(bidi[i], strlen(bidi[i]), &cp) == strlen(bidi[i]));
		CHECK(text_hidden(cp));
	}
}

static void test_text_safe(void)
{
	char s[32];

	CHECK_STR(safe("a\x1b[31mb\x07"), "a" FFFD "[31mb" FFFD);
	CHECK_STR(safe("x\xc2\x9b" "2Jy"), "x" FFFD "2Jy"); /* U+009B, the C1 CSI */
	CHECK_STR(safe("d\x7f" "e"), "d" FFFD "e");
	CHECK_STR(safe("caf\xc3\xa9 \xc2\xa0ok"), "caf\xc3\xa9 \xc2\xa0ok"); /* é, NBSP kept */
	CHECK_STR(safe("bad\xff\xc0\xaf"), "bad" FFFD FFFD FFFD);
	for (size_t i = 0; i < NBIDI; i++) {
		snprintf(s, sizeof(s), "exe.%stxt", bidi[i]);
		CHECK_STR(safe(s), "exe." FFFD "txt");
	}
}

static void test_printable_same_rule(void)
{
	char buf[64];

	CHECK_STR(printable("t\x1b]0;x\x07\xc2\x9b\xe2\x80\xae", buf, sizeof(buf)),
		  "t" FFFD "]0;x" FFFD FFFD FFFD);
	/* a cut never splits a character */
	CHECK_STR(printable("ab\xe2\x80\xae", buf, 5), "ab");
}

static void test_json_escape_hidden(void)
{
	char s[32], want[32];

	CHECK_STR(esc("a\xc2\x9b" "b"), "a\\u009bb");
	CHECK_STR(esc("a\x7f" "b"), "a\\u007fb");
	CHECK_STR(esc("a\x1b" "b\n"), "a\\u001bb\\n");
	CHECK_STR(esc("caf\xc3\xa9"), "caf\xc3\xa9");
	for (size_t i = 0; i < NBIDI; i++) {
		uint32_t cp;

		utf8_next(bidi[i], strlen(bidi[i]), &cp);
		snprintf(s, sizeof(s), "a%sb", bidi[i]);
		snprintf(want, sizeof(want), "a\\u%04xb", cp);
		CHECK_STR(esc(s), want);
	}
	/* an escape that does not fit is not cut */
	CHECK(json_escape(s, 7, "ab\xe2\x80\xae", 100) == 2);
}

static void test_json_clean_hidden(void)
{
	/* raw inside a string: escaped; the value is the same */
	CHECK_STR(clean("{\"n\":\"a\xc2\x9b" "b\x7f" "c\xe2\x80\xae" "d\"}"),
		  "{\"n\":\"a\\u009bb\\u007fc\\u202ed\"}");
	CHECK_STR(clean("\"\x01\""), "\"\\u0001\"");
	/* already escaped, or valid text: as it was */
	CHECK_STR(clean("{\"n\":\"\\u202e\\\"\xc3\xa9\"}"), "{\"n\":\"\\u202e\\\"\xc3\xa9\"}");
	/* the longest growth: a C0 byte, 1 byte to 6 */
	char out[6 * 3 + 1];

	CHECK(json_clean(out, "\"\x1f\"", 3) == 8);
}

static void test_csv_cell_formulas(void)
{
	CHECK_STR(cell("=HYPERLINK(\"http://x\",\"y\")"),
		  "\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\"");
	CHECK_STR(cell("+cmd"), "\"'+cmd\"");
	CHECK_STR(cell("-2+3"), "\"'-2+3\"");
	CHECK_STR(cell("@SUM(1)"), "\"'@SUM(1)\"");
	/* only the first character makes a formula */
	CHECK_STR(cell("a=b+c"), "\"a=b+c\"");
	CHECK_STR(cell(""), "\"\"");
	/* a hidden first character is shown as U+FFFD: no formula after it */
	CHECK_STR(cell("\t=1"), "\"" FFFD "=1\"");
	CHECK_STR(cell("\xe2\x80\xae" "x\x1b"), "\"" FFFD "x" FFFD "\"");
}

static void test_csv_cell_bound(void)
{
	/* the worst case: a formula start, then bytes that each grow to 3 */
	const char *s = "=\xff\xff\xff\x01\x7f";
	size_t n = strlen(s), len;
	char *out = malloc(CSV_CELL_MAX(n) + 1);

	out[CSV_CELL_MAX(n)] = 0x5a;
	len = csv_cell(out, s, n);
	CHECK(len + 1 <= CSV_CELL_MAX(n) && (unsigned char)out[CSV_CELL_MAX(n)] == 0x5a);
	CHECK(strlen(out) == len);
	free(out);
}

int main(void)
{
	RUN(test_hidden_set);
	RUN(test_text_safe);
	RUN(test_printable_same_rule);
	RUN(test_json_escape_hidden);
	RUN(test_json_clean_hidden);
	RUN(test_csv_cell_formulas);
	RUN(test_csv_cell_bound);
	UNIT_EXIT();
}
