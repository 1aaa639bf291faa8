// SPDX-License-Identifier: MIT
/* tracer fleet: the recordings of many hosts in ClickHouse, in one screen. Every number is
 * computed by the server (counts, sums, quantiles, the bottleneck vote); only the aggregates
 * come back: per recording its verdict and stage shares, per span name and host p50/p99, and
 * the bottleneck of each group of hosts. Tables are read with FINAL: a batch sent twice counts
 * once (doc/clickhouse.md). GLOBAL IN: the top names are found once, over every shard. */
#include "cmd/commands.h"
#include "store/clickhouse.h"
#include "util/util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TOP_NAMES 20	/* span names shown, by total time */
#define STANDS_OUT 2.0	/* a host's p99 over this many times the other hosts' median */

static const char fleet_usage[] =
	"Usage: tracer fleet --from URL [--since DURATION] [--where SQL] [--json]\n"
	"\n"
	"The recordings pushed to ClickHouse (tracer push), in one screen, computed by the\n"
	"server: per host and recording the verdict and where each stage's time went; per span\n"
	"name (the 20 with the most time) p50 and p99 on each host, marking the hosts whose p99\n"
	"is more than twice the others' median; and the hosts whose bottleneck differs from the\n"
	"rest.\n"
	"\n"
	"  --from URL        clickhouse://[USER@]HOST[:PORT]/DB, http:// or https://\n"
	"  --since D         recordings started in the last D (30s, 15m, 1h, 7d); default: all\n"
	"  --where SQL       a condition on the rows, e.g. \"host LIKE 'gpu-%'\" (columns in\n"
	"                    doc/clickhouse.md); it is the caller's SQL, run as given\n"
	"  --json            one JSON object, for scripts\n"
	"  -h, --help        this text\n";

static double num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (cJSON_IsNumber(v))
		return v->valuedouble;
	return cJSON_IsString(v) ? strtod(v->valuestring, NULL) : 0;
}

static const char *str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : "";
}

/* The "data" rows of a FORMAT JSON answer to sql, or NULL with err filled. */
static cJSON *select_rows(struct ch_conn *c, const char *sql, cJSON **doc, char *err,
			  size_t errlen)
{
	struct ch_buf b = { 0 };
	char *full = NULL;
	cJSON *data;

	if (asprintf(&full, "%s FORMAT JSON", sql) < 0)
		return NULL;
	if (ch__query(c, full, NULL, 0, &b, err, errlen)) {
		free(full);
		ch_buf__free(&b);
		return NULL;
	}
	free(full);
	*doc = cJSON_ParseWithLength(b.p ? b.p : "", b.len);
	ch_buf__free(&b);
	data = cJSON_GetObjectItemCaseSensitive(*doc, "data");
	if (!cJSON_IsArray(data))
		snprintf(err, errlen, "%s: an answer that is not ClickHouse's JSON", c->where);
	return cJSON_IsArray(data) ? data : NULL;
}

static int parse_since(const char *s, long long *secs)
{
	char *end;
	double v = strtod(s, &end);
	long long mult = 1;

	if (end == s || v <= 0 || !isfinite(v))
		return -EINVAL;
	if (!strcmp(end, "s") || !*end)
		mult = 1;
	else if (!strcmp(end, "m"))
		mult = 60;
	else if (!strcmp(end, "h"))
		mult = 3600;
	else if (!strcmp(end, "d"))
		mult = 86400;
	else
		return -EINVAL;
	*secs = (long long)(v * mult);
	return 0;
}

static void fmt_ns(char *buf, size_t len, double ns)
{
	if (ns >= 1e9)
		snprintf(buf, len, "%.2fs", ns / 1e9);
	else if (ns >= 1e6)
		snprintf(buf, len, "%.2fms", ns / 1e6);
	else if (ns >= 1e3)
		snprintf(buf, len, "%.1fus", ns / 1e3);
	else
		snprintf(buf, len, "%.0fns", ns);
}

/* Marks each (name, host) row whose p99 is over STANDS_OUT times the median p99 of the same
 * name's other hosts: a decision over the aggregates, at most TOP_NAMES x hosts rows. */
static void mark_outliers(cJSON *rows)
{
	int n = cJSON_GetArraySize(rows);
	double *others = xcalloc(n ? n : 1, sizeof(double));

	for (int i = 0; i < n; i++) {
		cJSON *r = cJSON_GetArrayItem(rows, i);
		const char *name = str(r, "name");
		int k = 0;

		for (int j = 0; j < n; j++) {
			cJSON *o = cJSON_GetArrayItem(rows, j);

			if (j != i && !strcmp(str(o, "name"), name))
				others[k++] = num(o, "p99");
		}
		if (k >= 2) { /* a median of one other host is not "the rest" */
			double med;

			qsort(others, k, sizeof(double), cmp_double);
			med = k % 2 ? others[k / 2] : (others[k / 2 - 1] + others[k / 2]) / 2;
			cJSON_AddBoolToObject(r, "stands_out", num(r, "p99") > STANDS_OUT * med);
		} else {
			cJSON_AddBoolToObject(r, "stands_out", false);
		}
	}
	free(others);
}

/* The i-th share of a stages.* column, 0 if absent. */
static double share_at(const cJSON *r, const char *col, int i)
{
	const cJSON *v = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r, col), i);

	return cJSON_IsNumber(v) ? 100 * v->valuedouble : 0;
}

static void print_recordings(const cJSON *recs)
{
	const cJSON *r;
	char safe[3 * 512], safe2[3 * 512];

	printf("recordings: %d\n", cJSON_GetArraySize(recs));
	cJSON_ArrayForEach(r, recs) {
		time_t t = (time_t)(num(r, "start_ns") / 1e9);
		const cJSON *names = cJSON_GetObjectItemCaseSensitive(r, "stages.name");
		char when[32], dur[32];
		struct tm tm;
		int i = 0;

		gmtime_r(&t, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
		fmt_ns(dur, sizeof(dur), num(r, "duration_ns"));
		printf("  %s  %s  %s UTC  %s  %.0f spans\n    %s\n",
		       printable(str(r, "host"), safe, sizeof(safe)), str(r, "recording_id"), when,
		       dur, num(r, "spans"), printable(str(r, "verdict"), safe2, sizeof(safe2)));
		for (const cJSON *n = names ? names->child : NULL; n && i < 4; n = n->next, i++) {
			const char *name = cJSON_IsString(n) ? n->valuestring : "";

			printf("    %-24s run %5.1f%%  runnable %5.1f%%  queue %5.1f%%  blocked "
			       "%5.1f%%  idle %5.1f%%\n",
			       printable(name, safe, sizeof(safe)),
			       share_at(r, "stages.running", i), share_at(r, "stages.runnable", i),
			       share_at(r, "stages.queue", i), share_at(r, "stages.blocked", i),
			       share_at(r, "stages.idle", i));
		}
	}
}

static void print_spans(const cJSON *rows)
{
	const char *last = NULL;
	const cJSON *r;
	char safe[3 * 512], p50[32], p99[32];

	printf("\nspan names by total time: p50 / p99 per host (* more than %.0fx the other "
	       "hosts' median p99)\n", STANDS_OUT);
	cJSON_ArrayForEach(r, rows) {
		if (!last || strcmp(last, str(r, "name")))
			printf("  %s\n", printable(str(r, "name"), safe, sizeof(safe)));
		last = str(r, "name");
		fmt_ns(p50, sizeof(p50), num(r, "p50"));
		fmt_ns(p99, sizeof(p99), num(r, "p99"));
		printf("    %c %-24s %10.0f  p50 %10s  p99 %10s\n",
		       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "stands_out")) ? '*' : ' ',
		       printable(str(r, "host"), safe, sizeof(safe)), num(r, "count"), p50, p99);
	}
}

static void print_hosts(const char *label, const cJSON *g)
{
	const cJSON *h;
	char safe[3 * 512];
	int i = 0;

	printf("%s %s on %d host%s (", label, printable(str(g, "bottleneck"), safe, sizeof(safe)),
	       cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(g, "hosts")),
	       plural_s(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(g, "hosts"))));
	cJSON_ArrayForEach(h, cJSON_GetObjectItemCaseSensitive(g, "hosts"))
		printf("%s%s", i++ ? ", " : "",
		       printable(cJSON_IsString(h) ? h->valuestring : "", safe, sizeof(safe)));
	printf(")\n");
}

int cmd_fleet(int argc, char **argv)
{
	enum { OPT_FROM = 256, OPT_SINCE, OPT_WHERE, OPT_JSON };
	static const struct option longopts[] = {
		{ "from", required_argument, NULL, OPT_FROM },
		{ "since", required_argument, NULL, OPT_SINCE },
		{ "where", required_argument, NULL, OPT_WHERE },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *from = NULL, *where = NULL;
	long long since = 0;
	bool json = false;
	char err[1024] = "", cond[4096], sql[8192];
	cJSON *docs[3] = { 0 }, *recs = NULL, *spans = NULL, *groups = NULL;
	struct ch_conn c;
	int ch, ret = 1;

	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (ch) {
		case OPT_FROM:
			from = optarg;
			break;
		case OPT_SINCE:
			if (parse_since(optarg, &since))
				return usage_error("fleet",
						   "--since: a duration such as 30s, 15m, 1h, 7d");
			break;
		case OPT_WHERE:
			if (strlen(optarg) > 2048)
				return usage_error("fleet", "--where: at most 2048 characters");
			where = optarg;
			break;
		case OPT_JSON:
			json = true;
			break;
		case 'h':
			fputs(fleet_usage, stdout);
			return 0;
		case ':':
			return usage_error("fleet", "option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_error("fleet", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (!from)
		return usage_error("fleet", "say where: --from clickhouse://HOST/DB");
	if (optind < argc)
		return usage_error("fleet", "unexpected argument '%s'", argv[optind]);
	if (ch__open(&c, from, err, sizeof(err))) {
		pr_err("%s", err);
		ch__close(&c);
		return 1;
	}
	{
		struct ch_buf b = { 0 };

		if (ch__query(&c, "EXISTS TABLE tracer_recordings", NULL, 0, &b, err,
			      sizeof(err)) == 0 &&
		    (!b.p || b.p[0] != '1'))
			snprintf(err, sizeof(err), "%s holds no recordings (no table "
				 "tracer_recordings): tracer push one first", c.where);
		ch_buf__free(&b);
		if (err[0])
			goto out;
	}
	snprintf(cond, sizeof(cond), "1");
	if (since)
		snprintf(cond + strlen(cond), sizeof(cond) - strlen(cond),
			 " AND start_ns >= (toInt64(now()) - %lld) * 1000000000", since);
	if (where)
		snprintf(cond + strlen(cond), sizeof(cond) - strlen(cond), " AND (%s)", where);

	snprintf(sql, sizeof(sql),
		 "SELECT host, recording_id, start_ns, duration_ns, spans, verdict, bottleneck, "
		 "stages.name, stages.running, stages.runnable, stages.queue, stages.blocked, "
		 "stages.idle FROM tracer_recordings FINAL WHERE %s ORDER BY host, start_ns", cond);
	recs = select_rows(&c, sql, &docs[0], err, sizeof(err));
	if (!recs)
		goto out;
	snprintf(sql, sizeof(sql),
		 "SELECT name, host, count() AS count, sum(dur_ns) AS total_ns, "
		 "quantile(0.5)(dur_ns) AS p50, quantile(0.99)(dur_ns) AS p99 "
		 "FROM tracer_spans FINAL WHERE %s AND name GLOBAL IN (SELECT name "
		 "FROM tracer_spans FINAL WHERE %s GROUP BY name ORDER BY sum(dur_ns) DESC "
		 "LIMIT %d) "
		 "GROUP BY name, host ORDER BY name, host",
		 cond, cond, TOP_NAMES);
	spans = select_rows(&c, sql, &docs[1], err, sizeof(err));
	if (!spans)
		goto out;
	mark_outliers(spans);
	/* the most common bottleneck first: the hosts of the other groups differ from the rest */
	snprintf(sql, sizeof(sql),
		 "SELECT bottleneck, groupUniqArray(host) AS hosts, count() AS recordings "
		 "FROM tracer_recordings FINAL WHERE %s GROUP BY bottleneck "
		 "ORDER BY recordings DESC, bottleneck",
		 cond);
	groups = select_rows(&c, sql, &docs[2], err, sizeof(err));
	if (!groups)
		goto out;
	ret = 0;
	if (json) {
		cJSON *o = cJSON_CreateObject();
		char *s;

		cJSON_AddItemReferenceToObject(o, "recordings", recs);
		cJSON_AddItemReferenceToObject(o, "spans", spans);
		cJSON_AddItemReferenceToObject(o, "bottlenecks", groups);
		s = cJSON_PrintUnformatted(o);
		puts(s ? s : "{}");
		free(s);
		cJSON_Delete(o);
	} else {
		const cJSON *g;
		int i = 0;

		print_recordings(recs);
		print_spans(spans);
		printf("\n");
		cJSON_ArrayForEach(g, groups)
			print_hosts(i++ ? "differs: bottleneck" : "bottleneck of most hosts:", g);
	}
out:
	if (ret)
		pr_err("%s", err);
	for (int i = 0; i < 3; i++)
		cJSON_Delete(docs[i]);
	ch__close(&c);
	return ret;
}
