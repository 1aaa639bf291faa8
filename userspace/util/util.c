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

static void vsay(const char *prefix, const char *fmt, va_list ap)
{
	fprintf(stderr, "tracer: %s", prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void pr_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay("", fmt, ap);
	va_end(ap);
}

void pr_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay("warning: ", fmt, ap);
	va_end(ap);
}

void pr_info(const char *fmt, ...)
{
	va_list ap;

	if (verbosity < VERB_NORMAL)
		return;
	va_start(ap, fmt);
	vsay("", fmt, ap);
	va_end(ap);
}

void pr_debug(const char *fmt, ...)
{
	va_list ap;

	if (verbosity < VERB_DEBUG)
		return;
	va_start(ap, fmt);
	vsay("", fmt, ap);
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
	va_list ap;

	fputs("tracer: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see tracer %s%s--help)\n", cmd ? cmd : "", cmd ? " " : "");
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

const char *printable(const char *s, char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0;

	while (*p && o + 5 < len) {
		unsigned int c = *p, n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 :
						       c >= 0xe0 && c <= 0xef ? 3 :
						       c >= 0xf0 && c <= 0xf4 ? 4 : 0;
		unsigned int k;

		for (k = 1; k < n && (p[k] & 0xc0) == 0x80; k++)
			;
		/* C0, DEL, C1 (U+0080-U+009F, encoded c2 80..c2 9f), invalid: '?' */
		if (!n || k < n || c < 0x20 || c == 0x7f || (c == 0xc2 && p[1] < 0xa0) ||
		    (n == 3 && c == 0xe0 && p[1] < 0xa0) || (n == 4 && c == 0xf0 && p[1] < 0x90) ||
		    (n == 4 && c == 0xf4 && p[1] > 0x8f) || (n == 3 && c == 0xed && p[1] > 0x9f)) {
			buf[o++] = '?';
			p++;
			continue;
		}
		memcpy(buf + o, p, n);
		o += n;
		p += n;
	}
	buf[o] = 0;
	return buf;
}

int edit_distance(const char *a, const char *b, int cap)
{
	size_t la = strlen(a), lb = strlen(b);
	int row[256], best;

	if (lb >= sizeof(row) / sizeof(row[0]) || la >= 256)
		return cap;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		int diag = row[0];

		row[0] = i;
		best = row[0];
		for (size_t j = 1; j <= lb; j++) {
			int up = row[j], v = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < v)
				v = up + 1;
			if (row[j - 1] + 1 < v)
				v = row[j - 1] + 1;
			diag = up;
			row[j] = v;
			if (v < best)
				best = v;
		}
		if (best >= cap)
			return cap;
	}
	return row[lb] < cap ? row[lb] : cap;
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
	int cap = strlen(nr->want) / 3 + 2, d;

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
