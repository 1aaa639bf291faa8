// SPDX-License-Identifier: MIT
/* tracer push: a recording already written (a cut one too) into ClickHouse, in numbered
 * batches; the recording's row goes last, so a recording listed there has all its rows. */
#include "cmd/commands.h"
#include "store/clickhouse.h"
#include "store/spans_rows.h"
#include "util/util.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char push_usage[] =
	"Usage: tracer push TRACE.json[.gz] --to URL [--host NAME] [--cluster NAME] [--batch N]\n"
	"       tracer push --to URL --cluster NAME      (only the tables, on that server)\n"
	"\n"
	"Loads a recording (a cut one too) into ClickHouse: its spans, its threads' scheduler\n"
	"states and one row for the recording with its verdict and stages (doc/clickhouse.md).\n"
	"The tables are created if missing. Rows go in batches that carry the recording's id and a\n"
	"number: pushing a file again, or a batch again, does not count it twice.\n"
	"\n"
	"  --to URL         clickhouse://[USER@]HOST[:PORT]/DB (HTTP, port 8123), or\n"
	"                   http://... / https://... (8443); the password from\n"
	"                   TRACER_CLICKHOUSE_PASSWORD, or USER:PASSWORD@ in the URL\n"
	"  --host NAME      the host the recording was made on (default: this one's name)\n"
	"  --cluster NAME   tables over a ClickHouse cluster: NAME_local tables on each server,\n"
	"                   Distributed ones over them\n"
	"  --batch N        rows per batch (default 10000)\n"
	"  -h, --help       this text\n"
	"\n"
	"Example:\n"
	"  TRACER_CLICKHOUSE_PASSWORD=... tracer push run.json --to clickhouse://ci@db1/tracing\n";

static int send_batch(void *arg, const char *table, uint32_t seq, const char *rows, size_t len,
		      uint32_t nrows)
{
	struct ch_conn *c = arg;
	char sql[128], err[1024];
	int ret;

	snprintf(sql, sizeof(sql), "INSERT INTO %s FORMAT JSONEachRow", table);
	ret = ch__query(c, sql, rows, len, NULL, err, sizeof(err));
	if (ret)
		pr_err("batch %" PRIu32 " of %s: %s", seq, table, err);
	return ret ? 1 : 0; /* said; positive: not the reader's -errno */
}

static bool identifier(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!(*s == '_' || (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= 'A' && *s <= 'Z')))
			return false;
	return true;
}

int cmd_push(int argc, char **argv)
{
	enum { OPT_TO = 256, OPT_HOST, OPT_CLUSTER, OPT_BATCH };
	static const struct option longopts[] = {
		{ "to", required_argument, NULL, OPT_TO },
		{ "host", required_argument, NULL, OPT_HOST },
		{ "cluster", required_argument, NULL, OPT_CLUSTER },
		{ "batch", required_argument, NULL, OPT_BATCH },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *to = NULL, *cluster = NULL, *path;
	char host[256] = "", id[17], err[1024], *row = NULL, *end;
	struct rows_totals t;
	struct ch_conn c;
	long batch = 10000;
	int ch, ret;

	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (ch) {
		case OPT_TO:
			to = optarg;
			break;
		case OPT_HOST:
			if (!*optarg || strlen(optarg) >= sizeof(host))
				return usage_error("push", "--host needs a name");
			snprintf(host, sizeof(host), "%s", optarg);
			break;
		case OPT_CLUSTER:
			if (!identifier(optarg))
				return usage_error("push", "--cluster: a name of letters, digits, '_'");
			cluster = optarg;
			break;
		case OPT_BATCH:
			errno = 0;
			batch = strtol(optarg, &end, 10);
			if (errno || *end || batch < 1 || batch > 10000000)
				return usage_error("push", "--batch: a number of rows, 1 to 10000000");
			break;
		case 'h':
			fputs(push_usage, stdout);
			return 0;
		case ':':
			return usage_error("push", "option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_error("push", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (!to)
		return usage_error("push", "say where: --to clickhouse://HOST/DB");
	if (optind + 1 < argc)
		return usage_error("push", "unexpected argument '%s'", argv[optind + 1]);
	if (optind == argc && !cluster)
		return usage_error("push", "no trace given: tracer push TRACE.json --to URL");
	path = optind < argc ? argv[optind] : NULL;
	if (!host[0] && gethostname(host, sizeof(host) - 1))
		snprintf(host, sizeof(host), "unknown");
	if (path && (ret = spans_rows__id(path, host, id, err, sizeof(err)))) {
		pr_err("%s", err);
		return 1;
	}
	if (ch__open(&c, to, err, sizeof(err)) || ch__schema(&c, cluster, err, sizeof(err))) {
		pr_err("%s", err);
		ch__close(&c);
		return 1;
	}
	ret = 0;
	if (path) {
		ret = spans_rows__walk(path, id, host, batch, send_batch, &c, &t, err, sizeof(err));
		if (!ret && (ret = spans_rows__recording(path, id, host, &t, &row, err,
							 sizeof(err))) == 0)
			ret = send_batch(&c, "tracer_recordings", 0, row, strlen(row), 1);
		if (ret < 0)
			pr_err("%s", err);
		if (!ret)
			pr_info("pushed recording %s of %s: %" PRIu64 " span%s, %" PRIu64
				" state%s in %" PRIu64 " batch%s to %s%s",
				id, host, t.spans, plural_s(t.spans), t.states, plural_s(t.states),
				t.batches, t.batches == 1 ? "" : "es", c.where,
				t.truncated ? " (the file was cut short)" : "");
	}
	free(row);
	ch__close(&c);
	return ret ? 1 : 0;
}
