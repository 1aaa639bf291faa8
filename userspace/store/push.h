/* SPDX-License-Identifier: MIT */
/* One recording file into ClickHouse: the tables if missing, the rows in numbered batches,
 * the recording's row last. For `tracer push` and `tracer record --to`. */
#ifndef TRACER_PUSH_H
#define TRACER_PUSH_H

#include <stddef.h>

struct push_opts {
	const char *url;
	const char *path;    /* NULL: only the tables */
	const char *host;    /* NULL: this machine's name */
	const char *cluster; /* NULL: plain tables */
	size_t batch_rows;
	const char *hint; /* added to the line that says what failed; NULL: nothing */
};

/* 0, or non-zero after one line on stderr saying what failed. */
int push__file(const struct push_opts *o);
/* Whether url is one ch__open can parse: 0, or -EINVAL with one line in err. No network. */
int push__check_url(const char *url, char *err, size_t errlen);

#endif
