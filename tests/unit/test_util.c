// SPDX-License-Identifier: MIT
/* Unit test of userspace/util/util.c: duration and number parsing, duration formatting, edit
 * distance, near names. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "unit.h"
#include "util/util.h"

#define NS 1ull
#define US 1000ull
#define MS 1000000ull
#define S 1000000000ull

/* Parses s, expecting ret and (when 0) want. */
static void check_dur(const char *s, uint64_t unit, int ret, uint64_t want)
{
	uint64_t ns = 12345;
	int got = parse_duration(s, unit, &ns);

	if (got != ret || (!ret && ns != want))
		fprintf(stderr, "  parse_duration(\"%s\", %llu): %d, %llu; want %d, %llu\n", s,
			(unsigned long long)unit, got, (unsigned long long)ns, ret,
			(unsigned long long)want);
	CHECK(got == ret);
	if (!ret)
		CHECK(ns == want);
	else
		CHECK(ns == 12345); /* untouched on error */
}

static void test_parse_duration_units(void)
{
	check_dur("1.5s", S, 0, 1500 * MS);
	check_dur("20ms", S, 0, 20 * MS);
	check_dur("50us", S, 0, 50 * US);
	check_dur("300ns", S, 0, 300);
	check_dur("2m", S, 0, 120 * S);
	check_dur("0.5m", US, 0, 30 * S);
	check_dur("0s", S, 0, 0);
	check_dur("0.1ms", S, 0, 100 * US);
	check_dur("1.0005us", S, 0, 1001); /* rounded to the nearest ns */
}

static void test_parse_duration_default_unit(void)
{
	check_dur("3", S, 0, 3 * S);
	check_dur("3", MS, 0, 3 * MS);
	check_dur("3", US, 0, 3 * US);
	check_dur("3", NS, 0, 3);
	check_dur("2.5", S, 0, 2500 * MS);
	check_dur("2.5", US, 0, 2500);
	check_dur("0", S, 0, 0);
}

static void test_parse_duration_bad(void)
{
	check_dur("", S, -EINVAL, 0);
	check_dur("abc", S, -EINVAL, 0);
	check_dur("s", S, -EINVAL, 0);
	check_dur("-1", S, -EINVAL, 0);
	check_dur("-1ms", S, -EINVAL, 0);
	check_dur("5xs", S, -EINVAL, 0);
	check_dur("5 s", S, -EINVAL, 0);
	check_dur("5sec", S, -EINVAL, 0);
	check_dur("5S", S, -EINVAL, 0);
	check_dur("5h", S, -EINVAL, 0);
	check_dur("inf", S, -EINVAL, 0);
	check_dur("infs", S, -EINVAL, 0);
	check_dur("nan", S, -EINVAL, 0);
	check_dur("1e400", S, -EINVAL, 0);
	CHECK(parse_duration(NULL, S, &(uint64_t){ 0 }) == -EINVAL);
	/* too large for the nanosecond counter */
	CHECK(parse_duration("1e10s", S, &(uint64_t){ 0 }) != 0);
	CHECK(parse_duration("100000000000m", S, &(uint64_t){ 0 }) != 0);
}

static void check_long(const char *s, long min, long max, int ret, long want)
{
	long v = -12345;
	int got = parse_long(s, min, max, &v);

	if (got != ret || (!ret && v != want))
		fprintf(stderr, "  parse_long(\"%s\", %ld, %ld): %d, %ld; want %d, %ld\n", s, min,
			max, got, v, ret, want);
	CHECK(got == ret);
	if (!ret)
		CHECK(v == want);
	else
		CHECK(v == -12345);
}

static void test_parse_long(void)
{
	check_long("42", 1, 100, 0, 42);
	check_long("1", 1, 100, 0, 1);
	check_long("100", 1, 100, 0, 100);
	check_long("-5", -10, 10, 0, -5);
	check_long("0", 1, 100, -ERANGE, 0);
	check_long("101", 1, 100, -ERANGE, 0);
	check_long("-1", 0, 100, -ERANGE, 0);
	check_long("9223372036854775807", LONG_MIN, LONG_MAX, 0, LONG_MAX);
	check_long("-9223372036854775808", LONG_MIN, LONG_MAX, 0, LONG_MIN);
	check_long("9223372036854775808", LONG_MIN, LONG_MAX, -ERANGE, 0);
	check_long("99999999999999999999", 1, 100, -ERANGE, 0);
	check_long("-99999999999999999999", LONG_MIN, LONG_MAX, -ERANGE, 0);
}

static void test_parse_long_garbage(void)
{
	check_long("", 0, 100, -EINVAL, 0);
	check_long("12x", 0, 100, -EINVAL, 0);
	check_long("1.5", 0, 100, -EINVAL, 0);
	check_long("5 ", 0, 100, -EINVAL, 0);
	check_long("abc", 0, 100, -EINVAL, 0);
	CHECK(parse_long(NULL, 0, 100, &(long){ 0 }) == -EINVAL);
	/* garbage is garbage whatever the range: strtol's partial value must not be range
	 * checked first */
	check_long("abc", 1, 100, -EINVAL, 0);
	check_long("500x", 1, 100, -EINVAL, 0);
	check_long("-", 1, 100, -EINVAL, 0);
}

static const char *fmt(uint64_t ns)
{
	static char buf[32];

	return fmt_duration(ns, buf, sizeof(buf));
}

static void test_fmt_duration(void)
{
	CHECK_STR(fmt(0), "0ns");
	CHECK_STR(fmt(1), "1ns");
	CHECK_STR(fmt(999), "999ns");
	CHECK_STR(fmt(1000), "1us");
	CHECK_STR(fmt(1500), "1.5us");
	CHECK_STR(fmt(12345), "12.3us");
	CHECK_STR(fmt(123456), "123us");
	CHECK_STR(fmt(1000000), "1ms");
	CHECK_STR(fmt(12300000), "12.3ms");
	CHECK_STR(fmt(20 * MS), "20ms");
	CHECK_STR(fmt(1500 * MS), "1.5s");
	CHECK_STR(fmt(61 * S), "61s");
	CHECK_STR(fmt(1234567 * MS), "1235s");
	/* a short buffer is cut, not overrun */
	{
		char small[4] = "XXX";

		fmt_duration(12300000, small, 3);
		CHECK_STR(small, "12");
	}
}

/* Just below a unit change, %g must not switch to exponent notation ("1e+03us"). */
static void test_fmt_duration_no_exponent(void)
{
	static const uint64_t vals[] = { 999499, 999500, 999999, 999999999, 9999 * S + 600 * MS,
					 36000 * S, 86400 * 7 * S };

	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		const char *s = fmt(vals[i]);
		uint64_t back = 0;

		if (strchr(s, 'e'))
			fprintf(stderr, "  fmt_duration(%llu) = \"%s\"\n",
				(unsigned long long)vals[i], s);
		CHECK(!strchr(s, 'e'));
		/* and it reads back as about the same duration */
		CHECK(parse_duration(s, 1, &back) == 0);
		CHECK(back > vals[i] / 100 * 99 && back < vals[i] / 100 * 101);
	}
}

static void test_edit_distance(void)
{
	CHECK(edit_distance("kitten", "sitting", 10) == 3);
	CHECK(edit_distance("sitting", "kitten", 10) == 3);
	CHECK(edit_distance("flaw", "lawn", 10) == 2);
	CHECK(edit_distance("", "", 10) == 0);
	CHECK(edit_distance("", "abc", 10) == 3);
	CHECK(edit_distance("abc", "", 10) == 3);
	CHECK(edit_distance("same", "same", 10) == 0);
	CHECK(edit_distance("decode", "decdoe", 10) == 1); /* a swap is one typo */
	CHECK(edit_distance("ab", "ba", 10) == 1);
	CHECK(edit_distance("ca", "abc", 10) == 3); /* no edit of a swapped pair */
	CHECK(edit_distance("operator", "operatr", 10) == 1);
	CHECK(edit_distance("queue", "queues", 10) == 1);
	CHECK(edit_distance("intention", "execution", 10) == 5);
}

static void test_edit_distance_cap(void)
{
	char long_a[300], long_b[300];

	CHECK(edit_distance("abcdef", "uvwxyz", 3) == 3);
	CHECK(edit_distance("abcdef", "uvwxyz", 100) == 6);
	CHECK(edit_distance("kitten", "sitting", 3) == 3);
	CHECK(edit_distance("kitten", "sitting", 2) == 2);
	CHECK(edit_distance("kitten", "sitting", 4) == 3);
	CHECK(edit_distance("a", "b", 1) == 1);
	CHECK(edit_distance("", "abcdef", 2) == 2);
	/* too long to compute: the cap */
	memset(long_a, 'a', sizeof(long_a) - 1);
	long_a[sizeof(long_a) - 1] = 0;
	memcpy(long_b, long_a, sizeof(long_b));
	CHECK(edit_distance(long_a, long_b, 5) == 5);
	CHECK(edit_distance(long_a, "a", 7) == 7);
}

/* Whether near_names suggests name for want. */
static bool suggests(const char *want, const char *name)
{
	struct near_names nr;
	bool got;

	near_names__init(&nr, want);
	near_names__offer(&nr, name);
	got = nr.name[0] && !strcmp(nr.name[0], name);
	near_names__free(&nr);
	return got;
}

/* Typos are near; a name with a third of its characters changed is not: "usdt" (what is
 * left of a USDT spec's glob) never suggests libc's "ustat". */
static void test_near_names(void)
{
	CHECK(suggests("decode_frme", "decode_frame"));
	CHECK(suggests("pipelin", "pipeline"));
	CHECK(suggests("rpeort", "report"));
	CHECK(suggests("gstreamr", "gstreamer"));
	CHECK(suggests("mian", "main")); /* one swap */
	CHECK(suggests("mai", "main"));
	CHECK(!suggests("usdt", "ustat"));
	CHECK(!suggests("usdt:*:*", "ustat"));
	CHECK(!suggests("ab", "xy"));
}

int main(int argc, char **argv)
{
	RUN(test_parse_duration_units);
	RUN(test_parse_duration_default_unit);
	RUN(test_parse_duration_bad);
	RUN(test_parse_long);
	RUN(test_parse_long_garbage);
	RUN(test_fmt_duration);
	RUN(test_fmt_duration_no_exponent);
	RUN(test_edit_distance);
	RUN(test_edit_distance_cap);
	RUN(test_near_names);
	UNIT_EXIT();
}
