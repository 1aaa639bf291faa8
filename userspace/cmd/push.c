// SPDX-License-Identifier: MIT
/* tracer push: a recording already written (a cut one too) into ClickHouse, in numbered
 * batches; the recording's row goes last, so a recording listed there has all its rows. */
#include "cmd/commands.h"
#include "store/push.h"
#include "util/util.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char push_usage[] =
	"Usage: tracer push TRACE.json[.gz] --to URL [--host NAME] [--cluster NAME] [--batch N]\n"
	"       tracer push --to URL --cluster NAME      (only the tables, on that server)\n"
	"\n"
	"Loads a recording (a cut one too) into ClickHouse: its spans, its threads' scheduler\n"
	"states, its queue depths and one row for the recording with its verdict and stages\n"
	"(doc/clickhouse.md).\n"
	"The tables are created if missing. Rows go in batches that carry the recording's id and\n"
	"a number: pushing a file again, or a batch again, does not count it twice.\n"
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
	struct push_opts o = { .batch_rows = 10000 };
	char err[512], *end;
	long batch;
	int ch;

	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (ch) {
		case OPT_TO:
			if (push__check_url(optarg, err, sizeof(err)))
				return usage_error("push", "--to: %s", err);
			o.url = optarg;
			break;
		case OPT_HOST:
			if (!*optarg || strlen(optarg) > 255)
				return usage_error("push",
						   "--host needs a name (255 bytes at most)");
			o.host = optarg;
			break;
		case OPT_CLUSTER:
			if (!identifier(optarg))
				return usage_error("push",
						   "--cluster: a name of letters, digits, '_'");
			o.cluster = optarg;
			break;
		case OPT_BATCH:
			errno = 0;
			batch = strtol(optarg, &end, 10);
			if (errno || *end || batch < 1 || batch > 10000000)
				return usage_error("push",
						   "--batch: a number of rows, 1 to 10000000");
			o.batch_rows = batch;
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
	if (!o.url)
		return usage_error("push", "say where: --to clickhouse://HOST/DB");
	if (optind + 1 < argc)
		return usage_error("push", "unexpected argument '%s'", argv[optind + 1]);
	if (optind == argc && !o.cluster)
		return usage_error("push", "no trace given: tracer push TRACE.json --to URL");
	o.path = optind < argc ? argv[optind] : NULL;
	return push__file(&o);
}
