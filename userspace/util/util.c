// SPDX-License-Identifier: MIT
#include "util/util.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum verbosity verbosity = VERB_NORMAL;
int cmdline_argc;
char **cmdline_argv;

/* One line on stderr under the text rule: a name in a message (a symbol, a comm, a path)
 * never reaches the terminal raw. */
static void vsay(const char *prefix, const char *fmt, va_list ap, const char *suffix)
{
	char *msg, *safe;

	if (vasprintf(&msg, fmt, ap) < 0) {
		fputs("tracer: out of memory\n", stderr);
		return;
	}
	safe = text_safe_dup(msg);
	fprintf(stderr, "tracer: %s%s%s\n", prefix, safe, suffix);
	free(safe);
	free(msg);
}

void pr_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay("", fmt, ap, "");
	va_end(ap);
}

void pr_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay("warning: ", fmt, ap, "");
	va_end(ap);
}

void pr_info(const char *fmt, ...)
{
	va_list ap;

	if (verbosity < VERB_NORMAL)
		return;
	va_start(ap, fmt);
	vsay("", fmt, ap, "");
	va_end(ap);
}

void pr_debug(const char *fmt, ...)
{
	va_list ap;

	if (verbosity < VERB_DEBUG)
		return;
	va_start(ap, fmt);
	vsay("", fmt, ap, "");
	va_end(ap);
}

static uint64_t clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t realtime_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

double random_unit(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*state = x;
	return (double)(x >> 11) / (1ull << 53);
}

int parse_duration(const char *s, uint64_t default_unit_ns, uint64_t *ns)
{
	static const struct {
		const char *suffix;
		uint64_t ns;
	} units[] = { { "ns", 1 },	    { "us", 1000 },	   { "ms", 1000000 },
		      { "s", 1000000000 }, { "m", 60000000000 }, { "", 0 } };
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0 || !isfinite(v))
		return -EINVAL;
	for (int i = 0; i < (int)(sizeof(units) / sizeof(units[0])); i++) {
		uint64_t unit = units[i].ns ? units[i].ns : default_unit_ns;

		if (strcmp(end, units[i].suffix))
			continue;
		if (v * unit > 1e18)
			return -ERANGE;
		*ns = (uint64_t)(v * unit + 0.5);
		return 0;
	}
	return -EINVAL;
}

int parse_size(const char *s, uint64_t *bytes)
{
	static const char units[] = "kMGT";
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0 || !isfinite(v))
		return -EINVAL;
	if (*end) {
		const char *u = strchr(units, *end == 'K' ? 'k' : *end);

		if (!u || !*u || (end[1] && strcmp(end + 1, "B") && strcmp(end + 1, "iB")))
			return -EINVAL;
		v *= (double)(1ull << (10 * (u - units + 1)));
	}
	if (v > 1e18)
		return -EINVAL;
	*bytes = (uint64_t)v;
	return 0;
}

int parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end || (errno && errno != ERANGE))
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_pid(const char *s, int *pid)
{
	long v;
	int err = parse_long(s, 1, PID_MAX_LIMIT, &v);

	if (!err)
		*pid = v;
	return err;
}

int usage_error(const char *cmd, const char *fmt, ...)
{
	char see[64];
	va_list ap;

	snprintf(see, sizeof(see), " (see tracer %s%s--help)", cmd ? cmd : "", cmd ? " " : "");
	va_start(ap, fmt);
	vsay("", fmt, ap, see);
	va_end(ap);
	return 2;
}

const char *fmt_duration(uint64_t ns, char *buf, size_t len)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = { { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 } };
	double v;
	int i;

	if (ns < 1000) {
		snprintf(buf, len, "%lluns", (unsigned long long)ns);
		return buf;
	}
	/* three significant digits, never an exponent: 999.5us rounds up to 1.00ms */
	for (i = 0; i < 2; i++)
		if (ns < units[i].ns * 999.5)
			break;
	v = ns / units[i].ns;
	snprintf(buf, len, v < 9.995 ? "%.2f" : v < 99.95 ? "%.1f" : "%.0f", v);
	if (strchr(buf, '.')) { /* "1.50" -> "1.5", "2.00" -> "2" */
		char *e = buf + strlen(buf);

		while (e[-1] == '0')
			*--e = 0;
		if (e[-1] == '.')
			*--e = 0;
	}
	snprintf(buf + strlen(buf), len - strlen(buf), "%s", units[i].unit);
	return buf;
}

#define FFFD "\xef\xbf\xbd"

size_t utf8_next(const char *s, size_t n, uint32_t *cp)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned c = p[0], min;
	size_t len;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, min = 0x10000;
	else
		return 0;
	if (len > n)
		return 0;
	*cp = c & (0x3f >> (len - 1));
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		*cp = *cp << 6 | (p[i] & 0x3f);
	}
	if (*cp < min || *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff))
		return 0;
	return len;
}

bool text_hidden(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x61c || cp == 0x200e ||
	       cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/* The character at s[*i] as it is shown: its own bytes, or U+FFFD's. Advances *i past it. */
static const char *shown(const char *s, size_t n, size_t *i, size_t *len)
{
	uint32_t cp;
	size_t take = utf8_next(s + *i, n - *i, &cp);
	const char *at = s + *i;

	*i += take ? take : 1;
	if (!take || text_hidden(cp)) {
		*len = 3;
		return FFFD;
	}
	*len = take;
	return at;
}

size_t text_safe(char *out, size_t len, const char *s, size_t n)
{
	size_t o = 0, i = 0;

	if (!len)
		return 0;
	while (i < n) {
		size_t wn;
		const char *w = shown(s, n, &i, &wn);

		if (o + wn >= len)
			break;
		memcpy(out + o, w, wn);
		o += wn;
	}
	out[o] = 0;
	return o;
}

char *text_safe_dup(const char *s)
{
	size_t n = strlen(s);
	char *out = xcalloc(3 * n + 1, 1);

	text_safe(out, 3 * n + 1, s, n);
	return out;
}

const char *printable(const char *s, char *buf, size_t len)
{
	text_safe(buf, len, s, strlen(s));
	return buf;
}

size_t csv_cell(char *out, const char *s, size_t n)
{
	size_t o = 0, i = 0;

	out[o++] = '"';
	if (n && memchr("=+-@", s[0], 4)) /* a formula: text instead */
		out[o++] = '\'';
	while (i < n) {
		size_t wn;
		const char *w = shown(s, n, &i, &wn);

		if (*w == '"')
			out[o++] = '"';
		memcpy(out + o, w, wn);
		o += wn;
	}
	out[o++] = '"';
	out[o] = 0;
	return o;
}

int edit_distance(const char *a, const char *b, int cap)
{
	size_t la = strlen(a), lb = strlen(b);
	int rows[3][256], best;

	if (lb >= sizeof(rows[0]) / sizeof(rows[0][0]) || la >= 256)
		return cap;
	for (size_t j = 0; j <= lb; j++)
		rows[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		/* rows of a's first i - 2, i - 1 and i characters */
		int *two = rows[(i + 1) % 3], *up = rows[(i + 2) % 3], *row = rows[i % 3];

		row[0] = best = i;
		for (size_t j = 1; j <= lb; j++) {
			int v = up[j - 1] + (a[i - 1] != b[j - 1]);

			if (up[j] + 1 < v)
				v = up[j] + 1;
			if (row[j - 1] + 1 < v)
				v = row[j - 1] + 1;
			/* two neighbours swapped: one typo */
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    two[j - 2] + 1 < v)
				v = two[j - 2] + 1;
			row[j] = v;
			if (v < best)
				best = v;
		}
		if (best >= cap)
			return cap;
	}
	return rows[la % 3][lb] < cap ? rows[la % 3][lb] : cap;
}

int invoking_user(uid_t *uid, gid_t *gid)
{
	const char *su = getenv("SUDO_UID"), *sg = getenv("SUDO_GID");
	long u, g;

	*uid = getuid();
	*gid = getgid();
	if (!su && !sg)
		return 0;
	/* half a pair, or not numbers: never fall back to root's own ids */
	if (!su || !sg || parse_long(su, 0, 0x7fffffff, &u) || parse_long(sg, 0, 0x7fffffff, &g))
		return -EINVAL;
	*uid = u;
	*gid = g;
	return 0;
}

int check_invoking_user(void)
{
	uid_t uid;
	gid_t gid;

	if (!invoking_user(&uid, &gid))
		return 0;
	pr_err("SUDO_UID='%s' SUDO_GID='%s' do not name a user and group: tracer runs the command "
	       "and hands the trace to them; set both to numeric ids, or unset both",
	       getenv("SUDO_UID") ?: "", getenv("SUDO_GID") ?: "");
	return -EINVAL;
}

void near_names__init(struct near_names *nr, const char *glob)
{
	size_t n = 0;

	memset(nr, 0, sizeof(*nr));
	for (; *glob && n + 1 < sizeof(nr->want); glob++)
		if (!strchr("*?[]", *glob))
			nr->want[n++] = *glob;
}

void near_names__offer(struct near_names *nr, const char *name)
{
	/* near: at most a third of the characters changed (one in a short name); more, and
	 * "usdt" would suggest "ustat" */
	int most = strlen(nr->want) / 3, cap = (most > 1 ? most : 1) + 1, d;

	if (!nr->want[0])
		return;
	d = edit_distance(nr->want, name, cap);
	if (d >= cap)
		return;
	for (int i = 0; i < 3; i++) {
		if (nr->name[i] && !strcmp(nr->name[i], name))
			return;
		if (!nr->name[i] || d < nr->dist[i]) {
			free(nr->name[2]);
			memmove(&nr->name[i + 1], &nr->name[i], (2 - i) * sizeof(nr->name[0]));
			memmove(&nr->dist[i + 1], &nr->dist[i], (2 - i) * sizeof(nr->dist[0]));
			nr->name[i] = xstrdup(name);
			nr->dist[i] = d;
			return;
		}
	}
}

size_t near_names__format(const struct near_names *nr, char *buf, size_t len)
{
	size_t n = 0;

	for (int i = 0; i < 3 && nr->name[i] && n < len; i++)
		n += snprintf(buf + n, len - n, "%s%s", i ? ", " : "; did you mean: ", nr->name[i]);
	return n < len ? n : len;
}

void near_names__free(struct near_names *nr)
{
	for (int i = 0; i < 3; i++)
		free(nr->name[i]);
}

static void *oom(void *p)
{
	if (!p) {
		fputs("tracer: out of memory\n", stderr);
		abort();
	}
	return p;
}

char *xstrdup(const char *s)
{
	return oom(strdup(s));
}

void *xcalloc(size_t n, size_t size)
{
	return oom(calloc(n ? n : 1, size ? size : 1));
}

void *xrealloc(void *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		return oom(NULL);
	return oom(realloc(p, n && size ? n * size : 1));
}

int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}
