/* SPDX-License-Identifier: MIT */
/* A ClickHouse server over its HTTP interface (libcurl): the URL a user gives, queries, and the
 * tables tracer writes (doc/clickhouse.md). Only what ClickHouse 18.16 already has: MergeTree
 * engines, Distributed, INSERT ... FORMAT JSONEachRow, SELECT ... FORMAT JSON. */
#ifndef TRACER_CLICKHOUSE_H
#define TRACER_CLICKHOUSE_H

#include <stdbool.h>
#include <stddef.h>

struct ch_conn {
	char *base;	/* "http://HOST:PORT/" or https */
	char *where;	/* "HOST:PORT/DB", for messages: never the user or password */
	char *db;
	char *user;	/* NULL: the server's default user */
	char *password; /* from the URL or TRACER_CLICKHOUSE_PASSWORD; never printed */
	void *curl;
	bool curl_inited; /* curl_global_init done: undone by ch__close */
	long timeout_s;
};

/* What a query answered. */
struct ch_buf {
	char *p;
	size_t len, cap;
};

/* Parses clickhouse://[USER[:PASSWORD]@]HOST[:PORT]/DB (HTTP, port 8123) or http(s)://... (8123,
 * 8443 for https) and checks that the server answers and DB exists. 0, or -errno with one line
 * in err. */
int ch__open(struct ch_conn *c, const char *url, char *err, size_t errlen);
/* ch__open in two steps: the URL (no network; ch__close it after), then the server (with the
 * c->timeout_s the caller may have set in between). */
int ch__parse(struct ch_conn *c, const char *url, char *err, size_t errlen);
int ch__connect(struct ch_conn *c, char *err, size_t errlen);
/* Runs sql; body (may be NULL) follows it, as INSERT data does. The answer goes to out (NULL:
 * dropped). 0, or -errno with one line in err ("HOST:PORT/DB: Code: 60, ... doesn't exist"). */
int ch__query(struct ch_conn *c, const char *sql, const char *body, size_t len,
	      struct ch_buf *out, char *err, size_t errlen);
/* Creates the tables if missing; with cluster, each on every server of that cluster ("ON
 * CLUSTER") as *_local, with a Distributed table of the plain name over them. */
int ch__schema(struct ch_conn *c, const char *cluster, char *err, size_t errlen);
void ch__close(struct ch_conn *c);
/* Overwrites the password of a URL's USER:PASSWORD@ with '*' in place, so that a command line
 * kept in a trace's metadata (or shown by ps) does not hold it. */
void ch__hide_password(char *url);

void ch_buf__free(struct ch_buf *b);

#endif
