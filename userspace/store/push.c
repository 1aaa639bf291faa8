// SPDX-License-Identifier: MIT
/* One recording file into ClickHouse (store/push.h). The recording's row goes last, so a
 * recording listed in tracer_recordings has all its rows. */
#include "store/push.h"
#include "store/clickhouse.h"
#include "store/spans_rows.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct pushing {
	struct ch_conn c;
	const char *hint;
};

/* A batch that met a timeout or a server gone away is sent again, PUSH_TRIES times in all,
 * 1, 2, 4, 8 s apart (a server restarting): the copy that may have arrived the first time has
 * the same keys, and counts once (doc/clickhouse.md). */
#define PUSH_TRIES 5

static bool transient(int err)
{
	return err == -ETIMEDOUT || err == -ECONNREFUSED || err == -EIO;
}

static int send_batch(void *arg, const char *table, uint32_t seq, const char *rows, size_t len,
		      uint32_t nrows)
{
	struct pushing *p = arg;
	char sql[128], err[1024];
	int ret;

	snprintf(sql, sizeof(sql), "INSERT INTO %s FORMAT JSONEachRow", table);
	for (int k = 0;; k++) {
		ret = ch__query(&p->c, sql, rows, len, NULL, err, sizeof(err));
		if (!ret || !transient(ret) || k + 1 == PUSH_TRIES)
			break;
		pr_warn("batch %" PRIu32 " of %s: %s; sending it again in %d s", seq, table, err,
			1 << k);
		sleep(1u << k);
	}
	if (ret)
		pr_err("batch %" PRIu32 " of %s: %s%s", seq, table, err, p->hint);
	return ret ? 1 : 0; /* said; positive: not the reader's -errno */
}

int push__check_url(const char *url, char *err, size_t errlen)
{
	struct ch_conn c;
	int ret = ch__parse(&c, url, err, errlen);

	ch__close(&c);
	return ret;
}

int push__file(const struct push_opts *o)
{
	char host[256], id[17], err[1024], *row = NULL;
	struct pushing p = { .hint = o->hint ? o->hint : "" };
	struct ch_conn *c = &p.c;
	struct rows_totals t;
	int ret;

	if (o->host)
		snprintf(host, sizeof(host), "%s", o->host);
	else if (o->path && !spans_rows__host(o->path, host, sizeof(host)))
		; /* where it was recorded, wherever it is pushed from */
	else if (gethostname(host, sizeof(host) - 1))
		snprintf(host, sizeof(host), "unknown");
	host[sizeof(host) - 1] = 0;
	if (o->path && spans_rows__id(o->path, host, id, err, sizeof(err))) {
		pr_err("%s%s", err, p.hint);
		return 1;
	}
	if (ch__open(c, o->url, err, sizeof(err)) || ch__schema(c, o->cluster, err, sizeof(err))) {
		pr_err("%s%s", err, p.hint);
		ch__close(c);
		return 1;
	}
	ret = 0;
	if (o->path) {
		ret = spans_rows__walk(o->path, id, host, o->batch_rows, send_batch, &p, &t, err,
				       sizeof(err));
		if (!ret && (ret = spans_rows__recording(o->path, id, host, &t, &row, err,
							 sizeof(err))) == 0)
			ret = send_batch(&p, "tracer_recordings", 0, row, strlen(row), 1);
		if (ret < 0)
			pr_err("%s%s", err, p.hint);
		if (!ret)
			pr_info("pushed recording %s of %s: %" PRIu64 " span%s, %" PRIu64
				" state%s, %" PRIu64 " counter value%s in %" PRIu64 " batch%s to %s%s",
				id, host, t.spans, plural_s(t.spans), t.states, plural_s(t.states),
				t.counters, plural_s(t.counters), t.batches, t.batches == 1 ? "" : "es", c->where,
				t.truncated ? " (the file was cut short)" : "");
	}
	free(row);
	ch__close(c);
	return ret ? 1 : 0;
}
