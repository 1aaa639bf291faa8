// SPDX-License-Identifier: MIT
/* ClickHouse over HTTP with libcurl: the URL, one query at a time, the schema. The password
 * goes to the server by HTTP basic authentication and is never part of a message or a URL
 * that could be printed; errors name HOST:PORT/DB only. */
#include "store/clickhouse.h"
#include "util/util.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ch_buf__free(struct ch_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct ch_buf *b = arg;
	size_t len = size * n;

	if (b->len + len + 1 > b->cap) {
		b->cap = 2 * (b->len + len + 1);
		b->p = xrealloc(b->p, b->cap, 1);
	}
	memcpy(b->p + b->len, p, len);
	b->len += len;
	b->p[b->len] = 0;
	return len;
}

/* s[0..n) percent-decoded into a new string (a password may hold '@' or ':'). */
static char *pct_decode(const char *s, size_t n)
{
	char *out = xcalloc(1, n + 1), *o = out;

	for (size_t i = 0; i < n; i++) {
		unsigned v;

		if (s[i] == '%' && i + 2 < n && sscanf(s + i + 1, "%2x", &v) == 1) {
			*o++ = (char)v;
			i += 2;
		} else {
			*o++ = s[i];
		}
	}
	return out;
}

static int parse_url(struct ch_conn *c, const char *url, char *err, size_t errlen)
{
	const char *scheme = "http", *rest, *at, *slash, *hp_end, *port = NULL;
	int defport = 8123;
	char host[256];
	size_t hlen;

	if (!strncmp(url, "clickhouse://", 13)) {
		rest = url + 13;
	} else if (!strncmp(url, "http://", 7)) {
		rest = url + 7;
	} else if (!strncmp(url, "https://", 8)) {
		rest = url + 8;
		scheme = "https";
		defport = 8443;
	} else {
		snprintf(err, errlen, "not a ClickHouse URL (clickhouse://[USER@]HOST[:PORT]/DB, "
			 "http:// or https://)");
		return -EINVAL;
	}
	slash = strchr(rest, '/');
	at = memchr(rest, '@', slash ? (size_t)(slash - rest) : strlen(rest));
	if (at) {
		const char *colon = memchr(rest, ':', at - rest);

		c->user = pct_decode(rest, (colon ? colon : at) - rest);
		if (colon)
			c->password = pct_decode(colon + 1, at - colon - 1);
		rest = at + 1;
	}
	if (!slash || !slash[1] || strchr(slash + 1, '/') || strchr(slash + 1, '?')) {
		snprintf(err, errlen,
			 "the URL names no database: clickhouse://[USER@]HOST[:PORT]/DB");
		return -EINVAL;
	}
	hp_end = slash;
	if (rest[0] == '[') { /* [IPv6] */
		const char *close = memchr(rest, ']', hp_end - rest);

		if (!close) {
			snprintf(err, errlen, "the URL's host has no closing ']'");
			return -EINVAL;
		}
		hlen = close + 1 - rest;
		if (close[1] == ':')
			port = close + 2;
	} else {
		const char *colon = memchr(rest, ':', hp_end - rest);

		hlen = (colon ? colon : hp_end) - rest;
		if (colon)
			port = colon + 1;
	}
	if (!hlen || hlen >= sizeof(host)) {
		snprintf(err, errlen, "the URL names no host");
		return -EINVAL;
	}
	memcpy(host, rest, hlen);
	host[hlen] = 0;
	if (port) {
		char *end;
		long p = strtol(port, &end, 10);

		if (end != hp_end || p <= 0 || p > 65535) {
			snprintf(err, errlen, "the URL's port is not a number from 1 to 65535");
			return -EINVAL;
		}
		defport = (int)p;
	}
	for (const char *d = slash + 1; *d; d++)
		if (!(*d == '_' || (*d >= '0' && *d <= '9') || (*d >= 'a' && *d <= 'z') ||
		      (*d >= 'A' && *d <= 'Z'))) {
			snprintf(err, errlen, "the database name may hold letters, digits and '_'");
			return -EINVAL;
		}
	c->db = xstrdup(slash + 1);
	if (asprintf(&c->base, "%s://%s:%d/", scheme, host, defport) < 0 ||
	    asprintf(&c->where, "%s:%d/%s", host, defport, c->db) < 0)
		return -ENOMEM;
	return 0;
}

int ch__parse(struct ch_conn *c, const char *url, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->timeout_s = 60;
	return parse_url(c, url, err, errlen);
}

int ch__open(struct ch_conn *c, const char *url, char *err, size_t errlen)
{
	int ret = ch__parse(c, url, err, errlen);

	return ret ? ret : ch__connect(c, err, errlen);
}

int ch__connect(struct ch_conn *c, char *err, size_t errlen)
{
	const char *env = getenv("TRACER_CLICKHOUSE_PASSWORD");
	struct ch_buf out = { 0 };
	int ret;

	if (!c->password && env)
		c->password = xstrdup(env);
	/* counted by libcurl (7.84+), and safe beside the streaming thread's */
	c->curl_inited = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
	c->curl = curl_easy_init();
	if (!c->curl) {
		snprintf(err, errlen, "cannot start libcurl");
		return -ENOMEM;
	}
	/* answers whether the server is there, lets us in, and has the database */
	ret = ch__query(c, "SELECT version()", NULL, 0, &out, err, errlen);
	ch_buf__free(&out);
	return ret;
}

/* The server's own message, first line, without its stack trace. */
static void server_error(struct ch_conn *c, long status, const struct ch_buf *b, char *err,
			 size_t errlen)
{
	char line[512], safe[3 * sizeof(line)];
	size_t n = 0;

	if (b->p)
		while (n < b->len && n < sizeof(line) - 1 && b->p[n] != '\n')
			n++;
	memcpy(line, b->p ? b->p : "", n);
	line[n] = 0;
	/* "Code: 81, e.displayText() = DB::Exception: ..., e.what() = DB::Exception" */
	char *tail = strstr(line, ", e.what()");
	if (tail)
		*tail = 0;
	if (status == 401 || status == 403 || strstr(line, "Code: 192") ||
	    strstr(line, "Code: 193") || strstr(line, "Code: 516"))
		snprintf(err, errlen, "%s: login refused (user or password): %s", c->where,
			 printable(line, safe, sizeof(safe)));
	else
		snprintf(err, errlen, "%s: HTTP %ld: %s", c->where, status,
			 n ? printable(line, safe, sizeof(safe)) : "no message");
}

int ch__query(struct ch_conn *c, const char *sql, const char *body, size_t len,
	      struct ch_buf *out, char *err, size_t errlen)
{
	struct ch_buf mine = { 0 }, *b = out ? out : &mine;
	char *q = curl_easy_escape(c->curl, sql, 0), *db = curl_easy_escape(c->curl, c->db, 0);
	char *url = NULL;
	long status = 0;
	CURLcode rc;
	int ret = 0;

	b->len = 0;
	/* insert_distributed_sync: an INSERT into a Distributed table answers once every shard
	 * has its rows, so a batch that succeeded is on its shard, not in a local queue */
	if (!q || !db ||
	    asprintf(&url, "%s?database=%s&insert_distributed_sync=1&query=%s", c->base, db, q) <
		    0) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	curl_easy_reset(c->curl);
	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body ? body : "");
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? len : 0));
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT, c->timeout_s);
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	if (c->user || c->password) {
		curl_easy_setopt(c->curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(c->curl, CURLOPT_USERNAME, c->user ? c->user : "default");
		curl_easy_setopt(c->curl, CURLOPT_PASSWORD, c->password ? c->password : "");
	}
	rc = curl_easy_perform(c->curl);
	if (rc == CURLE_COULDNT_RESOLVE_HOST) {
		snprintf(err, errlen, "%s: unknown host", c->where);
		ret = -EHOSTUNREACH;
	} else if (rc == CURLE_COULDNT_CONNECT) {
		snprintf(err, errlen, "%s: cannot connect (is ClickHouse listening there?)",
			 c->where);
		ret = -ECONNREFUSED;
	} else if (rc == CURLE_OPERATION_TIMEDOUT) {
		snprintf(err, errlen, "%s: no answer within %ld s", c->where, c->timeout_s);
		ret = -ETIMEDOUT;
	} else if (rc != CURLE_OK) {
		snprintf(err, errlen, "%s: %s", c->where, curl_easy_strerror(rc));
		ret = -EIO;
	} else {
		curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
		if (status != 200) {
			server_error(c, status, b, err, errlen);
			ret = -EPROTO;
		}
	}
out:
	free(url);
	curl_free(q);
	curl_free(db);
	ch_buf__free(&mine);
	return ret;
}

/* The tables (doc/clickhouse.md says why each is ordered as it is). ReplacingMergeTree on
 * (..., recording_id, seq, row): a batch sent twice holds the same keys, so reading with FINAL
 * counts it once. The sorting key starts with what queries filter and group by. A recording's
 * row is versioned by the rows it counts: pushing a cut copy after the whole file (or the
 * reverse) keeps the whole file's row. */
static const struct {
	const char *name, *columns, *order, *version;
} tables[] = {
	{ "tracer_recordings",
	  "recording_id String, host String, boot_id String, command_line String, "
	  "processes Array(String), start_ns Int64, duration_ns UInt64, packs Array(String), "
	  "spans UInt64, states UInt64, counters UInt64, lost UInt64, overhead String, verdict String, "
	  "bottleneck String, "
	  "stages Nested(name String, threads UInt32, running Float64, runnable Float64, "
	  "queue Float64, blocked Float64, idle Float64), rows UInt64",
	  "host, recording_id", "rows" },
	{ "tracer_spans",
	  "recording_id String, seq UInt32, row UInt32, host String, pid Int64, tid Int64, "
	  "thread String, process String, name String, category String, start_ns Int64, "
	  "dur_ns Int64, depth UInt32, args String, py_caller String",
	  "host, name, recording_id, seq, row", "" },
	{ "tracer_states",
	  "recording_id String, seq UInt32, row UInt32, host String, pid Int64, tid Int64, "
	  "thread String, state String, start_ns Int64, dur_ns Int64",
	  "host, recording_id, tid, seq, row", "" },
	{ "tracer_counters",
	  "recording_id String, seq UInt32, row UInt32, host String, pid Int64, name String, "
	  "key String, start_ns Int64, value Float64",
	  "host, recording_id, name, key, seq, row", "" },
};

/* Partitioned by the day the row starts (toDateTime first: 18.16's toDate of a plain number
 * of seconds is not a date). */
#define DAY "toDate(toDateTime(intDiv(start_ns, 1000000000)))"

/* A column added since the tables were first made, to a table made before it (18.16 has no
 * ADD COLUMN IF NOT EXISTS: system.columns says whether it is there). Its old rows read 0. */
static int add_column(struct ch_conn *c, const char *table, const char *column,
		      const char *type, const char *after, char *err, size_t errlen)
{
	char sql[512];
	struct ch_buf have = { 0 };
	int ret;

	snprintf(sql, sizeof(sql),
		 "SELECT count() FROM system.columns WHERE database = currentDatabase() AND "
		 "table = '%s' AND name = '%s'",
		 table, column);
	ret = ch__query(c, sql, NULL, 0, &have, err, errlen);
	if (!ret && have.len && have.p[0] == '0') {
		snprintf(sql, sizeof(sql), "ALTER TABLE %s ADD COLUMN %s %s AFTER %s", table,
			 column, type, after);
		ret = ch__query(c, sql, NULL, 0, NULL, err, errlen);
	}
	ch_buf__free(&have);
	return ret;
}

int ch__schema(struct ch_conn *c, const char *cluster, char *err, size_t errlen)
{
	char sql[2048];
	int ret = 0;

	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]) && !ret; i++) {
		snprintf(sql, sizeof(sql),
			 "CREATE TABLE IF NOT EXISTS %s%s (%s) ENGINE = ReplacingMergeTree(%s) "
			 "PARTITION BY %s ORDER BY (%s)",
			 tables[i].name, cluster ? "_local" : "", tables[i].columns,
			 tables[i].version, DAY, tables[i].order);
		ret = ch__query(c, sql, NULL, 0, NULL, err, errlen);
		if (ret || !cluster)
			continue;
		/* a recording's rows all on one shard: FINAL there sees every copy of a batch */
		snprintf(sql, sizeof(sql),
			 "CREATE TABLE IF NOT EXISTS %s AS %s_local ENGINE = Distributed(%s, %s, "
			 "%s_local, cityHash64(recording_id))",
			 tables[i].name, tables[i].name, cluster, c->db, tables[i].name);
		ret = ch__query(c, sql, NULL, 0, NULL, err, errlen);
	}
	/* tables from before the depth column: the local one first, then the Distributed one */
	if (!ret && cluster)
		ret = add_column(c, "tracer_spans_local", "depth", "UInt32", "dur_ns", err, errlen);
	if (!ret)
		ret = add_column(c, "tracer_spans", "depth", "UInt32", "dur_ns", err, errlen);
	return ret;
}

void ch__close(struct ch_conn *c)
{
	if (c->curl)
		curl_easy_cleanup(c->curl);
	if (c->curl_inited)
		curl_global_cleanup();
	if (c->password)
		explicit_bzero(c->password, strlen(c->password));
	free(c->base);
	free(c->where);
	free(c->db);
	free(c->user);
	free(c->password);
	memset(c, 0, sizeof(*c));
}

void ch__hide_password(char *url)
{
	char *rest = strstr(url, "://"), *slash, *at, *colon;

	if (!rest)
		return;
	rest += 3;
	slash = strchr(rest, '/');
	at = memchr(rest, '@', slash ? (size_t)(slash - rest) : strlen(rest));
	colon = at ? memchr(rest, ':', at - rest) : NULL;
	if (colon)
		memset(colon + 1, '*', at - colon - 1);
}
